"""The user's recorded turn read whole: words (speech recognition), voice (prosody), face (expression).

``Perceiver.perceive`` runs the three readers on a microphone clip or a webcam video and returns a
``Perception``. Stage 1 uses it two ways, as E3RG reads the whole multimodal turn:

* a compact description of the cues for text LLMs, put into the prompt
  ("face: sad 0.72; voice: low pitch, slow, quiet");
* the face and the voice as two more voters in the emotion vote (``coarse_vote``), with the weights
  ``perception.face_weight`` and ``perception.voice_weight`` (0 = a prompt cue only).

A reader that finds nothing (no face in view, silence) is simply not used, with a note saying so;
only unreadable media are errors.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from e3rg_core.emotions import CANDIDATES, COARSE, coarse_of
from e3rg_core.types import EmotionVote

if TYPE_CHECKING:
    from e3rg_core.perception.asr import Transcript

logger = logging.getLogger(__name__)

#: share of a face or voice vote that is no evidence at all (a likelihood of 1 for every label), so one
#: reader can tilt the vote but never veto a label outright
FLOOR = 0.1


@dataclass(frozen=True)
class Perception:
    """What the readers found in one recorded turn."""

    transcript: Any = None  # asr.Transcript
    voice: Any = None  # voice.VoiceReading, or None when not read
    face: Any = None  # face.FaceReading, or None when not read (no video, or switched off)
    cues: str = ""  # for the prompt: "face: sad 0.72; voice: low pitch, slow"
    audio_path: Path | None = None  # the recording's sound as 16 kHz mono WAV (what an omni model hears)
    notes: tuple[str, ...] = ()  # what was not used and why, for the UI
    timings_s: Mapping[str, float] = field(default_factory=dict)

    def face_used(self) -> bool:
        return self.face is not None and getattr(self.face, "frames_with_face", 0) > 0

    def voice_used(self) -> bool:
        return self.voice is not None and bool(getattr(self.voice, "distribution", None))


def coarse_vote(voter: str, distribution: Mapping[str, float], *, raw: str, seconds: float,
                prior: Mapping[str, float] | None = None, floor: float = FLOOR,
                map_name: str = "hit") -> EmotionVote:
    """A reader's distribution over the coarse classes as a vote over the 36 labels.

    The soft vote multiplies the voters' scores (a product of experts), and a text voter's scores are
    already a posterior with its own prior; so a reader adds its evidence, its likelihood, not a second
    prior. Its probability for each class is divided by ``prior``, the class frequencies its model
    learnt from (uniform over ``COARSE`` when ``None``: a reader built by hand, with no training
    prior), as hybrid speech recognisers turn a network's posteriors into scaled likelihoods. Every
    label of a class gets its class's likelihood: a reading of "sad" backs "lonely" and "devastated" as
    much as "sad" itself (an even split among the labels would make the one "neutral" label outweigh
    the nine sad ones). A class the reader cannot tell (missing from ``prior``: contempt for the face
    model) gets likelihood 1, the prior-weighted mean, i.e. no evidence either way. ``floor`` of the
    likelihood is 1 for every label (the share of readings that carry no evidence: a model's error
    rate); the scores are normalised to sum to 1. The vote's label is the reading's top class (its
    own label, or the first label of that class).
    """
    if not 0.0 < floor <= 1.0:
        raise ValueError(f"{voter}: floor must lie in (0, 1], got {floor}")
    if prior is None:
        prior = {c: 1.0 / len(COARSE) for c in COARSE}
    read = {c: max(0.0, float(distribution.get(c, 0.0))) for c in COARSE if c in prior}
    total = sum(read.values())
    if total <= 0:
        raise ValueError(f"{voter}: an empty distribution cannot vote")
    likelihood = {c: read[c] / total / float(prior[c]) if c in read else 1.0 for c in COARSE}
    coarse = {label: coarse_of(label, map_name=map_name) for label in CANDIDATES}
    scores = {label: floor + (1 - floor) * likelihood[coarse[label]] for label in CANDIDATES}
    z = sum(scores.values())
    scores = {label: v / z for label, v in scores.items()}
    top = max(read, key=read.get)
    label = top if top in CANDIDATES else next(lb for lb in CANDIDATES if coarse[lb] == top)
    return EmotionVote(voter, label, raw, True, seconds, scores)


def describe(face: Any, voice: Any) -> str:
    """The cues in a few words for a text LLM; empty when nothing was read."""
    parts = []
    if face is not None and getattr(face, "frames_with_face", 0) > 0:
        ranked = sorted(face.distribution.items(), key=lambda kv: -kv[1])[:2]
        parts.append("face: " + ", ".join(f"{c} {p:.2f}" for c, p in ranked if p >= 0.1))
    if voice is not None and getattr(voice, "cues", ""):
        cue = voice.cues
        parts.append(cue if cue.startswith("voice") else f"voice: {cue}")
    return "; ".join(parts)


class Perceiver:
    """Speech recognition, voice prosody and facial expression; each model loads on first use."""

    def __init__(self, config: Any, *, transcriber: Any = None, voice_reader: Any = None,
                 face_reader: Any = None) -> None:
        self.config = config
        self._transcriber = transcriber
        self._voice = voice_reader
        self._face = face_reader
        self._lock = threading.Lock()

    def transcriber(self) -> Any:
        with self._lock:
            if self._transcriber is None:
                from e3rg_core import registry

                p = self.config.perception
                self._transcriber = registry.create("asr", "whisper", {
                    "cache_dir": self.config.cache_dir, "language": p.language or None})
            return self._transcriber

    def voice_reader(self) -> Any:
        with self._lock:
            if self._voice is None:
                from e3rg_core.perception.voice import VoiceReader

                self._voice = VoiceReader()
            return self._voice

    def face_reader(self) -> Any:
        with self._lock:
            if self._face is None:
                from e3rg_core.perception.face import FaceExpressionReader

                self._face = FaceExpressionReader(max_frames=self.config.perception.face_frames)
            return self._face

    def perceive(self, *, audio_path: Path | None, video_path: Path | None, workdir: Path,
                 max_seconds: float, transcript: Transcript | None = None) -> Perception:
        """Read a microphone clip and/or a webcam video. Unreadable media raise ``InputError``.

        ``transcript``: the clip's words when they were recognised already (while the person spoke,
        ``e3rg_core.live``); Whisper is then not run again, and the voice is read as usual.
        """
        from e3rg_core.perception.asr import extract_audio

        from concurrent.futures import ThreadPoolExecutor

        p = self.config.perception
        recording = video_path or audio_path
        timings: dict[str, float] = {}
        notes: list[str] = []
        reader = self.face_reader() if p.face and video_path is not None else None
        transcriber = self.transcriber() if transcript is None else None
        heard = transcript

        encoded = threading.Event()  # Whisper's encoder has run, or the sound could not be read
        refused = threading.Event()

        def read_face() -> Any:
            encoded.wait()
            if refused.is_set():
                return None
            start = time.perf_counter()
            reading = reader.read_video(Path(video_path))
            timings["face"] = time.perf_counter() - start
            return reading

        # Whisper's encoder keeps both cores busy for about half a second, then it decodes on one; the
        # face (video decoding, two small models, one thread) is read on the other from then on. Read
        # from the start, it slowed the encoder down (paired runs: 1.09 s a turn against 1.04 s; 0.98 s
        # with no face). The sound is decoded once: Whisper and the voice reader read that WAV.
        voice = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            face_job = pool.submit(read_face) if reader is not None else None
            try:
                start = time.perf_counter()
                wav = extract_audio(Path(recording), Path(workdir) / "user_16k.wav", max_seconds=max_seconds)
                timings["audio"] = time.perf_counter() - start
                start = time.perf_counter()
                transcript = heard if transcriber is None else transcriber.transcribe(wav, encoded=encoded)
                timings["asr"] = time.perf_counter() - start
            except BaseException:
                refused.set()
                raise
            finally:
                encoded.set()
            if p.voice and transcript.text:  # no words heard: music or noise, not a voice to judge
                start = time.perf_counter()
                voice = self.voice_reader().read(wav, words=transcript.words)  # while the face may still be read
                timings["voice"] = time.perf_counter() - start
            face = face_job.result() if face_job is not None else None
        if transcript.note:
            notes.append(transcript.note)
        if voice is not None and getattr(voice, "note", ""):
            notes.append(f"voice: {voice.note}")
        if face is not None and getattr(face, "note", ""):
            notes.append(face.note)
        return Perception(transcript=transcript, voice=voice, face=face, cues=describe(face, voice),
                          audio_path=wav, notes=tuple(notes), timings_s=timings)

    def votes(self, perception: Perception, *, map_name: str = "hit") -> list[tuple[EmotionVote, float]]:
        """The face and the voice as weighted votes (those that found something and weigh > 0)."""
        p = self.config.perception
        out = []
        if perception.face_used() and p.face_weight > 0:
            f = perception.face
            from e3rg_core.perception.face import CLASS_PRIOR, TEST_ACCURACY

            out.append((coarse_vote("face", f.distribution, raw=f"face: {f.top} {f.confidence:.2f}",
                                    seconds=perception.timings_s.get("face", 0.0), prior=CLASS_PRIOR,
                                    floor=1.0 - TEST_ACCURACY, map_name=map_name),
                        p.face_weight))
        if perception.voice_used() and p.voice_weight > 0:
            v = perception.voice
            out.append((coarse_vote("voice", v.distribution, raw=v.cues or "voice",
                                    seconds=perception.timings_s.get("voice", 0.0), map_name=map_name),
                        p.voice_weight))
        return out
