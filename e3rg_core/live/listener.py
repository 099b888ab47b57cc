"""One conversation's ear in hands-free mode: microphone pieces in, finished utterances (with words) out.

The ``Listener`` takes the pieces the browser streams (WAV bytes, a WAV file, or samples), resamples
them to 16 kHz with a streaming resampler (soxr, so piece edges leave no clicks), and runs the
``Endpointer`` over them. It keeps the audio of the open turn plus ``pre_roll_s`` before it, since
the first syllable is under way before Silero is sure of it. When a turn ends it writes the turn as a
16 kHz WAV and returns an ``Utterance``.

Recognition runs while the person is still speaking, so that little is left at the pause. With a
transcriber, each ``partial_every_s`` of new speech, and once more as soon as a pause begins
(``early_pause_s``), everything heard so far is recognised on a worker thread, one recognition at a
time. When the turn ends, the newest recognition is kept if it already covers the last word;
otherwise the final audio is recognised once. ``Utterance.transcript_wait_s`` is the wall time from
detecting the end to having the words.

Whisper pads every clip to its 30-s window, so a recognition costs about the same whatever its
length: 0.8-1.3 s for Whisper base on the 2-core development machine. Recognising every second keeps
the one thread busy, and the pause then often finds it in the middle of a recognition that ends
before the last word. Measured on six sentences of the embedded voices fed in real time as Gradio's
0.5-s pieces (two runs, mean wait after the end was detected): recognition only at the end 1.48 and
1.98 s; every 1 s plus at a 0.2-s pause 0.88 and 1.02 s; every 2 s plus at a 0.15-s pause (the
defaults) 0.73 and 0.61 s, the last recognition reused for 5 of 6 sentences; only at a 0.15-s pause
0.64 and 0.45 s, but with no words to show while someone speaks.
"""

from __future__ import annotations

import enum
import logging
import math
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from e3rg_core.errors import BackendUnavailable, ConfigError, E3rgError, InputError
from e3rg_core.live.chunks import from_array, parse_wav, read_wav_file
from e3rg_core.live.vad import SAMPLE_RATE_HZ, Endpointer, EndpointerOptions, SpeechEnd, SpeechStart
from e3rg_core.media.audio import Audio, write_wav

if TYPE_CHECKING:
    from e3rg_core.perception.asr import Transcript

logger = logging.getLogger(__name__)

#: Recognises a 16 kHz mono WAV: ``WhisperTranscriber.transcribe`` is one.
Transcribe = Callable[[Path], "Transcript"]
#: The longest piece one call accepts: the browser sends a fraction of a second at a time.
MAX_PIECE_S = 60.0


class ListenerState(enum.Enum):
    """What the page shows while the microphone is open."""

    LISTENING = "listening"
    HEARING_SPEECH = "hearing speech"


@dataclass(frozen=True)
class ListenerOptions:
    """How turns are cut out of the stream and how often recognition runs while someone speaks."""

    endpointer: EndpointerOptions = field(default_factory=EndpointerOptions)  # max_speech_s cuts long turns
    pre_roll_s: float = 0.3  # kept before the detected start: Silero is sure of speech a little late
    post_roll_s: float = 0.2  # kept after the detected end
    partial_every_s: float = 2.0  # new audio between two recognitions while the person speaks
    early_pause_s: float = 0.15  # this long with no voiced window starts a recognition of all heard so far

    def __post_init__(self) -> None:
        if not isinstance(self.endpointer, EndpointerOptions):
            raise ConfigError(f"listener option endpointer must be an EndpointerOptions, got "
                              f"{type(self.endpointer).__name__}")
        limits = {"pre_roll_s": (0.0, 2.0), "post_roll_s": (0.0, 2.0), "partial_every_s": (0.2, 30.0),
                  "early_pause_s": (0.0, 10.0)}
        for name, (lo, hi) in limits.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and lo <= value <= hi):
                raise ConfigError(f"listener option {name} must be a number from {lo:g} to {hi:g} s, got {value!r}")
        if self.post_roll_s > self.endpointer.end_pause_s:
            raise ConfigError(f"listener option post_roll_s ({self.post_roll_s} s) must be at most the "
                              f"endpointer's end_pause_s ({self.endpointer.end_pause_s} s): there is no more "
                              "audio after the turn when it ends")


@dataclass(frozen=True)
class Utterance:
    """A finished turn: its 16 kHz WAV, where it lies in the stream, and its words when recognition ran."""

    wav_path: Path  # 16 kHz mono 16-bit PCM: pre_roll_s before the start to post_roll_s after the end (none if cut)
    start_s: float  # the speech's start, seconds on the listener's clock (16 kHz audio heard so far)
    end_s: float  # where the pause began (or the cut)
    duration_s: float  # of the WAV
    cut: bool  # stopped at the endpointer's max_speech_s while the person was still speaking
    transcript: Transcript | None  # None without a transcriber, or when recognition failed
    transcript_wait_s: float | None  # wall time from detecting the end until the transcript was ready
    partials: int  # recognitions run while the person was speaking
    partial_reused: bool  # the transcript is the last of those (nothing was said after it)

    sample_rate_hz = SAMPLE_RATE_HZ


@dataclass(frozen=True)
class SpeechSoFar:
    """The open candidate or turn, for a barge-in check while the avatar speaks."""

    samples: np.ndarray  # 16 kHz float32, from its start (no pre-roll) to now
    start_s: float
    voiced_s: float
    confirmed: bool  # long enough to be a turn
    partial_text: str  # the newest recognition of it, "" if none has finished


@dataclass(frozen=True)
class _Recognition:
    until: int  # the sample (listener clock) the recognised audio ran to
    future: Future


class Listener:
    """Turns one conversation's microphone stream into utterances; pieces from one stream at a time."""

    def __init__(self, folder: Path, *, transcribe: Transcribe | None = None,
                 options: ListenerOptions | None = None, on_end: Callable[[SpeechEnd], None] | None = None) -> None:
        """Write utterances into ``folder``; recognise them with ``transcribe`` when given.

        ``on_end`` is called on the feeding thread as soon as a turn's end is detected, before its last
        words are recognised (so a caller can start what follows the turn while they are).
        """
        self.folder = Path(folder)
        self._on_end = on_end
        self.folder.mkdir(parents=True, exist_ok=True)
        self.options = options or ListenerOptions()
        self._transcribe = transcribe
        self._endpointer = Endpointer(self.options.endpointer)
        self._lock = threading.Lock()
        self._resampler = None
        self._input_rate_hz: int | None = None
        self._audio = np.zeros(0, dtype=np.float32)
        self._audio_start = 0  # the clock sample of _audio[0]
        self._clock = 0  # 16 kHz samples heard
        self._n_utterances = 0
        self._pool: ThreadPoolExecutor | None = None
        self._running: _Recognition | None = None
        self._newest: tuple[int, Transcript] | None = None  # the last finished recognition of the open turn
        self._submitted_until = 0
        self._partials = 0
        self._speaking = False
        self._closed = False

    # --- what the page shows -------------------------------------------------------------------

    @property
    def state(self) -> ListenerState:
        """Listening, or hearing a confirmed turn."""
        return ListenerState.HEARING_SPEECH if self._speaking else ListenerState.LISTENING

    @property
    def is_speaking(self) -> bool:
        """The person is in the middle of a turn."""
        return self._speaking

    @property
    def heard_s(self) -> float:
        """Seconds of audio heard since the listener was made."""
        return self._clock / SAMPLE_RATE_HZ

    @property
    def partial_text(self) -> str:
        """The newest recognition of the open turn ("" if none)."""
        newest = self._newest
        return newest[1].text if newest is not None else ""

    # --- feeding -------------------------------------------------------------------------------

    def feed_wav(self, data: bytes) -> list[Utterance]:
        """Hear one WAV piece as Gradio streams it (its header may carry the first piece's lengths)."""
        return self._feed(parse_wav(data))

    def feed_file(self, path: Path) -> list[Utterance]:
        """Hear one WAV piece saved to a file (Gradio's ``type="filepath"``)."""
        return self._feed(read_wav_file(Path(path)))

    def feed_samples(self, samples: np.ndarray, *, sample_rate_hz: int) -> list[Utterance]:
        """Hear samples (Gradio's ``type="numpy"``: int16 or float, [n] or [n, channels])."""
        return self._feed(from_array(samples, sample_rate_hz=sample_rate_hz))

    def flush(self) -> list[Utterance]:
        """The microphone stopped: end an open turn now (a candidate too short for a turn is dropped)."""
        with self._lock:
            self._check_open()
            tail = np.zeros(0, dtype=np.float32)
            if self._resampler is not None:
                tail = np.asarray(self._resampler.resample_chunk(tail, last=True), dtype=np.float32)
                self._resampler, self._input_rate_hz = None, None
            utterances = self._hear(tail)
            utterances += [self._finish(event) for event in self._endpointer.flush()]
            self._speaking = False
            self._trim()
            return utterances

    def discard(self) -> None:
        """Drop the open candidate or turn with no utterance (it was the avatar's own voice)."""
        with self._lock:
            self._endpointer.drop()
            self._speaking = False
            self._reset_turn()
            self._trim()

    def speech_so_far(self) -> SpeechSoFar | None:
        """The open candidate or turn, or None when all is quiet."""
        with self._lock:
            start_s = self._endpointer.open_start_s
            if start_s is None:
                return None
            start = max(self._sample(start_s), self._audio_start)
            return SpeechSoFar(samples=self._audio[start - self._audio_start:].copy(), start_s=start_s,
                               voiced_s=self._endpointer.voiced_s, confirmed=self._endpointer.speaking,
                               partial_text=self.partial_text)

    def wait_for_recognition(self, timeout_s: float | None = None) -> bool:
        """Wait until the recognition running now, if any, is done (``partial_text`` is then its words).

        True when no recognition is running any more; False when ``timeout_s`` passed first.
        """
        running = self._running
        if running is not None:
            wait([running.future], timeout=timeout_s)
        with self._lock:
            self._collect()
            return self._running is None

    def close(self) -> None:
        """Stop the recognition thread (waiting for a running recognition); the listener takes no more audio."""
        with self._lock:
            self._closed = True
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- inside --------------------------------------------------------------------------------

    def _feed(self, piece: Audio) -> list[Utterance]:
        if piece.duration_s > MAX_PIECE_S:
            raise InputError(f"a microphone piece of {piece.duration_s:.1f} s is too long; "
                             f"pieces of up to {MAX_PIECE_S:g} s are accepted")
        with self._lock:
            self._check_open()
            return self._hear(self._resample(piece))

    def _check_open(self) -> None:
        if self._closed:
            raise InputError("this listener is closed; start a new conversation to listen again")

    def _resample(self, piece: Audio) -> np.ndarray:
        rate = piece.sample_rate_hz
        out = []
        if rate != self._input_rate_hz:
            if self._resampler is not None:  # the stream changed rate: finish the old one
                out.append(self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
            self._resampler = None if rate == SAMPLE_RATE_HZ else _resample_stream(rate)
            self._input_rate_hz = rate
        out.append(piece.samples if self._resampler is None else self._resampler.resample_chunk(piece.samples))
        return np.concatenate([np.asarray(part, dtype=np.float32) for part in out])

    def _hear(self, audio: np.ndarray) -> list[Utterance]:
        self._audio = np.concatenate([self._audio, audio]) if len(self._audio) else audio.copy()
        self._clock += len(audio)
        utterances = []
        for event in self._endpointer.feed(audio):
            if isinstance(event, SpeechStart):
                logger.debug("speech from %.2f s (sure at %.2f s)", event.start_s, event.at_s)
                self._reset_turn()
                self._submitted_until = self._sample(event.start_s)
            elif isinstance(event, SpeechEnd):
                utterances.append(self._finish(event))
        self._speaking = self._endpointer.speaking
        if self._speaking:
            self._maybe_recognise()
        self._trim()
        return utterances

    def _maybe_recognise(self) -> None:
        if self._transcribe is None:
            return
        self._collect()
        if self._running is not None:
            return
        new_s = (self._clock - self._submitted_until) / SAMPLE_RATE_HZ
        last_voiced_s = self._endpointer.last_voiced_s or 0.0
        quiet_s = self._endpointer.now_s - last_voiced_s
        early = quiet_s >= self.options.early_pause_s and self._submitted_until < self._sample(last_voiced_s)
        if new_s < self.options.partial_every_s and not early:
            return
        start = max(self._sample(self._endpointer.open_start_s) - self._sample(self.options.pre_roll_s),
                    self._audio_start)
        segment = self._audio[start - self._audio_start:].copy()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e3rg-listener")
        logger.debug("recognising %.2f s heard up to %.2f s (%s)", len(segment) / SAMPLE_RATE_HZ, self.heard_s,
                     "pause" if early else "periodic")
        self._running = _Recognition(until=self._clock, future=self._pool.submit(self._recognise, segment))
        self._submitted_until = self._clock
        self._partials += 1

    def _recognise(self, segment: np.ndarray) -> Transcript:
        path = self.folder / f".partial-{uuid.uuid4().hex[:12]}.wav"
        try:
            write_wav(path, segment, SAMPLE_RATE_HZ)
            return self._transcribe(path)
        finally:
            path.unlink(missing_ok=True)

    def _collect(self, *, wait: bool = False) -> None:
        """Take the running recognition's result if it is done (or when it is, with ``wait``)."""
        running = self._running
        if running is None or not (wait or running.future.done()):
            return
        self._running = None
        try:
            self._newest = (running.until, running.future.result())
        except E3rgError as exc:  # the final recognition tries again
            logger.warning("recognition while listening failed: %s", exc)

    def _finish(self, event: SpeechEnd) -> Utterance:
        detected = time.perf_counter()
        if self._on_end is not None:
            self._on_end(event)
        o = self.options
        start, end = self._sample(event.start_s), self._sample(event.end_s)
        last_voiced = self._sample(event.last_voiced_s)
        lo = max(start - self._sample(o.pre_roll_s), self._audio_start)
        post_roll = 0 if event.cut else self._sample(o.post_roll_s)  # after a cut the next utterance goes on
        hi = min(end + post_roll, self._audio_start + len(self._audio))
        clip = self._audio[lo - self._audio_start: hi - self._audio_start]
        self._n_utterances += 1
        path = self.folder / f"utterance-{self._n_utterances:04d}.wav"
        write_wav(path, clip, SAMPLE_RATE_HZ)
        transcript, wait_s, reused = None, None, False
        if self._transcribe is not None:
            self._collect(wait=True)
            if self._newest is not None and self._newest[0] >= last_voiced:  # nothing said after it
                transcript, reused = self._newest[1], True
            else:
                try:
                    transcript = self._transcribe(path)
                except E3rgError as exc:
                    logger.warning("recognition of %s failed: %s", path.name, exc)
            wait_s = time.perf_counter() - detected
        utterance = Utterance(wav_path=path, start_s=event.start_s, end_s=event.end_s,
                              duration_s=len(clip) / SAMPLE_RATE_HZ, cut=event.cut, transcript=transcript,
                              transcript_wait_s=wait_s, partials=self._partials, partial_reused=reused)
        logger.info("utterance %s: %.2f-%.2f s%s, words ready %s after the pause", path.name, event.start_s,
                    event.end_s, " (cut)" if event.cut else "",
                    "-" if wait_s is None else f"{wait_s:.2f} s")
        self._reset_turn()
        return utterance

    def _reset_turn(self) -> None:
        self._running = None  # a recognition still running is of audio no longer wanted: its words are dropped
        self._newest = None
        self._partials = 0
        self._submitted_until = self._clock

    def _trim(self) -> None:
        open_start = self._endpointer.open_start_s
        # not the clock: the samples of a window not yet complete may still open a turn
        keep_from = self._sample(open_start if open_start is not None else self._endpointer.now_s)
        keep_from -= self._sample(self.options.pre_roll_s)
        if keep_from > self._audio_start:
            self._audio = self._audio[keep_from - self._audio_start:].copy()
            self._audio_start = keep_from

    @staticmethod
    def _sample(seconds: float) -> int:
        return int(round(seconds * SAMPLE_RATE_HZ))


def _resample_stream(rate_hz: int):
    try:
        import soxr
    except ImportError as exc:
        raise BackendUnavailable(f"resampling the microphone to 16 kHz needs soxr ({exc}); "
                                 "install it with: pip install soxr") from exc
    return soxr.ResampleStream(rate_hz, SAMPLE_RATE_HZ, 1, dtype="float32")
