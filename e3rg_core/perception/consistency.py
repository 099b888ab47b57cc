"""Does the avatar's own output carry the emotion it meant to show? Read its face and voice back.

After a turn is rendered, the same readers that read the user (``perception.face`` and
``perception.voice``) read the avatar:

* **face**: the expression model on frames of the generated video, against the same model on the
  avatar's still portrait. It agrees when the intended class is the video's top class, or when its
  probability rose over the portrait's by at least ``FACE_RISE`` (the shipped portraits already
  smile, so an absolute reading would say "happy" whatever the animator did). Measured on the
  shipped avatars (``bench/reports/face_expression.json``): the model recognises the animator's
  happy, surprised and angry, and not its sad, fear or disgust; the check says so turn by turn.
* **voice**: prosody of the generated audio against the same avatar saying the same text neutrally
  (synthesised once for the check), so the measure is the emotion's own effect, not the voice's.
  It agrees when the arousal moves the way the class should: up for angry, happy, surprised and
  fear; down for sad; not up for disgusted and contempt; little either way for neutral.

A part that cannot be read (no face found, no speech) is reported as unknown, not as a failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the direction each class should move the voice's arousal, against the same text said neutrally:
#: 1 up, -1 down, 0 little either way, "calm" not up (disgust and contempt are slower and lower in
#: the speech bank, so their arousal falls a little)
EXPECTED_AROUSAL = {"angry": 1, "happy": 1, "surprised": 1, "fear": 1, "sad": -1,
                    "neutral": 0, "disgusted": "calm", "contempt": "calm"}
#: the least arousal change (on the reader's -1..1 scale) that counts as a move
AROUSAL_MARGIN = 0.05
#: the least rise of the intended class's probability, video over still portrait, that counts
FACE_RISE = 0.05


@dataclass(frozen=True)
class Consistency:
    """How well the avatar's face and voice carried the intended emotion."""

    intended: str  # coarse class
    face_top: str | None = None  # the expression read on the avatar's video
    face_p: float | None = None  # the reading's probability of the intended class
    face_ok: bool | None = None  # None: no face read
    voice_arousal: float | None = None  # arousal change against the neutral rendition
    voice_ok: bool | None = None  # None: nothing to judge
    seconds: float = 0.0

    def summary(self) -> str:
        def mark(ok: bool | None) -> str:
            return "?" if ok is None else "✓" if ok else "✗"

        face = f"face {mark(self.face_ok)}" + (f" reads {self.face_top} (p({self.intended}) {self.face_p:.2f})"
                                             if self.face_top else " not read")
        voice = f"voice {mark(self.voice_ok)}" + (f" arousal {self.voice_arousal:+.2f} vs neutral"
                                                 if self.voice_arousal is not None else " not read")
        return f"meant {self.intended}: {face}; {voice}"

    def as_dict(self) -> dict[str, Any]:
        return {"intended": self.intended, "face_top": self.face_top, "face_p": self.face_p,
                "face_ok": self.face_ok, "voice_arousal": self.voice_arousal, "voice_ok": self.voice_ok,
                "seconds": round(self.seconds, 3)}


def voice_agrees(intended: str, arousal_change: float) -> bool:
    expected = EXPECTED_AROUSAL[intended]
    if expected == "calm":
        return arousal_change < AROUSAL_MARGIN
    if expected > 0:
        return arousal_change > AROUSAL_MARGIN
    if expected < 0:
        return arousal_change < -AROUSAL_MARGIN
    return abs(arousal_change) <= 0.25


def face_agrees(intended: str, distribution: dict[str, float], baseline: dict[str, float] | None = None) -> bool:
    """The intended class is on top, or rose over the still portrait's reading by ``FACE_RISE``."""
    if max(distribution, key=distribution.get) == intended:
        return True
    if baseline is None or intended == "neutral":
        return False
    return distribution.get(intended, 0.0) - baseline.get(intended, 0.0) >= FACE_RISE


def check_output(*, intended: str, video_path: Path | None, wav_path: Path | None, neutral_wav: Path | None,
                 face_reader: Any, voice_reader: Any, portrait: Any = None) -> Consistency:
    """Read the avatar's video and audio back.

    ``neutral_wav`` is the same text said neutrally; ``portrait`` the avatar's still image as RGB
    (the face's baseline).
    """
    start = time.perf_counter()
    face_top = face_p = face_ok = None
    if video_path is not None:
        reading = face_reader.read_video(Path(video_path))
        if reading.frames_with_face > 0:
            dist = dict(reading.distribution)
            baseline = None
            if portrait is not None:
                still = face_reader.read_frames([portrait])
                baseline = dict(still.distribution) if still.frames_with_face else None
            face_top, face_p = reading.top, float(dist.get(intended, 0.0))
            face_ok = face_agrees(intended, dist, baseline)
    arousal = voice_ok = None
    if wav_path is not None and neutral_wav is not None:
        neutral = voice_reader.read(Path(neutral_wav))
        if not neutral.note:
            moved = voice_reader.read(Path(wav_path), reference=neutral)
            if not moved.note:
                arousal = float(moved.arousal)
                voice_ok = voice_agrees(intended, arousal)
    return Consistency(intended=intended, face_top=face_top, face_p=face_p, face_ok=face_ok,
                       voice_arousal=arousal, voice_ok=voice_ok, seconds=time.perf_counter() - start)
