"""A whole recorded turn: the face and voice read from a webcam clip move the predicted emotion.

The clips are made from e3rg's own parts: Rosa animated with an emotion, mouth still (digital
silence: the expression model, trained on still faces, is not asked to read a talking one), with a
neutral sentence in the embedded voice as their sound track.

Both faces move the vote against the text alone, the sentence typed. The model reads Rosa's angry face
as angry 0.58, her sad face as sad 0.47, neutral 0.28 (her neutral face: neutral 0.56, sad 0.09;
``bench/reports/face_expression.json``; on the earlier photo avatar the sad face read neutral first,
and was evidence for sadness all the same): the model says
neutral far more often than the shares of its training faces would have it, so the vote divides the
reading by those shares (``fusion.coarse_vote``), and counts a third of it as no evidence (the model's
error rate). Measured: sad 0.046 from the text alone, 0.069 with the sad face, 0.039 with the neutral
one; angry 0.049 from the text alone, 0.079 with Rosa's angry face (which the model reads angry
0.46, neutral 0.42, at full intensity: a painted face reads less angry than the earlier photo's 0.73,
which gave 0.109).
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest
import soundfile

from e3rg_core.config import load_config
from e3rg_core.memory import AvatarLibrary
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.pipeline import Pipeline, TurnRequest
from e3rg_core.speech.embedded import EmbeddedSpeaker
from e3rg_core.types import Speech
from e3rg_core.video.embedded import MeshRenderer
from tests.doubles import ScriptedChat

SENTENCE = "I went to the shop this morning and bought some bread and milk."


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    config = load_config(environ={"E3RG_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))})
    config = replace(config, understanding=replace(config.understanding, voters=("minilm",)))
    from e3rg_core.understanding.engine import Understander

    understander = Understander(config, backends={"qwen1.5b": ScriptedChat(reply="I see. How did it go?")})
    return Pipeline(config, understander=understander)


@pytest.fixture(scope="module")
def webcam_clip(tmp_path_factory):
    """emotion -> a clip of Rosa's face in that emotion over the neutral sentence (made once each)."""
    folder = tmp_path_factory.mktemp("clips")
    speech = EmbeddedSpeaker().synthesize(SENTENCE, emotion="neutral", intensity=0.0,
                                          voice=VoiceSettings(voice="heart"), out_path=folder / "s.wav")
    # digital silence: a near-silent track would be scaled up to full loudness and open the mouth
    soundfile.write(str(folder / "quiet.wav"), np.zeros(int(speech.duration_s * 24000), dtype=np.float32), 24000)
    still = Speech(wav_path=folder / "quiet.wav", sample_rate_hz=24000, duration_s=speech.duration_s, text="",
                   emotion="neutral", intensity=0.0, voice="test:silence")
    portrait = AvatarLibrary().get("rosa").portrait
    renderer = MeshRenderer(cache_dir=folder / "cache", size_px=320)
    clips: dict[str, Path] = {}

    def make(emotion: str) -> Path:
        if emotion not in clips:
            face = renderer.render(still, portrait=portrait, emotion=emotion, intensity=1.0,
                                   out_path=folder / f"face_{emotion}.mp4").mp4_path
            clips[emotion] = folder / f"clip_{emotion}.mp4"
            subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(face),
                            "-i", str(speech.wav_path), "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac",
                            "-shortest", str(clips[emotion])], check=True)
        return clips[emotion]

    return make


@pytest.fixture(scope="module")
def angry_clip(webcam_clip):
    return webcam_clip("angry")


def test_a_webcam_turn_is_heard_seen_and_moves_the_emotion(pipeline, angry_clip, tmp_path):
    text_only = pipeline.understand(pipeline.hear(TurnRequest(text=SENTENCE), tmp_path), TurnRequest(text=SENTENCE))
    request = TurnRequest(video_path=angry_clip)
    heard = pipeline.hear(request, tmp_path)
    assert "bread" in heard.text.lower() and heard.input_kind == "video"
    perception = heard.perception
    assert perception.face_used() and perception.face.top == "angry"
    assert perception.cues.startswith("face: angry")
    assert perception.voice_used() and perception.cues.count("voice") == 1
    seen = pipeline.understand(heard, request)
    assert [v.voter for v in seen.votes] == ["minilm", "face", "voice"]
    before, after = text_only.coarse_distribution.get("angry", 0), seen.coarse_distribution.get("angry", 0)
    # measured 0.049 -> 0.079 when the text voter read this plain sentence less surely; with its class
    # head learnt from 1,252 more messages it reads it as neutral more surely (angry 0.025), and the
    # face moves angry to 0.035: the share the face adds follows how sure the text is, the ratio less so
    assert after > 1.3 * before and after > before + 0.008


def test_a_sad_face_moves_the_vote_towards_sad(pipeline, webcam_clip, tmp_path):
    """The same sentence typed, over a sad face, and over a neutral face."""
    text_only = pipeline.understand(pipeline.hear(TurnRequest(text=SENTENCE), tmp_path), TurnRequest(text=SENTENCE))
    shares = {"text": text_only.coarse_distribution.get("sad", 0.0)}
    for emotion in ("sad", "neutral"):
        request = TurnRequest(video_path=webcam_clip(emotion))
        heard = pipeline.hear(request, tmp_path)
        face = heard.perception.face.distribution
        if emotion == "sad":  # read first (Rosa's painted face), neutral second, and said so in the prompt
            assert sorted(face, key=face.get, reverse=True)[:2] == ["sad", "neutral"] and face["sad"] > 0.3, face
            assert heard.perception.cues.startswith("face: sad")
        else:
            assert face["sad"] < 0.15, face
        seen = pipeline.understand(heard, request)
        assert [v.voter for v in seen.votes] == ["minilm", "face", "voice"]
        shares[emotion] = seen.coarse_distribution.get("sad", 0.0)
    # measured 0.093 with the sad face, 0.081 from the text alone, 0.050 with the neutral face. The text
    # voter's class head is surer the sentence is neutral than the prototypes alone were (0.069 / 0.046 /
    # 0.039 before); measured on the earlier photo avatar, whose sad face read neutral first
    assert shares["sad"] > 1.1 * shares["text"] and shares["sad"] > 1.5 * shares["neutral"], shares


def test_the_face_can_be_only_a_cue(pipeline, angry_clip, tmp_path, monkeypatch):
    config = pipeline.config
    monkeypatch.setattr(pipeline.perceiver, "config", replace(config, perception=replace(
        config.perception, face_weight=0.0, voice_weight=0.0)))
    request = TurnRequest(video_path=angry_clip)
    heard = pipeline.hear(request, tmp_path)
    assert heard.perception.cues.startswith("face: angry")  # still told to the LLM
    assert [v.voter for v in pipeline.understand(heard, request).votes] == ["minilm"]


def test_no_face_in_view_is_a_note_not_an_error(pipeline, tmp_path):
    speech = EmbeddedSpeaker().synthesize(SENTENCE, emotion="neutral", intensity=0.0,
                                          voice=VoiceSettings(voice="joe"), out_path=tmp_path / "s.wav")
    clip = tmp_path / "grey.webm"
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-f", "lavfi", "-i",
                    "color=c=gray:s=320x240:r=10", "-i", str(speech.wav_path), "-shortest", "-c:v", "libvpx",
                    "-c:a", "libopus", str(clip)], check=True)
    heard = pipeline.hear(TurnRequest(video_path=clip), tmp_path)
    assert not heard.perception.face_used() and any("no face" in n for n in heard.perception.notes)
    assert "bread" in heard.text.lower()


def test_an_omni_model_hears_the_16k_sound_and_sees_the_video(pipeline, angry_clip, tmp_path):
    seen = {}

    def spy(turn, **kwargs):
        seen["turn"] = turn
        seen["rate"] = soundfile.info(turn.audio_path).samplerate
        raise RuntimeError("stop here")

    request = TurnRequest(video_path=angry_clip)
    heard = pipeline.hear(request, tmp_path)
    understander = pipeline.understander()
    original = understander.decide  # the turn reaches the models there (then the reply is streamed)
    understander.decide = spy
    try:
        with pytest.raises(RuntimeError, match="stop here"):
            pipeline.understand(heard, request)
    finally:
        understander.decide = original
    assert seen["rate"] == 16000 and seen["turn"].video_path == angry_clip
    assert seen["turn"].cues.startswith("face: angry")
