"""Spoken pieces of a streamed reply: padded to whole video frames, joined with shifted timelines."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from e3rg_core.errors import BackendFailed
from e3rg_core.speech.pieces import join_speech, pad_to_frames
from e3rg_core.types import Speech, TimedUnit


def _piece(path, n_samples, rate=24000, text="Hi.", fill=1000):
    soundfile.write(str(path), np.full(n_samples, fill, dtype=np.int16), rate, subtype="PCM_16")
    units = (TimedUnit(0.0, n_samples / rate / 2, "aa"), TimedUnit(n_samples / rate / 2, n_samples / rate, "sil"))
    return Speech(wav_path=path, sample_rate_hz=rate, duration_s=n_samples / rate, text=text, emotion="sad",
                  intensity=0.5, voice="embedded:heart", phonemes=units, visemes=units)


def test_a_piece_is_padded_with_silence_to_whole_frames(tmp_path):
    piece = pad_to_frames(_piece(tmp_path / "a.wav", 24000 + 100), fps=25)  # 1 s and 100 samples
    samples, rate = soundfile.read(str(piece.wav_path), dtype="int16")
    assert len(samples) == 24000 + 960 and piece.duration_s == pytest.approx(26 / 25)  # 26 frames of 960
    assert (samples[:24100] == 1000).all() and (samples[24100:] == 0).all()
    exact = pad_to_frames(_piece(tmp_path / "b.wav", 960 * 3), fps=25)
    assert exact.duration_s == pytest.approx(3 / 25)  # already whole: unchanged


def test_pieces_join_back_to_back_with_their_timelines_shifted(tmp_path):
    a, b = _piece(tmp_path / "a.wav", 4800, text="Oh no.", fill=1), _piece(tmp_path / "b.wav", 2400, text="Sorry.", fill=2)
    whole = join_speech([a, b], tmp_path / "whole.wav")
    samples, _ = soundfile.read(str(whole.wav_path), dtype="int16")
    assert list(samples[:4800]) == [1] * 4800 and list(samples[4800:]) == [2] * 2400
    assert whole.text == "Oh no. Sorry." and whole.duration_s == pytest.approx(0.3)
    assert [u.start_s for u in whole.visemes] == pytest.approx([0.0, 0.1, 0.2, 0.25])
    assert (whole.emotion, whole.voice) == ("sad", "embedded:heart")


def test_pieces_of_different_rates_or_none_are_refused(tmp_path):
    with pytest.raises(BackendFailed, match="no spoken piece"):
        join_speech([], tmp_path / "x.wav")
    with pytest.raises(BackendFailed, match="sample rate"):
        join_speech([_piece(tmp_path / "a.wav", 100), _piece(tmp_path / "b.wav", 100, rate=22050)], tmp_path / "x.wav")


def test_a_piece_cut_in_two_keeps_every_sample_and_its_timeline(tmp_path):
    from e3rg_core.speech.pieces import split_speech

    piece = _piece(tmp_path / "a.wav", 24000)  # 1 s: "aa" 0-0.5, "sil" 0.5-1
    first, rest = split_speech(piece, 0.4, tmp_path / "a1.wav", tmp_path / "a2.wav")
    assert (first.duration_s, rest.duration_s) == (pytest.approx(0.4), pytest.approx(0.6))
    assert [(u.start_s, u.end_s, u.symbol) for u in first.visemes] == [(0.0, pytest.approx(0.4), "aa")]
    assert [(round(u.start_s, 6), round(u.end_s, 6), u.symbol) for u in rest.visemes] == [(0.0, 0.1, "aa"), (0.1, 0.6, "sil")]
    joined = join_speech([first, rest], tmp_path / "back.wav")
    a, _ = soundfile.read(str(piece.wav_path), dtype="int16")
    b, _ = soundfile.read(str(joined.wav_path), dtype="int16")
    assert np.array_equal(a, b)
    with pytest.raises(BackendFailed, match="cannot cut"):
        split_speech(piece, 1.5, tmp_path / "x1.wav", tmp_path / "x2.wav")
