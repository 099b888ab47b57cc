"""A whole recorded turn: the face and voice read from a webcam clip move the predicted emotion.

The clip is made from e3rg's own parts: a portrait animated with an emotion, mouth closed (the
expression model, trained on still faces, reads the animator's talking faces as neutral), with a
neutral sentence in the embedded voice as its sound track. The model recognises the animator's angry
and surprised faces on Margaret but not its sad face (``bench/reports/face_expression.json``), so
the shift is shown with anger.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace

import imageio_ffmpeg
import pytest

from e3rg_core.config import load_config
from e3rg_core.memory import AvatarLibrary
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.pipeline import Pipeline, TurnRequest
from e3rg_core.speech.embedded import EmbeddedSpeaker
from e3rg_core.video.embedded import MeshRenderer
from tests.doubles import ScriptedChat
from tests.video_support import make_speech

SENTENCE = "I went to the shop this morning and bought some bread and milk."


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    config = load_config(environ={"E3RG_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))})
    config = replace(config, understanding=replace(config.understanding, voters=("minilm",)))
    from e3rg_core.understanding.engine import Understander

    understander = Understander(config, backends={"qwen1.5b": ScriptedChat(reply="I see. How did it go?")})
    return Pipeline(config, understander=understander)


@pytest.fixture(scope="module")
def angry_clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    speech = EmbeddedSpeaker().synthesize(SENTENCE, emotion="neutral", intensity=0.0,
                                          voice=VoiceSettings(voice="heart"), out_path=folder / "s.wav")
    portrait = AvatarLibrary().get("margaret").portrait
    still = make_speech(folder / "quiet.wav", duration_s=speech.duration_s, quiet=True)
    face = MeshRenderer(cache_dir=folder / "cache", size_px=320).render(
        still, portrait=portrait, emotion="angry", intensity=1.0, out_path=folder / "face.mp4").mp4_path
    clip = folder / "clip.mp4"
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(face), "-i", str(speech.wav_path),
                    "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-shortest", str(clip)], check=True)
    return clip


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
    assert seen.coarse_distribution.get("angry", 0) > 2 * text_only.coarse_distribution.get("angry", 0)


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
    import soundfile

    seen = {}

    def spy(turn, **kwargs):
        seen["turn"] = turn
        seen["rate"] = soundfile.info(turn.audio_path).samplerate
        raise RuntimeError("stop here")

    request = TurnRequest(video_path=angry_clip)
    heard = pipeline.hear(request, tmp_path)
    understander = pipeline.understander()
    original = understander.understand
    understander.understand = spy
    try:
        with pytest.raises(RuntimeError, match="stop here"):
            pipeline.understand(heard, request)
    finally:
        understander.understand = original
    assert seen["rate"] == 16000 and seen["turn"].video_path == angry_clip
    assert seen["turn"].cues.startswith("face: angry")
