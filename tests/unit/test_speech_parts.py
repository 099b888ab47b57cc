"""Stage 3a pieces that need no voice model: text checks, sentence splitting, banks, timelines."""

from __future__ import annotations

import numpy as np
import pytest

from e3rg_core.emotions import COARSE
from e3rg_core.errors import ConfigError, InputError
from e3rg_core.speech import timeline
from e3rg_core.speech.banks import ProsodyBank, bank_path
from e3rg_core.speech.base import MAX_CHUNK_CHARS, MAX_TEXT_CHARS, check_emotion, check_text, split_sentences
from e3rg_core.speech.prosody import active_level_dbfs, psola_reshape, set_level


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \n\t", "empty"), ("?!...", "no letters"), ("x" * (MAX_TEXT_CHARS + 1), "limit is 1000"),
    (None, "must be a string"),
])
def test_bad_text(text, message):
    with pytest.raises(InputError, match=message):
        check_text(text)


def test_text_whitespace_is_folded():
    assert check_text("  Hello\n\nthere  ") == "Hello there"


@pytest.mark.parametrize("emotion, intensity, message", [
    ("joyful", 0.5, "unknown speech emotion 'joyful'; choose from"), ("happy", 1.5, "0..1"),
    ("happy", float("nan"), "0..1"), ("happy", "loud", "0..1"),
])
def test_bad_emotion(emotion, intensity, message):
    with pytest.raises(InputError, match=message):
        check_emotion(emotion, intensity)


def test_sentences_and_long_clauses():
    assert split_sentences("Hi there. How are you? Fine!") == ["Hi there.", "How are you?", "Fine!"]
    long = ", ".join(["a clause of several words"] * 30) + "."
    chunks = split_sentences(long)
    assert len(chunks) > 1 and all(len(c) <= MAX_CHUNK_CHARS for c in chunks)
    assert " ".join(chunks).replace(" ", "") == long.replace(" ", "")
    no_punctuation = "word " * 200
    assert all(len(c) <= MAX_CHUNK_CHARS for c in split_sentences(no_punctuation))


def test_shipped_bank_directions():
    bank = ProsodyBank.from_file(bank_path("embedded"))
    assert set(bank.tables) == set(COARSE)
    n = bank.at("neutral", 1.0)
    happy, sad, angry, fear = (bank.at(c, 1.0) for c in ("happy", "sad", "angry", "fear"))
    assert happy.pitch_shift_semitones > 0 and happy.pitch_range > 1 and happy.rate > 1 and happy.energy_db > 0
    assert sad.pitch_shift_semitones < 0 and sad.pitch_range < 1 and sad.rate < 1 and sad.energy_db < 0
    assert angry.energy_db > happy.energy_db and fear.pitch_shift_semitones > happy.pitch_shift_semitones
    assert n == bank.at("sad", 0.0)  # intensity 0 is neutral


def test_intensity_interpolates_geometrically_for_multipliers():
    bank = ProsodyBank.from_file(bank_path("embedded"))
    full, half = bank.at("sad", 1.0), bank.at("sad", 0.5)
    assert half.rate == pytest.approx(full.rate ** 0.5)
    assert half.pitch_shift_semitones == pytest.approx(full.pitch_shift_semitones / 2)


@pytest.mark.parametrize("body, message", [
    ("[prosody.neutral]\nrate = 1.0\n", "missing classes"),
    ("\n".join(f"[prosody.{c}]\nrate = 1.0" for c in COARSE) + "\n[prosody.bored]\nrate = 1.0\n", "unknown \\['bored'\\]"),
    ("\n".join(f"[prosody.{c}]\nrate = 5.0" for c in COARSE), "rate = 5.0 must be a number in 0.5..2"),
    ("\n".join(f"[prosody.{c}]\nloudness = 1" for c in COARSE), "unknown controls \\['loudness'\\]"),
    ("[prosody", "not valid TOML"),
])
def test_bad_banks(tmp_path, body, message):
    path = tmp_path / "speech_x.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message):
        ProsodyBank.from_file(path)


def _vowel(f0_hz: float, seconds: float = 1.0, sr: int = 16000) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return (0.3 * sum(np.sin(2 * np.pi * f0_hz * k * t) / k for k in range(1, 8))).astype(np.float32)


def test_psola_moves_the_pitch_and_keeps_the_length():
    import librosa

    y = _vowel(120.0)
    up = psola_reshape(y, 16000, shift_semitones=4.0, range_scale=1.0)
    assert len(up) == len(y)
    f0, voiced, _ = librosa.pyin(up, fmin=60, fmax=400, sr=16000)
    assert np.median(f0[voiced]) == pytest.approx(120 * 2 ** (4 / 12), rel=0.03)
    flat = psola_reshape(_vowel(120.0) * np.linspace(0.5, 1, 16000), 16000, shift_semitones=0.0, range_scale=0.0)
    f0, voiced, _ = librosa.pyin(flat, fmin=60, fmax=400, sr=16000)
    assert np.ptp(f0[voiced]) < 3.0


def test_psola_stretches_time_and_keeps_the_pitch():
    import librosa

    y = _vowel(150.0)
    slow = psola_reshape(y, 16000, shift_semitones=0.0, range_scale=1.0, duration_scale=1.25)
    assert len(slow) == 20000
    f0, voiced, _ = librosa.pyin(slow, fmin=60, fmax=400, sr=16000)
    assert np.median(f0[voiced]) == pytest.approx(150.0, rel=0.03)
    assert len(psola_reshape(y, 16000, shift_semitones=2.0, range_scale=1.0, duration_scale=0.8)) == 12800


def test_level_is_set_and_limited():
    y = _vowel(150.0) * 0.01
    assert active_level_dbfs(set_level(y, 16000, gain_db=0.0), 16000) == pytest.approx(-23.0, abs=0.2)
    loud = set_level(y, 16000, gain_db=25.0)
    assert np.abs(loud).max() <= 1.0  # soft-limited, never wrapped or clipped past full scale


def test_viseme_symbols_cover_both_phoneme_alphabets():
    assert [v for _, v, _ in timeline.symbols("həlˈO wˈɜɹld")] == ["aa", "aa", "nn", "oh", "ou", "RR", "nn", "DD"]
    assert [v for _, v, _ in timeline.symbols("tʃiːz mæθ")] == ["CH", "ih", "SS", "PP", "aa", "TH"]
    assert {v for _, v, _ in timeline.symbols("ˈɪ ʃ ŋ f ɔɪ")} == {"ih", "CH", "kk", "FF", "oh"}


def test_alignment_puts_phrases_on_the_sounds():
    sr = 16000
    y = np.concatenate([np.zeros(sr // 5), _vowel(150, 0.6), np.zeros(sr // 2), _vowel(150, 0.4), np.zeros(sr // 5)])
    phonemes, visemes = timeline.align(["mˈɑ, ˈu"], y, sr, offset_s=1.0)
    assert [p.symbol for p in phonemes] == ["m", "ɑ", "u"]
    assert phonemes[0].start_s == pytest.approx(1.2, abs=0.03) and phonemes[1].end_s == pytest.approx(1.8, abs=0.03)
    assert phonemes[2].start_s == pytest.approx(2.3, abs=0.03) and phonemes[2].end_s == pytest.approx(2.7, abs=0.03)
    assert [v.symbol for v in visemes] == ["sil", "PP", "aa", "sil", "ou", "sil"]
    assert visemes[0].start_s == 1.0 and visemes[-1].end_s == pytest.approx(1.0 + len(y) / sr, abs=1e-3)
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in zip(visemes, visemes[1:]))


def test_alignment_of_silence_is_empty():
    assert timeline.align(["hˈI"], np.zeros(16000, np.float32), 16000) == ([], [])
