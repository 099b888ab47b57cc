"""Barge-in: is the voice the microphone hears the person's, or the avatar's own reply coming back?

With the avatar talking through loudspeakers, the microphone hears the reply a little later (the
sound card, the room: 0-500 ms), quieter, coloured by the room and mixed with noise. The voice
activity detector calls that speech, so before a reply is cut short two checks look at it:

* the sound: the loudness over time in eight bands of 250-4000 Hz (32 ms frames, 10 ms apart, in
  dB with a floor 45 dB under the peak) of the microphone against the reply's last seconds. For
  each lag in 0..``max_lag_s`` the per-band correlations are averaged; the best is the echo score.
  The reply itself delayed 180 ms, 18 dB quieter, through a small room and at 10 dB SNR scored
  0.83-0.95 over 0.4-1.5 s pieces; another voice 0.01-0.59; the person speaking over the echo at
  +6 dB 0.37-0.72 (threshold 0.75);
* the words, when a partial transcript exists: most of them are words of the reply.

``decide_barge_in`` puts these together with the voiced time the endpointer counted.
"""

from __future__ import annotations

import enum
import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from e3rg_core.errors import BackendUnavailable, ConfigError, InputError
from e3rg_core.live.vad import SAMPLE_RATE_HZ

_FRAME = 512  # 32 ms at 16 kHz
_HOP = 160  # 10 ms
_FLOOR_DB = 45.0  # quieter than the peak by this much counts as silence: the noise must not decide
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class EchoOptions:
    """When the microphone's sound or words are taken for the reply's."""

    threshold: float = 0.75  # echo score at or above: the reply's own sound
    max_lag_s: float = 0.5  # the latest the reply is heard after it was played
    min_duration_s: float = 0.25  # shorter microphone audio is not compared (too few frames to tell)
    low_hz: float = 250.0
    high_hz: float = 4000.0
    n_bands: int = 8
    word_share: float = 0.8  # a transcript with at least this share of reply words is the reply's
    min_words: int = 3  # fewer words say nothing about whose they are

    def __post_init__(self) -> None:
        checks = {
            "threshold": (0.0 < self.threshold < 1.0, "between 0 and 1"),
            "max_lag_s": (0.0 <= self.max_lag_s <= 5.0, "from 0 to 5 s"),
            "min_duration_s": (0.1 <= self.min_duration_s <= 5.0, "from 0.1 to 5 s"),
            "low_hz": (50.0 <= self.low_hz < self.high_hz, f"from 50 Hz to below high_hz ({self.high_hz})"),
            "high_hz": (self.high_hz <= SAMPLE_RATE_HZ / 2, f"at most {SAMPLE_RATE_HZ // 2} Hz"),
            "n_bands": (isinstance(self.n_bands, int) and 1 <= self.n_bands <= 32, "an integer from 1 to 32"),
            "word_share": (0.0 < self.word_share <= 1.0, "above 0 and at most 1"),
            "min_words": (isinstance(self.min_words, int) and self.min_words >= 1, "an integer of 1 or more"),
        }
        for name, (ok, allowed) in checks.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok:
                raise ConfigError(f"echo option {name} must be {allowed}, got {value!r}")


@dataclass(frozen=True)
class EchoReading:
    """How much the microphone sounds like the reply, and at which delay."""

    score: float  # -1..1: the mean per-band correlation of the loudness envelopes at the best lag
    lag_s: float  # the delay of that best match
    is_echo: bool


def played_reference(reply: np.ndarray, *, sample_rate_hz: int, playback_s: float, duration_s: float,
                     max_lag_s: float = 0.5) -> np.ndarray:
    """The part of the reply that can be in ``duration_s`` of microphone audio ending at ``playback_s``, at 16 kHz.

    ``playback_s`` is where the page's player was when the microphone audio ended; the part returned
    starts ``duration_s + max_lag_s`` before it (or at the reply's start).
    """
    reply = _mono(reply, "reply audio")
    if not isinstance(sample_rate_hz, (int, np.integer)) or not 8000 <= sample_rate_hz <= 192000:
        raise InputError(f"reply sample rate {sample_rate_hz!r} is not accepted; give an integer from 8000 to 192000 Hz")
    if not (math.isfinite(playback_s) and playback_s >= 0 and math.isfinite(duration_s) and duration_s > 0):
        raise InputError(f"playback position {playback_s!r} s and duration {duration_s!r} s must be finite, "
                         "the position 0 or more and the duration above 0")
    end = min(int(round(playback_s * sample_rate_hz)), len(reply))
    start = max(0, end - int(round((duration_s + max_lag_s) * sample_rate_hz)))
    part = reply[start:end]
    if sample_rate_hz == SAMPLE_RATE_HZ or len(part) == 0:
        return part.astype(np.float32)
    try:
        import soxr
    except ImportError as exc:
        raise BackendUnavailable(f"resampling the reply needs soxr ({exc}); install it with: pip install soxr") from exc
    return np.asarray(soxr.resample(part, sample_rate_hz, SAMPLE_RATE_HZ), dtype=np.float32)


def echo_score(mic: np.ndarray, reference: np.ndarray, *, options: EchoOptions | None = None) -> EchoReading:
    """Whether 16 kHz ``mic`` audio is ``reference`` (16 kHz, its end lined up with the mic's end) played back.

    The reference should reach ``options.max_lag_s`` further back than the microphone audio; missing
    reply before its start counts as silence.
    """
    o = options or EchoOptions()
    mic, reference = _mono(mic, "microphone audio"), _mono(reference, "reply audio")
    if len(mic) < o.min_duration_s * SAMPLE_RATE_HZ:
        raise InputError(f"{len(mic) / SAMPLE_RATE_HZ:.2f} s of microphone audio is too short to compare with "
                         f"the reply; give at least {o.min_duration_s:g} s")
    edges = np.geomspace(o.low_hz, o.high_hz, o.n_bands + 1)
    m = _band_db(mic, edges)
    r = _band_db(reference, edges) if len(reference) else np.full((0, o.n_bands), -np.inf)
    n, max_lag = len(m), int(round(o.max_lag_s * SAMPLE_RATE_HZ / _HOP))
    if len(r) < n + max_lag:  # the reply had not started yet: silence
        r = np.concatenate([np.full((n + max_lag - len(r), o.n_bands), -np.inf), r])
    m, r = _floored(m), _floored(r)
    m_z = _standardised(m)
    best, best_lag = -1.0, 0
    for lag in range(max_lag + 1):
        segment = r[len(r) - n - lag: len(r) - lag]
        score = float((m_z * _standardised(segment)).sum(axis=0).mean())
        if score > best:
            best, best_lag = score, lag
    return EchoReading(score=best, lag_s=best_lag * _HOP / SAMPLE_RATE_HZ, is_echo=best >= o.threshold)


def reply_word_share(heard: str, reply_text: str) -> tuple[float, int]:
    """The share of the words heard that are words of the reply (each reply word matched once), and how many were heard."""
    heard_words = _WORD.findall(heard.lower())
    if not heard_words:
        return 0.0, 0
    available = Counter(_WORD.findall(reply_text.lower()))
    matched = 0
    for word in heard_words:
        if available[word] > 0:
            available[word] -= 1
            matched += 1
    return matched / len(heard_words), len(heard_words)


class BargeInReason(enum.Enum):
    """Why the reply was, or was not, cut short."""

    AVATAR_SILENT = "the avatar is not speaking"
    TOO_SHORT = "too little speech yet"
    ECHO_SOUND = "the microphone hears the reply's own sound"
    ECHO_WORDS = "the words heard are the reply's own"
    PERSON_SPEAKING = "the person is speaking"


@dataclass(frozen=True)
class BargeInOptions:
    """How much speech interrupts the avatar, and what counts as its echo."""

    min_voiced_s: float = 0.2
    echo: EchoOptions = field(default_factory=EchoOptions)

    def __post_init__(self) -> None:
        value = self.min_voiced_s
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and 0.0 < value <= 5.0):
            raise ConfigError(f"barge-in option min_voiced_s must be above 0 and at most 5 s, got {value!r}")
        if not isinstance(self.echo, EchoOptions):
            raise ConfigError(f"barge-in option echo must be an EchoOptions, got {type(self.echo).__name__}")


@dataclass(frozen=True)
class BargeIn:
    """The decision: cut the reply short or not, and what it rested on."""

    interrupt: bool
    reason: BargeInReason
    voiced_s: float
    echo: EchoReading | None  # None when the sound was not compared
    word_share: float | None  # None when there was no transcript with enough words

    def describe(self) -> str:
        """One line for the log: the reason with its numbers."""
        parts = [self.reason.value, f"voiced {self.voiced_s:.2f} s"]
        if self.echo is not None:
            parts.append(f"echo score {self.echo.score:.2f} at {self.echo.lag_s * 1000:.0f} ms")
        if self.word_share is not None:
            parts.append(f"{self.word_share:.0%} reply words")
        return "; ".join(parts)


def decide_barge_in(mic: np.ndarray, *, voiced_s: float, avatar_speaking: bool, reference: np.ndarray,
                    heard_text: str = "", reply_text: str = "", options: BargeInOptions | None = None) -> BargeIn:
    """Whether speech heard while the avatar talks should cut it short.

    ``mic`` is the open speech at 16 kHz (``Listener.speech_so_far``), ``voiced_s`` the endpointer's
    voiced time in it, ``reference`` what the avatar played meanwhile (``played_reference``),
    ``heard_text`` a partial transcript of ``mic`` if one exists and ``reply_text`` the reply's words
    spoken so far. It interrupts when there is ``min_voiced_s`` of speech whose sound is not the
    reply's and whose words (when known) are not mostly the reply's.
    """
    o = options or BargeInOptions()
    if not avatar_speaking:
        return BargeIn(False, BargeInReason.AVATAR_SILENT, voiced_s, None, None)
    if voiced_s < o.min_voiced_s:
        return BargeIn(False, BargeInReason.TOO_SHORT, voiced_s, None, None)
    echo = None
    if len(mic) >= o.echo.min_duration_s * SAMPLE_RATE_HZ:
        echo = echo_score(mic, reference, options=o.echo)
    share, n_words = reply_word_share(heard_text, reply_text)
    word_share = share if n_words >= o.echo.min_words else None
    if echo is not None and echo.is_echo:
        return BargeIn(False, BargeInReason.ECHO_SOUND, voiced_s, echo, word_share)
    if word_share is not None and word_share >= o.echo.word_share:
        return BargeIn(False, BargeInReason.ECHO_WORDS, voiced_s, echo, word_share)
    if echo is None:  # voiced enough, but too short to compare: wait for more audio
        return BargeIn(False, BargeInReason.TOO_SHORT, voiced_s, None, word_share)
    return BargeIn(True, BargeInReason.PERSON_SPEAKING, voiced_s, echo, word_share)


def _mono(samples: np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(samples)
    if array.ndim != 1 or array.dtype.kind != "f":
        raise InputError(f"{what} must be a 1-D float array of samples in -1..1, got {array.dtype} {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{what} holds NaN or infinite samples; expected finite values in -1..1")
    return array.astype(np.float32, copy=False)


def _band_db(samples: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Band energies in dB, [frames, bands]."""
    if len(samples) < _FRAME:
        samples = np.pad(samples, (0, _FRAME - len(samples)))
    n = 1 + (len(samples) - _FRAME) // _HOP
    index = np.arange(_FRAME)[None, :] + _HOP * np.arange(n)[:, None]
    power = np.abs(np.fft.rfft(samples[index] * np.hanning(_FRAME), axis=1)) ** 2
    freqs = np.fft.rfftfreq(_FRAME, 1.0 / SAMPLE_RATE_HZ)
    bands = [power[:, (freqs >= lo) & (freqs < hi)].sum(axis=1) for lo, hi in zip(edges[:-1], edges[1:])]
    return 10.0 * np.log10(np.stack(bands, axis=1) + 1e-12)


def _floored(db: np.ndarray) -> np.ndarray:
    finite = db[np.isfinite(db)]
    peak = float(finite.max()) if finite.size else 0.0
    return np.maximum(np.nan_to_num(db, neginf=-1e9), peak - _FLOOR_DB)


def _standardised(values: np.ndarray) -> np.ndarray:
    """Each column minus its mean, scaled to unit length (a constant column stays zero)."""
    centred = values - values.mean(axis=0)
    norm = np.linalg.norm(centred, axis=0)
    return centred / np.where(norm > 1e-9, norm, 1.0)
