"""Does the avatar's own output carry the emotion it meant to show? Read its face and voice back.

After a turn is rendered, the same readers that read the user (``perception.face`` and
``perception.voice``) read the avatar:

* **face**: the expression model on frames of the generated video, against the same model on the
  avatar's own neutral face (its portrait animated neutral over a short neutral sentence in its own
  voice, rendered once per avatar). It agrees when the intended class is the video's top class, or
  when it is the class that rose most over that neutral reading, by at least ``FACE_RISE``; a
  neutral reply agrees when no class rose that much. Reading against the avatar's own neutral face
  discounts what its portrait shows whatever the animator does (a smiling photo keeps reading happy),
  as expression coders compare a face with its own neutral. Measured on the four shipped avatars
  (``bench/reports/face_expression.json``, "self_check", ``check_avatar``): the face agreed in 24 of
  28 replies, every class but disgust on every avatar (the model reads disgust as anger); the check
  says so turn by turn.
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
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from e3rg_core.memory import Profile
    from e3rg_core.stages import Stages

#: the direction each class should move the voice's arousal, against the same text said neutrally:
#: 1 up, -1 down, 0 little either way, "calm" not up (disgust and contempt are slower and lower in
#: the speech bank, so their arousal falls a little)
EXPECTED_AROUSAL = {"angry": 1, "happy": 1, "surprised": 1, "fear": 1, "sad": -1,
                    "neutral": 0, "disgusted": "calm", "contempt": "calm"}
#: the least arousal change (on the reader's -1..1 scale) that counts as a move
AROUSAL_MARGIN = 0.05
#: the least rise of a class's probability, video over the avatar's neutral face, that counts
FACE_RISE = 0.05


@dataclass(frozen=True)
class Consistency:
    """How well the avatar's face and voice carried the intended emotion."""

    intended: str  # coarse class
    face_top: str | None = None  # the expression read on the avatar's video
    face_p: float | None = None  # the reading's probability of the intended class
    face_rise: float | None = None  # face_p less the avatar's neutral face's; None without that baseline
    face_ok: bool | None = None  # None: no face read
    voice_arousal: float | None = None  # arousal change against the neutral rendition
    voice_ok: bool | None = None  # None: nothing to judge
    seconds: float = 0.0

    def summary(self) -> str:
        def mark(ok: bool | None) -> str:
            return "?" if ok is None else "✓" if ok else "✗"

        rise = f", {self.face_rise:+.2f} over neutral" if self.face_rise is not None else ""
        face = f"face {mark(self.face_ok)}" + (f" reads {self.face_top} (p({self.intended}) {self.face_p:.2f}{rise})"
                                             if self.face_top else " not read")
        voice = f"voice {mark(self.voice_ok)}" + (f" arousal {self.voice_arousal:+.2f} vs neutral"
                                                 if self.voice_arousal is not None else " not read")
        return f"meant {self.intended}: {face}; {voice}"

    def as_dict(self) -> dict[str, Any]:
        return {"intended": self.intended, "face_top": self.face_top, "face_p": self.face_p, "face_rise": self.face_rise,
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


def face_agrees(intended: str, distribution: Mapping[str, float],
                baseline: Mapping[str, float] | None = None) -> bool:
    """The intended class is on top, or is the class that rose most over ``baseline`` (by ``FACE_RISE``).

    ``baseline`` is the reading of the avatar's own neutral face; a neutral reply agrees when no class
    rose by ``FACE_RISE`` over it. Without a baseline only the top class counts.
    """
    if max(distribution, key=distribution.get) == intended:
        return True
    if baseline is None:
        return False
    rise = {c: distribution.get(c, 0.0) - baseline.get(c, 0.0) for c in distribution if c != "neutral"}
    if intended == "neutral":
        return max(rise.values(), default=0.0) < FACE_RISE
    return max(rise, key=rise.get) == intended and rise[intended] >= FACE_RISE


def check_output(*, intended: str, video_path: Path | None, wav_path: Path | None, neutral_wav: Path | None,
                 face_reader: Any, voice_reader: Any,
                 neutral_face: Mapping[str, float] | None = None) -> Consistency:
    """Read the avatar's video and audio back.

    ``neutral_wav`` is the same text said neutrally; ``neutral_face`` the reading (a distribution) of
    the avatar's own neutral face, the face's baseline (None: only the top class counts).
    """
    start = time.perf_counter()
    face_top = face_p = face_rise = face_ok = None
    if video_path is not None:
        reading = face_reader.read_video(Path(video_path))
        if reading.frames_with_face > 0:
            dist = dict(reading.distribution)
            face_top, face_p = reading.top, float(dist.get(intended, 0.0))
            if neutral_face:
                face_rise = face_p - float(neutral_face.get(intended, 0.0))
            face_ok = face_agrees(intended, dist, neutral_face or None)
    arousal = voice_ok = None
    if wav_path is not None and neutral_wav is not None:
        neutral = voice_reader.read(Path(neutral_wav))
        if not neutral.note:
            moved = voice_reader.read(Path(wav_path), reference=neutral)
            if not moved.note:
                arousal = float(moved.arousal)
                voice_ok = voice_agrees(intended, arousal)
    return Consistency(intended=intended, face_top=face_top, face_p=face_p, face_rise=face_rise, face_ok=face_ok,
                       voice_arousal=arousal, voice_ok=voice_ok, seconds=time.perf_counter() - start)


def check_avatar(pipeline: Stages, profile: Profile, *, text: str, emotions: Sequence[str], workdir: Path,
                 intensity: float = 1.0) -> dict[str, Consistency]:
    """Which emotions an avatar's face and voice carry: ``text`` spoken and rendered in each of ``emotions``
    through ``pipeline`` and checked as a turn is (``Stages.check``)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    checks = {}
    for emotion in emotions:
        speech = pipeline.speak(text, emotion=emotion, intensity=intensity, avatar=profile,
                                out_path=workdir / f"{emotion}.wav")
        video = pipeline.render(speech, profile, workdir / f"{emotion}.mp4")
        checks[emotion] = pipeline.check(speech, video, profile, workdir)
    return checks
