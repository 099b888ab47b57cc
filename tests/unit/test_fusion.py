"""Fusing the face and voice readings into the emotion vote and the prompt; the output self-check rules;
the order in which a turn's readers run (with doubles for the models)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from e3rg_core.config import load_config
from e3rg_core.emotions import CANDIDATES, COARSE, coarse_of
from e3rg_core.errors import InputError
from e3rg_core.perception.asr import Transcript
from e3rg_core.perception.face import CLASS_PRIOR, TEST_ACCURACY
from e3rg_core.perception.consistency import Consistency, face_agrees, voice_agrees
from e3rg_core.perception.fusion import FLOOR, Perceiver, Perception, coarse_vote, describe


@dataclass
class Face:
    distribution: dict
    frames_with_face: int = 5
    top: str = "sad"
    confidence: float = 0.7
    note: str = ""


@dataclass
class Voice:
    distribution: dict = field(default_factory=lambda: {"sad": 0.6, "neutral": 0.4})
    cues: str = "voice: monotone, quiet, slow"
    arousal: float = -0.6
    note: str = ""


def _by_class(scores: dict) -> dict:
    return {c: {round(p, 12) for label, p in scores.items() if coarse_of(label) == c} for c in COARSE}


def test_a_coarse_reading_becomes_a_likelihood_over_all_labels():
    vote = coarse_vote("voice", {"sad": 0.7, "happy": 0.3}, raw="voice: quiet", seconds=0.1)
    assert vote.label == "sad" and vote.voter == "voice" and vote.valid
    assert set(vote.scores) == set(CANDIDATES) and sum(vote.scores.values()) == pytest.approx(1.0)
    per_class = _by_class(vote.scores)
    assert all(len(scores) == 1 for scores in per_class.values())  # every label of a class scores alike
    score = {c: next(iter(s)) for c, s in per_class.items()}
    # no prior: the reading is the likelihood (x 8 classes), mixed with FLOOR of "no evidence" (1)
    for c, p in {"sad": 0.7, "happy": 0.3, "angry": 0.0}.items():
        assert score[c] / score["angry"] == pytest.approx((FLOOR + (1 - FLOOR) * 8 * p) / FLOOR)
    assert score["angry"] > 0  # no label is vetoed
    with pytest.raises(ValueError, match="empty"):
        coarse_vote("voice", {}, raw="", seconds=0.0)


def test_a_model_reading_is_divided_by_its_training_prior():
    """A face read "neutral 0.6, sad 0.4" backs sadness more: the model says neutral far more often."""
    prior = {"neutral": 0.4, "sad": 0.1, "happy": 0.5}  # no contempt: the model cannot tell it
    vote = coarse_vote("face", {"neutral": 0.6, "sad": 0.4}, raw="face", seconds=0.0, prior=prior)
    score = {c: next(iter(s)) for c, s in _by_class(vote.scores).items()}
    assert score["sad"] / score["neutral"] == pytest.approx((FLOOR + (1 - FLOOR) * 4.0) / (FLOOR + (1 - FLOOR) * 1.5))
    assert score["contempt"] / score["happy"] == pytest.approx(1.0 / FLOOR)  # no evidence either way: 1
    assert vote.label == "neutral"  # the label is what the face showed most, not the likelihood's top
    doubtful = coarse_vote("face", {"neutral": 0.6, "sad": 0.4}, raw="face", seconds=0.0, prior=prior, floor=0.5)
    score = {c: next(iter(s)) for c, s in _by_class(doubtful.scores).items()}
    assert score["sad"] / score["happy"] == pytest.approx((0.5 + 0.5 * 4.0) / 0.5)  # a third of the pull
    with pytest.raises(ValueError, match="floor"):
        coarse_vote("face", {"sad": 1.0}, raw="face", seconds=0.0, floor=0.0)


def test_the_face_prior_is_fer2013s_class_shares():
    assert 0.5 < TEST_ACCURACY < 0.8
    assert set(CLASS_PRIOR) == set(COARSE) - {"contempt"} and sum(CLASS_PRIOR.values()) == pytest.approx(1.0)
    assert max(CLASS_PRIOR, key=CLASS_PRIOR.get) == "happy" and min(CLASS_PRIOR, key=CLASS_PRIOR.get) == "disgusted"


def test_cues_for_the_prompt():
    assert describe(Face({"sad": 0.72, "neutral": 0.2, "happy": 0.08}), Voice()) == \
        "face: sad 0.72, neutral 0.20; voice: monotone, quiet, slow"
    assert describe(Face({"sad": 1.0}, frames_with_face=0), None) == ""  # no face in view: not used
    assert describe(None, None) == ""


def test_readings_that_found_nothing_do_not_vote():
    assert Perception(face=Face({"sad": 1.0}, frames_with_face=0)).face_used() is False
    assert Perception(voice=Voice(distribution={})).voice_used() is False
    assert Perception(face=Face({"sad": 1.0}), voice=Voice()).face_used()


@pytest.mark.parametrize("intended, change, ok", [
    ("angry", 0.4, True), ("angry", 0.0, False), ("sad", -0.3, True), ("sad", 0.1, False),
    ("neutral", 0.1, True), ("neutral", -0.5, False), ("contempt", -0.4, True), ("disgusted", 0.3, False),
])
def test_voice_self_check(intended, change, ok):
    assert voice_agrees(intended, change) is ok


def test_face_self_check_and_summary():
    assert face_agrees("sad", {"sad": 0.5, "neutral": 0.3, "happy": 0.2})
    assert not face_agrees("sad", {"neutral": 0.5, "sad": 0.3, "happy": 0.2})  # no baseline: must be on top
    smiling = {"happy": 0.8, "sad": 0.05, "angry": 0.0, "neutral": 0.15}  # the avatar's own neutral face
    assert face_agrees("sad", {"happy": 0.6, "sad": 0.2, "angry": 0.0, "neutral": 0.2}, smiling)  # sad rose most
    assert not face_agrees("sad", {"happy": 0.6, "sad": 0.1, "angry": 0.15, "neutral": 0.15}, smiling)  # angry rose more
    assert not face_agrees("sad", {"happy": 0.8, "sad": 0.07, "angry": 0.0, "neutral": 0.13}, smiling)  # too little
    assert face_agrees("neutral", {"happy": 0.82, "sad": 0.05, "angry": 0.0, "neutral": 0.13}, smiling)  # as it was
    assert not face_agrees("neutral", {"happy": 0.7, "sad": 0.0, "angry": 0.2, "neutral": 0.1}, smiling)
    text = Consistency("sad", face_top="neutral", face_p=0.3, face_rise=0.21, face_ok=True, voice_arousal=-0.4,
                       voice_ok=True).summary()
    assert text == "meant sad: face ✓ reads neutral (p(sad) 0.30, +0.21 over neutral); voice ✓ arousal -0.40 vs neutral"
    assert "face ? not read" in Consistency("happy").summary()
    assert "over neutral" not in Consistency("sad", face_top="sad", face_p=0.6, face_ok=True).summary()


class SlowWhisper:
    """Encodes for 50 ms, then decodes for 50 ms, logging each step."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def transcribe(self, path, *, encoded: threading.Event) -> Transcript:
        self.log.append("encoding")
        time.sleep(0.05)
        self.log.append("encoded")
        encoded.set()
        time.sleep(0.05)
        self.log.append("decoded")
        return Transcript(text="hello there", words=(), language="en", duration_s=1.0, voiced_s=1.0, note="",
                          seconds=0.1)


class LoggedFace:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def read_video(self, path) -> Face:
        self.log.append("face")
        return Face({"sad": 0.72, "neutral": 0.28})


class LoggedVoice:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def read(self, wav, *, words) -> Voice:
        self.log.append("voice")
        return Voice()


@pytest.fixture
def perceiver_and_log(tmp_path):
    log: list[str] = []
    config = load_config(environ={"E3RG_CACHE_DIR": str(tmp_path / "cache")})
    return Perceiver(config, transcriber=SlowWhisper(log), face_reader=LoggedFace(log),
                     voice_reader=LoggedVoice(log)), log


def test_the_face_is_read_once_whispers_encoder_has_run(perceiver_and_log, tmp_path):
    import soundfile

    perceiver, log = perceiver_and_log
    recording = tmp_path / "turn.wav"  # stands for a webcam clip: the face double does not open it
    soundfile.write(str(recording), 0.3 * np.sin(np.arange(16000) * 0.1).astype(np.float32), 16000)
    perception = perceiver.perceive(audio_path=None, video_path=recording, workdir=tmp_path, max_seconds=60)
    assert log.index("face") > log.index("encoded")  # not while the encoder holds both cores
    assert log.index("voice") > log.index("decoded")  # the voice needs the words
    assert perception.cues == "face: sad 0.72, neutral 0.28; voice: monotone, quiet, slow"
    assert {"audio", "asr", "face", "voice"} <= set(perception.timings_s)


def test_an_unreadable_recording_is_refused_without_reading_the_face(perceiver_and_log, tmp_path):
    perceiver, log = perceiver_and_log
    broken = tmp_path / "broken.webm"
    broken.write_bytes(b"not a recording")
    with pytest.raises(InputError, match="cannot read 'broken.webm'"):
        perceiver.perceive(audio_path=None, video_path=broken, workdir=tmp_path, max_seconds=60)
    assert log == []
