"""Where a turn of speech starts and ends in a live microphone stream: Silero VAD with hysteresis.

The model is the Silero VAD v6 that ships inside faster-whisper (``faster_whisper/assets``), loaded
once per process by faster-whisper's own ``get_vad_model``. faster-whisper runs it over a whole clip
from a fresh state; the ``Endpointer`` runs the same ONNX session window by window instead (512
samples, 32 ms, each with the 64 samples before it as context) and carries the LSTM state and the
context from one piece of audio to the next, so pieces of any size give the probabilities the whole
clip would (checked in the tests).

From those probabilities it decides, as the audio comes:

* a *candidate* opens at the first window at or above ``threshold``;
* it becomes speech (``SpeechStart``) once ``min_speech_s`` of its windows were at or above
  ``threshold``: a click, a cough or a note of music that Silero half-believes never gets there;
  a candidate with no such window for ``end_pause_s`` is dropped;
* speech ends (``SpeechEnd``) after ``end_pause_s`` of windows below ``release_threshold``; windows
  between the two thresholds neither start nor break a pause (Silero's own hysteresis);
* speech longer than ``max_speech_s`` is cut there (``SpeechEnd.cut``) and a new turn may open.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from e3rg_core.errors import BackendUnavailable, ConfigError, InputError

logger = logging.getLogger(__name__)

SAMPLE_RATE_HZ = 16000  # the only rate Silero VAD v6 in faster-whisper is run at
WINDOW_SAMPLES = 512  # 32 ms: the window Silero VAD takes at 16 kHz
CONTEXT_SAMPLES = 64  # the end of the previous window, prepended to each
WINDOW_S = WINDOW_SAMPLES / SAMPLE_RATE_HZ
_STATE_SHAPE = (1, 1, 128)
INSTALL = "pip install faster-whisper==1.2.1 onnxruntime==1.32.0"


@dataclass(frozen=True)
class EndpointerOptions:
    """When speech counts as a turn: probability thresholds and durations, in seconds."""

    threshold: float = 0.5  # a window at or above this is speech
    release_threshold: float = 0.35  # a window below this is silence; between the two keeps what was
    min_speech_s: float = 0.25  # voiced time a candidate needs before it is a turn
    end_pause_s: float = 0.6  # silence that ends a turn
    max_speech_s: float = 30.0  # a turn longer than this is cut and handed over

    def __post_init__(self) -> None:
        for name in ("threshold", "release_threshold", "min_speech_s", "end_pause_s", "max_speech_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"endpointer option {name} must be a finite number, got {value!r}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"endpointer threshold must be between 0 and 1 (exclusive), got {self.threshold}")
        if not 0.0 < self.release_threshold <= self.threshold:
            raise ConfigError(f"endpointer release_threshold must be above 0 and at most threshold "
                              f"({self.threshold}), got {self.release_threshold}")
        if not WINDOW_S <= self.min_speech_s <= 5.0:
            raise ConfigError(f"endpointer min_speech_s must be from {WINDOW_S:g} (one window) to 5 s, "
                              f"got {self.min_speech_s}")
        if not WINDOW_S <= self.end_pause_s <= 10.0:
            raise ConfigError(f"endpointer end_pause_s must be from {WINDOW_S:g} (one window) to 10 s, "
                              f"got {self.end_pause_s}")
        if not self.min_speech_s < self.max_speech_s <= 600.0:
            raise ConfigError(f"endpointer max_speech_s must be above min_speech_s ({self.min_speech_s} s) "
                              f"and at most 600 s, got {self.max_speech_s}")


@dataclass(frozen=True)
class SpeechStart:
    """Speech began at ``start_s``; known at ``at_s`` (seconds on the endpointer's clock)."""

    start_s: float
    at_s: float


@dataclass(frozen=True)
class SpeechEnd:
    """The turn ``start_s``..``end_s`` is over; known at ``at_s``. ``cut``: stopped at ``max_speech_s``."""

    start_s: float
    end_s: float  # where the pause began, or where it was cut
    at_s: float
    voiced_s: float  # windows at or above the threshold
    last_voiced_s: float  # the end of the last of them: no speech came after it
    cut: bool


VadEvent = SpeechStart | SpeechEnd


def silero_model() -> Any:
    """faster-whisper's Silero VAD (one ONNX session per process, safe to run from several threads)."""
    try:
        from faster_whisper.vad import get_vad_model
    except ImportError as exc:
        raise BackendUnavailable(f"voice activity detection needs faster-whisper ({exc}); install: {INSTALL}") from exc
    try:
        return get_vad_model()
    except RuntimeError as exc:  # faster-whisper's wording when onnxruntime is missing
        raise BackendUnavailable(f"cannot load Silero VAD: {exc}; install: {INSTALL}") from exc


class Endpointer:
    """Finds turns of speech in 16 kHz mono float32 audio fed in pieces of any size (one stream, one thread)."""

    def __init__(self, options: EndpointerOptions | None = None) -> None:
        self.options = options or EndpointerOptions()
        self._session = silero_model().session
        self.reset()

    def reset(self) -> None:
        """Forget the stream: the model state, the clock and any open turn."""
        self._h = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._c = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)  # less than one window, waiting for more
        self._n_windows = 0
        self._start: int | None = None  # window index where the open candidate or turn began
        self._confirmed = False
        self._voiced = 0  # windows at or above threshold in the open candidate or turn
        self._last_voiced: int | None = None  # window index after the last voiced one
        self._pause: int | None = None  # window index where the current pause began
        self.last_probability = 0.0

    # --- what the stream holds now ---------------------------------------------------------------

    @property
    def now_s(self) -> float:
        """Seconds of audio judged so far (whole windows)."""
        return self._n_windows * WINDOW_S

    @property
    def speaking(self) -> bool:
        """A turn has been confirmed and has not ended."""
        return self._confirmed

    @property
    def open_start_s(self) -> float | None:
        """Where the open candidate or turn began, or None."""
        return None if self._start is None else self._start * WINDOW_S

    @property
    def voiced_s(self) -> float:
        """Voiced time in the open candidate or turn (0 when none is open)."""
        return self._voiced * WINDOW_S

    @property
    def last_voiced_s(self) -> float | None:
        """The end of the open candidate's or turn's last voiced window, or None."""
        return None if self._last_voiced is None else self._last_voiced * WINDOW_S

    @property
    def pause_s(self) -> float:
        """How long the open turn has been silent (0 when it is not, or none is open)."""
        return 0.0 if self._pause is None else (self._n_windows - self._pause) * WINDOW_S

    # --- feeding -------------------------------------------------------------------------------

    def feed(self, samples: np.ndarray) -> list[VadEvent]:
        """Judge more audio (16 kHz mono float32 in -1..1); returns the starts and ends it completed."""
        samples = _check_samples(samples)
        audio = np.concatenate([self._pending, samples]) if len(self._pending) else samples
        n = len(audio) // WINDOW_SAMPLES
        self._pending = audio[n * WINDOW_SAMPLES:].copy()
        if n == 0:
            return []
        windows = audio[: n * WINDOW_SAMPLES].reshape(n, WINDOW_SAMPLES)
        contexts = np.concatenate([self._context[None, :], windows[:-1, -CONTEXT_SAMPLES:]], axis=0)
        self._context = windows[-1, -CONTEXT_SAMPLES:].copy()
        batch = np.ascontiguousarray(np.concatenate([contexts, windows], axis=1), dtype=np.float32)
        probs, self._h, self._c = self._session.run(None, {"input": batch, "h": self._h, "c": self._c})
        events: list[VadEvent] = []
        for p in np.asarray(probs, dtype=np.float32).reshape(-1):
            event = self._step(float(p))
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[VadEvent]:
        """The stream has stopped: end an open turn where its pause began (or now); drop a candidate."""
        event = None
        if self._confirmed:
            end = self._pause if self._pause is not None else self._n_windows
            event = self._end(end, cut=False)
        self._close()
        return [event] if event is not None else []

    def drop(self) -> None:
        """Forget the open candidate or turn without an event (e.g. it was the avatar's own voice)."""
        self._close()

    def _step(self, p: float) -> VadEvent | None:
        o = self.options
        i = self._n_windows
        self._n_windows += 1
        self.last_probability = p
        if self._start is None:
            if p >= o.threshold:
                self._start, self._voiced, self._last_voiced, self._pause = i, 1, i + 1, None
                return self._maybe_confirm()
            return None
        if p >= o.threshold:
            self._voiced += 1
            self._last_voiced = i + 1
            self._pause = None
        elif p < o.release_threshold and self._pause is None:
            self._pause = i
        if not self._confirmed:
            if (i + 1 - self._last_voiced) * WINDOW_S >= o.end_pause_s - 1e-9:
                logger.debug("dropped %.2f s of sound with %.2f s voiced: too little to be a turn",
                             (i + 1 - self._start) * WINDOW_S, self.voiced_s)
                self._close()
                return None
            return self._maybe_confirm()
        if self._pause is not None and (i + 1 - self._pause) * WINDOW_S >= o.end_pause_s - 1e-9:
            event = self._end(self._pause, cut=False)
            self._close()
            return event
        if (i + 1 - self._start) * WINDOW_S >= o.max_speech_s - 1e-9:
            event = self._end(i + 1, cut=True)
            self._close()
            return event
        return None

    def _maybe_confirm(self) -> SpeechStart | None:
        if self._voiced * WINDOW_S >= self.options.min_speech_s - 1e-9:
            self._confirmed = True
            return SpeechStart(start_s=self._start * WINDOW_S, at_s=self.now_s)
        return None

    def _end(self, end_window: int, *, cut: bool) -> SpeechEnd:
        return SpeechEnd(start_s=self._start * WINDOW_S, end_s=end_window * WINDOW_S, at_s=self.now_s,
                         voiced_s=self.voiced_s, last_voiced_s=self._last_voiced * WINDOW_S, cut=cut)

    def _close(self) -> None:
        self._start, self._confirmed, self._voiced, self._last_voiced, self._pause = None, False, 0, None, None


def _check_samples(samples: np.ndarray) -> np.ndarray:
    array = np.asarray(samples)
    if array.ndim != 1:
        raise InputError(f"the endpointer takes mono audio as a 1-D array, got shape {array.shape}")
    if array.dtype.kind != "f":
        raise InputError(f"the endpointer takes float samples in -1..1 at {SAMPLE_RATE_HZ} Hz, got {array.dtype}")
    array = array.astype(np.float32, copy=False)
    if not np.all(np.isfinite(array)):
        raise InputError("the audio holds NaN or infinite samples; expected finite values in -1..1")
    return array
