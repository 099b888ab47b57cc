"""The embedded voices, measured on the audio they produce (librosa's pyin for pitch)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from e3rg_core.errors import ConfigError, InputError
from e3rg_core.memory import AvatarLibrary
from e3rg_core.memory.profiles import VoiceSettings
from e3rg_core.speech import voice_for
from e3rg_core.speech.embedded import EmbeddedSpeaker

SENTENCE = "I really did not expect to hear from you today. Tell me everything about it."
EMOTIONS = ("neutral", "happy", "sad", "angry", "fear")


@pytest.fixture(scope="module")
def speaker():
    return EmbeddedSpeaker()


def measure(path: Path) -> dict[str, float]:
    """Median F0 (Hz), F0 inter-quartile range (semitones), active level (dB) and duration (s)."""
    import librosa
    import soundfile

    y, sr = soundfile.read(path, dtype="float32")
    f0, voiced, _ = librosa.pyin(y, fmin=55, fmax=600, sr=sr, frame_length=2048)
    semitones = 12 * np.log2(f0[voiced] / 100.0)
    rms = librosa.feature.rms(y=y)[0]
    return {"f0": float(np.median(f0[voiced])), "range": float(np.subtract(*np.percentile(semitones, [75, 25]))),
            "level": float(20 * np.log10(rms[rms > 0.05 * rms.max()].mean())), "duration": len(y) / sr}


@pytest.fixture(scope="module")
def spoken(speaker, tmp_path_factory):
    """Every shipped avatar says the sentence in each emotion at full intensity."""
    folder = tmp_path_factory.mktemp("speech")
    out = {}
    for profile in AvatarLibrary().profiles():
        if profile.voice.backend != "embedded":
            continue
        for emotion in EMOTIONS:
            speech = speaker.synthesize(SENTENCE, emotion=emotion, intensity=1.0, voice=voice_for(profile),
                                        out_path=folder / f"{profile.id}_{emotion}.wav")
            out[profile.id, emotion] = (speech, measure(speech.wav_path))
    return out


def avatars(spoken):
    return sorted({a for a, _ in spoken})


def test_each_avatar_has_its_own_voice(spoken):
    f0 = {a: spoken[a, "neutral"][1]["f0"] for a in avatars(spoken)}
    ids = sorted(f0)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:  # at least two semitones apart in median pitch, or a different model
            apart = abs(12 * np.log2(f0[a] / f0[b]))
            assert apart >= 2.0 or spoken[a, "neutral"][0].voice != spoken[b, "neutral"][0].voice, (a, b, f0)
    assert len({spoken[a, "neutral"][0].voice for a in ids}) >= 2  # a female and a male model


# expected direction of each measure against neutral (Banse & Scherer 1996; Juslin & Laukka 2003)
DIRECTIONS = {
    "happy": {"f0": +1, "range": +1, "level": +1, "duration": -1},
    "sad": {"f0": -1, "range": -1, "level": -1, "duration": +1},
    "angry": {"f0": +1, "level": +1, "duration": -1},
    "fear": {"f0": +1, "duration": -1},
}
MARGIN = {"f0": 0.03, "range": 0.3, "level": 1.0, "duration": 0.02}  # relative, semitones, dB, relative


@pytest.mark.parametrize("emotion", sorted(DIRECTIONS))
def test_emotions_move_pitch_range_energy_and_rate(spoken, emotion):
    for avatar in avatars(spoken):
        neutral, moved = spoken[avatar, "neutral"][1], spoken[avatar, emotion][1]
        for key, sign in DIRECTIONS[emotion].items():
            change = moved[key] - neutral[key]
            if key in ("f0", "duration"):
                change /= neutral[key]
            assert sign * change > MARGIN[key], f"{avatar} {emotion}: {key} {neutral[key]:.3g} -> {moved[key]:.3g}"


def test_speech_value_and_timeline(spoken):
    speech, m = spoken["amara", "happy"]
    assert speech.emotion == "happy" and speech.intensity == 1.0 and speech.voice == "embedded:heart"
    assert speech.duration_s == pytest.approx(m["duration"], abs=1e-3) and speech.sample_rate_hz == 24000
    assert speech.visemes[0].symbol == "sil" and speech.visemes[-1].end_s == pytest.approx(speech.duration_s, abs=1e-3)
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in zip(speech.visemes, speech.visemes[1:]))
    assert {"PP", "aa", "ih"} <= {v.symbol for v in speech.visemes}  # "really", "expect", "me"
    # "me" of the last sentence lies in the second half of the audio
    assert speech.phonemes[-1].start_s > speech.duration_s / 2


@pytest.mark.parametrize("name", ["heart", "joe"])
def test_same_seed_same_audio(speaker, tmp_path, name):
    voice = VoiceSettings(voice=name)
    a = speaker.synthesize("Hello there.", emotion="happy", intensity=0.5, voice=voice, out_path=tmp_path / "a.wav")
    b = speaker.synthesize("Hello there.", emotion="happy", intensity=0.5, voice=voice, out_path=tmp_path / "b.wav")
    assert a.wav_path.read_bytes() == b.wav_path.read_bytes()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"text": ""}, InputError, "empty"),
    ({"text": "a" * 1001}, InputError, "limit is 1000"),
    ({"emotion": "joyful"}, InputError, "unknown speech emotion"),
    ({"intensity": 2}, InputError, "0..1"),
    ({"voice": VoiceSettings(voice="brian")}, ConfigError, "unknown embedded voice 'brian'; choose from heart, joe"),
    ({"voice": VoiceSettings(backend="openvoice")}, ConfigError, "voice backend 'openvoice'"),
])
def test_bad_requests_write_nothing(speaker, tmp_path, kwargs, error, message):
    request = {"text": "Hello.", "emotion": "happy", "intensity": 0.5, "voice": VoiceSettings(), **kwargs}
    with pytest.raises(error, match=message):
        speaker.synthesize(**request, out_path=tmp_path / "x.wav")
    assert not list(tmp_path.iterdir())


def test_speak_cli(tmp_path, capsys):
    from e3rg_core.cli import main

    rc = main(["speak", "--avatar", "rosa", "--emotion", "heartbroken", "--text", "Oh no. I am so sorry.",
               "-o", str(tmp_path / "m.wav"), "--timeline", str(tmp_path / "v.json"), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["emotion"] == "sad" and out["avatar"] == "rosa" and out["real_time_factor"] < 1
    assert json.loads((tmp_path / "v.json").read_text())[0]["symbol"] == "sil"
    assert main(["speak", "--avatar", "nobody", "--text", "Hi", "-o", str(tmp_path / "n.wav")]) == 2
    assert "unknown avatar 'nobody'" in capsys.readouterr().err
