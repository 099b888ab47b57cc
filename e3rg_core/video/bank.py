"""The video emotion banks: TOML files under ``emotion_banks/`` mapping the 8 coarse classes to what
each renderer understands (rig units for ``mesh``, prior files for ``dicetalk``)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from e3rg_core.emotions import COARSE
from e3rg_core.errors import ConfigError
from e3rg_core.video.rig import EMOTION_UNITS, HEAD_AXES

BANK_DIR = Path(__file__).resolve().parents[2] / "emotion_banks"
MESH_BANK = BANK_DIR / "video_mesh.toml"
DICETALK_BANK = BANK_DIR / "video_dicetalk.toml"
MESH_KEYS = tuple(EMOTION_UNITS) + tuple(f"head_{axis}" for axis in HEAD_AXES[:3])
_LIMIT = 1.0  # no unit may exceed this at intensity 1 (eye_open -1 closes the eye)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict; ``ConfigError`` when missing or malformed."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"emotion bank {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"emotion bank {path} is not valid TOML: {exc}") from exc


def load_mesh_bank(path: Path = MESH_BANK) -> dict[str, dict[str, float]]:
    """class -> {unit: value at intensity 1}; every coarse class must have a table."""
    data = read_toml(path)
    missing = [c for c in COARSE if c not in data]
    unknown = [c for c in data if c not in COARSE]
    if missing or unknown:
        raise ConfigError(f"emotion bank {path}: tables must be exactly {', '.join(COARSE)}; "
                          f"missing {missing}, unknown {unknown}")
    bank: dict[str, dict[str, float]] = {}
    for label, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(f"emotion bank {path}: [{label}] must be a table")
        values = {}
        for key, value in table.items():
            if key not in MESH_KEYS:
                raise ConfigError(f"emotion bank {path}: [{label}] {key!r} is not a unit; allowed: {', '.join(MESH_KEYS)}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or abs(value) > _LIMIT:
                raise ConfigError(f"emotion bank {path}: [{label}] {key} = {value!r} must be a number in -1..1")
            values[key] = float(value)
        bank[label] = values
    return bank
