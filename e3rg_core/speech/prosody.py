"""Applying a ``Prosody`` to audio where an engine has no control for it.

* F0 mean and range: Praat's pitch-synchronous overlap-add (parselmouth, ``psola_reshape``).
* Energy: ``set_level`` brings the speech to a fixed active-speech level plus the requested gain,
  with a soft limiter so loud emotions do not clip.
* Pauses: ``silence`` between sentences.

Speaking rate is always left to the engines' duration controls, which keep the voice natural.
"""

from __future__ import annotations

import logging

import numpy as np

from e3rg_core.errors import BackendUnavailable

logger = logging.getLogger(__name__)

#: Active-speech RMS of neutral speech, dBFS: leaves ~10 dB of headroom for angry or happy speech.
NEUTRAL_LEVEL_DBFS = -23.0
_LIMIT = 0.95


def psola_reshape(samples: np.ndarray, sample_rate_hz: int, *, shift_semitones: float, range_scale: float,
                  duration_scale: float = 1.0, f0_floor_hz: float = 60.0, f0_ceiling_hz: float = 500.0,
                  seed: int = 0) -> np.ndarray:
    """Change F0 mean/range (and optionally the tempo) of a waveform with Praat's PSOLA (parselmouth).

    Praat tracks the pitch, the pitch tier is reshaped in the log domain around its median, and the
    speech is resynthesised by pitch-synchronous overlap-add, which keeps the formants. With
    ``duration_scale`` 1 the timing is kept too; otherwise every segment is stretched by it (> 1
    slower). (WORLD via pyworld was tried first: it mistracks the low, creaky Piper voice by an octave.)
    Praat picks unvoiced periods at random when it stretches; ``seed`` makes that repeatable.
    """
    stretch = abs(duration_scale - 1.0) >= 1e-3
    if abs(shift_semitones) < 1e-3 and abs(range_scale - 1.0) < 1e-3 and not stretch:
        return samples
    try:
        import parselmouth
        from parselmouth.praat import call
    except ImportError as exc:
        raise BackendUnavailable("pitch control needs Praat: pip install praat-parselmouth==0.4.7") from exc
    sound = parselmouth.Sound(np.asarray(samples, dtype=np.float64), sampling_frequency=sample_rate_hz)
    manipulation = call(sound, "To Manipulation", 0.01, f0_floor_hz, f0_ceiling_hz)
    tier = call(manipulation, "Extract pitch tier")
    n = call(tier, "Get number of points")
    if n == 0 and not stretch:  # nothing voiced: nothing to reshape
        return samples
    if n:
        values = np.array([call(tier, "Get value at index", i + 1) for i in range(n)])
        median = float(np.median(values))
        call(tier, "Formula", f"{median!r} * 2^({shift_semitones!r}/12) * (self/{median!r})^{range_scale!r}")
        call([tier, manipulation], "Replace pitch tier")
    target = len(samples)
    if stretch:
        duration = call(manipulation, "Extract duration tier")
        call(duration, "Add point", sound.xmin, float(duration_scale))
        call([manipulation, duration], "Replace duration tier")
        target = int(round(len(samples) * duration_scale))
    parselmouth.praat.run(f"random_initializeWithSeedUnsafelyButPredictably ({int(seed)})")
    try:
        out = call(manipulation, "Get resynthesis (overlap-add)").values[0]
    finally:
        parselmouth.praat.run("random_initializeSafelyAndUnpredictably ()")
    out = out[:target] if len(out) >= target else np.pad(out, (0, target - len(out)))
    return out.astype(np.float32)


def active_level_dbfs(samples: np.ndarray, sample_rate_hz: int) -> float:
    """RMS level of the frames that hold speech (within 35 dB of the loudest), in dBFS."""
    frame = max(1, int(0.02 * sample_rate_hz))
    n = len(samples) // frame
    if n == 0:
        return -120.0
    frames = np.asarray(samples[: n * frame], dtype=np.float64).reshape(n, frame)
    energy = (frames ** 2).mean(axis=1)
    db = 10 * np.log10(np.maximum(energy, 1e-12))
    active = db > db.max() - 35.0
    return float(10 * np.log10(max(energy[active].mean(), 1e-12)))


def set_level(samples: np.ndarray, sample_rate_hz: int, *, gain_db: float) -> np.ndarray:
    """Scale speech to ``NEUTRAL_LEVEL_DBFS + gain_db`` of active-speech RMS; soft-limit the peaks."""
    level = active_level_dbfs(samples, sample_rate_hz)
    if level <= -100.0:
        return np.asarray(samples, dtype=np.float32)
    y = np.asarray(samples, dtype=np.float64) * 10 ** ((NEUTRAL_LEVEL_DBFS + gain_db - level) / 20)
    over = np.abs(y) > _LIMIT
    if over.any():  # tanh knee above the limit: keeps loud speech loud without hard clipping
        y[over] = np.sign(y[over]) * (_LIMIT + (1 - _LIMIT) * np.tanh((np.abs(y[over]) - _LIMIT) / (1 - _LIMIT)))
    return y.astype(np.float32)


def silence(duration_s: float, sample_rate_hz: int) -> np.ndarray:
    return np.zeros(max(0, int(round(duration_s * sample_rate_hz))), dtype=np.float32)


def fade(samples: np.ndarray, sample_rate_hz: int, *, ms: float = 5.0) -> np.ndarray:
    """Short fade in/out so joined sentences do not click."""
    n = min(len(samples) // 2, int(sample_rate_hz * ms / 1000))
    if n < 2:
        return samples
    out = np.array(samples, dtype=np.float32)
    ramp = np.linspace(0.0, 1.0, n, dtype=np.float32)
    out[:n] *= ramp
    out[-n:] *= ramp[::-1]
    return out
