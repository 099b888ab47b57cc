"""Reading speech audio and its loudness per video frame."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from e3rg_core.errors import InputError
from e3rg_core.media.audio import envelope, frame_rms, read_audio


def _tone(path, seconds=2.0, rate=16000, channels=1):
    t = np.arange(int(seconds * rate)) / rate
    level = 0.5 * (1 + np.sin(2 * np.pi * 2.0 * t - np.pi / 2)) / 2  # 0 -> 0.5 -> 0, twice a second
    samples = (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    soundfile.write(str(path), np.stack([samples] * channels, axis=1) if channels > 1 else samples, rate)
    return level


def test_stereo_is_mixed_to_mono(tmp_path):
    _tone(tmp_path / "s.wav", channels=2)
    audio = read_audio(tmp_path / "s.wav")
    assert audio.samples.ndim == 1 and audio.sample_rate_hz == 16000
    assert audio.duration_s == pytest.approx(2.0)


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_audio(tmp_path / "nope.wav")
    (tmp_path / "bad.wav").write_bytes(b"RIFF....not audio")
    with pytest.raises(InputError, match="cannot decode"):
        read_audio(tmp_path / "bad.wav")


def test_rms_and_envelope_follow_the_level(tmp_path):
    level = _tone(tmp_path / "t.wav")
    audio = read_audio(tmp_path / "t.wav")
    n = 50
    rms = frame_rms(audio.samples, audio.sample_rate_hz, fps=25, n_frames=n)
    centres = ((np.arange(n) + 0.5) / 25 * 16000).astype(int)
    assert np.corrcoef(rms, level[centres])[0, 1] > 0.97
    env = envelope(audio.samples, audio.sample_rate_hz, fps=25, n_frames=n)
    assert env.min() >= 0 and env.max() <= 1 and env.max() > 0.9
    assert np.corrcoef(env, rms)[0, 1] > 0.85


def test_silence_gives_a_flat_envelope():
    env = envelope(np.zeros(16000, np.float32), 16000, fps=25, n_frames=25)
    assert env.shape == (25,) and np.allclose(env, env[0])


def test_a_clip_that_is_quiet_throughout_keeps_the_mouth_nearly_closed():
    rate, fps = 24000, 25
    rng = np.random.default_rng(0)
    hush = (rng.standard_normal(rate * 2) * 10 ** (-54 / 20)).astype(np.float32)  # room noise at -54 dBFS
    assert envelope(hush, rate, fps=fps, n_frames=50).max() < 0.2
    speech = (np.sin(np.arange(rate * 2) * 2 * np.pi * 220 / rate) * 0.3).astype(np.float32)
    assert envelope(speech, rate, fps=fps, n_frames=50)[5:45].min() > 0.9  # real speech still opens it
