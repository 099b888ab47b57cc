"""Stage 3b's contract: a renderer turns the spoken reply and a portrait into a talking-head video."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from e3rg_core.emotions import COARSE
from e3rg_core.errors import InputError
from e3rg_core.types import Speech, Video


@runtime_checkable
class Renderer(Protocol):
    """A talking-head backend."""

    def render(self, speech: Speech, *, portrait: Path, emotion: str, intensity: float, out_path: Path,
               start_s: float = 0.0) -> Video:
        """Animate ``portrait`` speaking ``speech.wav_path`` with ``emotion`` (a coarse class) on the face.

        ``start_s`` > 0 when the clip is a piece of a longer reply (streaming): where it starts in it.
        """
        ...


def check_request(emotion: str, intensity: float) -> tuple[str, float]:
    """Validate the emotion (one of the 8 coarse classes) and clamp the intensity to 0..1."""
    if emotion not in COARSE:
        raise InputError(f"unknown face emotion {emotion!r}; choose from {', '.join(COARSE)}")
    try:
        value = float(intensity)
    except (TypeError, ValueError) as exc:
        raise InputError(f"intensity must be a number in 0..1, not {intensity!r}") from exc
    if value != value:  # NaN
        raise InputError("intensity must be a number in 0..1, not NaN")
    return emotion, min(1.0, max(0.0, value))
