"""Speech emotion banks: ``emotion_banks/speech_<backend>.toml`` maps the 8 coarse classes to controls.

A bank gives each class its controls at intensity 1; ``neutral`` is the zero point. A request at
intensity ``i`` moves from neutral towards the class by ``i``: linearly for additive controls
(semitones, decibels, seconds), geometrically for multipliers (rate, pitch range), so half of "twice
as fast" is about 1.41 times, not 1.5.

Prosody controls (``[prosody.<class>]``)::

    rate                    speaking-rate multiplier (> 1 faster)
    pitch_shift_semitones   shift of the mean F0
    pitch_range             multiplier of F0 excursions around the sentence's median (< 1 flatter)
    energy_db               loudness change
    pause_s                 silence between sentences (absolute, not relative to neutral)

Style tables (``[styles.<class>]``, OpenVoice V1) name a speaker style, an optional stronger style
used from ``strong_at`` intensity on, and a speed.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from e3rg_core.emotions import COARSE
from e3rg_core.errors import ConfigError

BANKS_DIR = Path(__file__).resolve().parents[2] / "emotion_banks"


@dataclass(frozen=True)
class _Control:
    multiplicative: bool
    low: float
    high: float
    neutral: float


PROSODY_CONTROLS: dict[str, _Control] = {
    "rate": _Control(True, 0.5, 2.0, 1.0),
    "pitch_shift_semitones": _Control(False, -12.0, 12.0, 0.0),
    "pitch_range": _Control(True, 0.2, 3.0, 1.0),
    "energy_db": _Control(False, -12.0, 12.0, 0.0),
    "pause_s": _Control(False, 0.0, 2.0, 0.25),
}


@dataclass(frozen=True)
class Prosody:
    """Prosody targets for one request (emotion and avatar offsets combined)."""

    rate: float = 1.0
    pitch_shift_semitones: float = 0.0
    pitch_range: float = 1.0
    energy_db: float = 0.0
    pause_s: float = 0.25

    def with_voice(self, *, pitch_shift_semitones: float, rate: float, energy_db: float) -> "Prosody":
        """Add an avatar's own offsets (its voice settings) to the emotion's targets."""
        return Prosody(rate=self.rate * rate, pitch_shift_semitones=self.pitch_shift_semitones + pitch_shift_semitones,
                       pitch_range=self.pitch_range, energy_db=self.energy_db + energy_db, pause_s=self.pause_s / rate)


@dataclass(frozen=True)
class Style:
    """An OpenVoice V1 style choice for one coarse class."""

    style: str
    strong_style: str
    strong_at: float  # intensity from which strong_style is used
    speed: float


def bank_path(backend: str) -> Path:
    """The shipped bank of a speech backend."""
    return BANKS_DIR / f"speech_{backend}.toml"


def read_bank(path: Path) -> dict[str, Any]:
    """The TOML tables of a bank file, or a ``ConfigError`` naming the file."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"emotion bank {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"emotion bank {path} is not valid TOML: {exc}") from exc


def _classes(data: Mapping[str, Any], section: str, path: Path) -> Mapping[str, Any]:
    tables = data.get(section)
    if not isinstance(tables, Mapping):
        raise ConfigError(f"emotion bank {path} has no [{section}.<class>] tables")
    missing = [c for c in COARSE if c not in tables]
    extra = [c for c in tables if c not in COARSE]
    if missing or extra:
        raise ConfigError(f"emotion bank {path} [{section}]: missing classes {missing or 'none'}, unknown {extra or 'none'}; "
                          f"it needs exactly {', '.join(COARSE)}")
    return tables


class ProsodyBank:
    """The prosody tables of one bank, validated."""

    def __init__(self, tables: Mapping[str, Mapping[str, float]]):
        self.tables = {c: dict(t) for c, t in tables.items()}

    @classmethod
    def from_file(cls, path: Path, section: str = "prosody") -> "ProsodyBank":
        path = Path(path)
        tables = _classes(read_bank(path), section, path)
        checked: dict[str, dict[str, float]] = {}
        for cls_name, table in tables.items():
            if not isinstance(table, Mapping):
                raise ConfigError(f"emotion bank {path}: [{section}.{cls_name}] must be a table")
            unknown = set(table) - set(PROSODY_CONTROLS)
            if unknown:
                raise ConfigError(f"emotion bank {path}: [{section}.{cls_name}] has unknown controls {sorted(unknown)}; "
                                  f"allowed: {', '.join(PROSODY_CONTROLS)}")
            values = {}
            for key, value in table.items():
                spec = PROSODY_CONTROLS[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not spec.low <= value <= spec.high:
                    raise ConfigError(f"emotion bank {path}: {section}.{cls_name}.{key} = {value!r} must be a number "
                                      f"in {spec.low:g}..{spec.high:g}")
                values[key] = float(value)
            checked[cls_name] = values
        return cls(checked)

    def at(self, emotion: str, intensity: float) -> Prosody:
        """The controls for ``emotion`` (a coarse class) at ``intensity`` (0..1)."""
        if emotion not in self.tables:
            raise ConfigError(f"emotion bank has no class {emotion!r}; it has {', '.join(self.tables)}")
        neutral, target = self.tables["neutral"], self.tables[emotion]
        out = {}
        for key, spec in PROSODY_CONTROLS.items():
            base = neutral.get(key, spec.neutral)
            goal = target.get(key, base)
            if spec.multiplicative:
                out[key] = base * math.exp(intensity * math.log(goal / base))
            else:
                out[key] = base + intensity * (goal - base)
        return Prosody(**out)


def load_styles(path: Path, allowed_styles: tuple[str, ...], section: str = "styles") -> dict[str, Style]:
    """The ``[styles.<class>]`` tables of a bank, checked against a backend's style names."""
    path = Path(path)
    tables = _classes(read_bank(path), section, path)
    out = {}
    for cls_name, table in tables.items():
        where = f"emotion bank {path}: [{section}.{cls_name}]"
        unknown = set(table) - {"style", "strong_style", "strong_at", "speed"}
        if unknown:
            raise ConfigError(f"{where} has unknown keys {sorted(unknown)}; allowed: style, strong_style, strong_at, speed")
        style = table.get("style")
        strong = table.get("strong_style", style)
        for key, value in (("style", style), ("strong_style", strong)):
            if value not in allowed_styles:
                raise ConfigError(f"{where}: {key} = {value!r}; choose from {', '.join(allowed_styles)}")
        strong_at = table.get("strong_at", 1.01)
        speed = table.get("speed", 1.0)
        if not isinstance(strong_at, (int, float)) or not 0.0 <= strong_at <= 1.01:
            raise ConfigError(f"{where}: strong_at must be a number in 0..1")
        if not isinstance(speed, (int, float)) or not 0.5 <= speed <= 2.0:
            raise ConfigError(f"{where}: speed must be a number in 0.5..2")
        out[cls_name] = Style(style, strong, float(strong_at), float(speed))
    return out
