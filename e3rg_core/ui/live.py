"""Hands-free talk on the page (issue 23), without gradio: one ``Room`` per open page.

The page streams its microphone in pieces (``LiveRooms.hear``). The room's ``Listener``
(``e3rg_core.live``) finds where the person starts and stops speaking and recognises the words while
they speak; a finished utterance waits in the room under an id until the page asks for its turn
(``take``). While the avatar's voice plays (the page says where its player is), speech that is the
person's and not the reply coming back through the speakers cuts the reply short: the room's
``TurnControl`` stops the turn still being made, and the page pauses its player at that point
(``LiveUpdate.barge_in``). Echo that the browser's own echo cancellation lets through is dropped.

A room lives as long as its page sends pieces; rooms idle for ``IDLE_S`` are closed, and there are
at most ``MAX_ROOMS`` (the oldest idle one goes first).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import shutil
import threading
import time
import uuid
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from e3rg_core.errors import E3rgError, InputError
from e3rg_core.live import (BargeInReason, Interruption, Listener, ListenerOptions, TurnControl, Utterance,
                            decide_barge_in, played_reference)
from e3rg_core.live.listener import Transcribe
from e3rg_core.live.vad import SpeechEnd

logger = logging.getLogger(__name__)

IDLE_S = 1800.0
OTHER_TAB_S = 10.0  # a page that sent a microphone piece this recently is listening
FEED_WAIT_S = 0.05  # how long a piece may wait to be heard before its answer goes back to the page
TAKE_WAIT_S = 60.0  # the longest a turn waits for its utterance's words
_FLUSH = object()
#: the page's listener recognises speech once, 0.15 s into each pause, not every 2 s as well: a pass
#: still running when the pause comes delays the one that ends the turn (six sentences in real time,
#: 30-s windows, mean wait after the pause: 0.64 / 0.45 s pause-only against 0.73 / 0.61 s with passes
#: every 2 s)
HANDS_FREE = ListenerOptions(partial_every_s=30.0)
#: Whisper reads a hands-free utterance in a 10-s window (at least 5 s longer than the utterance), not
#: its 30-s one (``WhisperTranscriber.transcribe(window_s=...)``), so the recognition begun 0.15 s into
#: the pause ends before the 0.6-s pause does. On 48 clips (12 sentences in the embedded voice and in
#: espeak-ng, clean and with noise; 2 cores, load about 2.4): median 0.27 s against 1.22 s, the word
#: error rate 0.093 both (embedded voice, clean: 0.021 against 0.000: 'I got the job up.'); 8-s
#: windows took up to 2.8 s on one clip (a loop), 12-s ones made more errors (0.106)
RECOGNITION_WINDOW_S = 10.0


def listener_options(pause_s: float, max_recording_s: float) -> ListenerOptions:
    """``HANDS_FREE`` with the configured pause that ends a turn (``ui.pause_s``) and the longest turn (a second
    under ``ui.max_recording_s``, so the turn's recording with its pre- and post-roll is accepted)."""
    from e3rg_core.live import EndpointerOptions

    endpointer = dataclasses.replace(EndpointerOptions(), end_pause_s=float(pause_s),
                                     max_speech_s=float(max_recording_s) - 1.0)  # with the rolls, a turn fits it
    return dataclasses.replace(HANDS_FREE, endpointer=endpointer)
MAX_ROOMS = 64
SAMPLE_RATE_HZ = 16000
#: what the page shows of a hands-free conversation
STATUS_TEXT = {"off": "Hands-free is off: press the microphone's record button to talk.",
               "listening": "👂 Listening…", "hearing": "👂 Hearing you…", "thinking": "💭 Thinking…",
               "speaking": "🗣 Speaking… (talk to interrupt)"}


@dataclass(frozen=True)
class LiveUpdate:
    """What one microphone piece changed."""

    status: str  # "listening" or "hearing"
    utterance: str | None = None  # the id of a finished utterance to answer (``LiveRooms.take``)
    barge_in: float | None = None  # the person cut the reply short at this playback time (seconds)
    note: str = ""  # why speech was set aside (the reply's own echo), for the log and the page
    cut: Interruption | None = None  # with barge_in: what of the reply had been said
    stored: tuple[str, str] | None = None  # with barge_in: (conversation id, turn id) if the reply was stored


class Room:
    """One page's hands-free state: its listener, its reply, the utterances waiting for a turn.

    Microphone pieces are heard in order on the room's own thread, so a piece never waits for the
    recognition that ends the last turn, and none is dropped while it runs. The page is told of an
    utterance as soon as its pause is heard, while its last words are still being recognised, so that
    its turn is on its way meanwhile (``LiveRooms.take`` waits for the words); an utterance heard while
    the avatar speaks is told once its words say it is not the reply's own echo.
    """

    def __init__(self, folder: Path, *, transcribe: Transcribe | None = None,
                 options: ListenerOptions | None = None) -> None:
        self.folder = folder
        self.listener = Listener(folder, transcribe=transcribe, options=options, on_end=self._ended)
        self.control = TurnControl()
        self.ready: dict[str, Future] = {}  # utterances (or their recognition still running) until their turn takes them
        self.voice: list[np.ndarray] = []  # the reply's spoken pieces at 16 kHz (echo reference)
        self.reply_text = ""
        self.stored: tuple[str, str] | None = None  # (conversation id, turn id) of the reply once stored
        self.lock = threading.Lock()
        self.touched = time.monotonic()
        self.busy = 0  # turns of this page being answered
        self.conversation = ""  # the conversation this page talks in
        self.listening = False  # its microphone is open (the LLM then shares the cores: e3rg_core.cores.share)
        self.shown = ""  # the status the page was last told
        self._inbox: queue.Queue = queue.Queue()
        self._waiting: list[str] = []  # ids of finished utterances the page has not been told of
        self._early: list[Future] = []  # utterances told at the pause, their words still being recognised (in order)
        self._replying = False  # the avatar's voice plays on the page (the piece being heard says)
        self._barge: LiveUpdate | None = None  # a barge-in the page has not been told of
        self._failure: Exception | None = None
        self._note = ""
        self._first_piece_at: float | None = None  # when the first microphone piece was heard (monotonic)
        self._thread = threading.Thread(target=self._work, name="e3rg-listener", daemon=True)
        self._thread.start()

    def changed(self, status: str) -> bool:
        """Whether the page must be told ``status`` (it is told each status once)."""
        with self.lock:
            fresh, self.shown = status != self.shown, status
            return fresh

    def begin_reply(self) -> Any:
        """A new reply starts: the last one (if it still plays) is over."""
        with self.lock:
            self.voice, self.reply_text, self.stored = [], "", None
            return self.control.begin()

    def add_piece(self, wav_path: str, text: str) -> None:
        """A piece of the reply's voice goes to the page (kept to tell its echo from the person).

        It is read on the room's thread, before the next microphone piece, so that the page gets the
        piece without waiting for it to be decoded here.
        """
        with self.lock:
            reply = self.control.current
        self._inbox.put(_VoicePiece(Path(wav_path), text, reply.turn if reply is not None else 0))

    def behind(self) -> bool:
        """The room's thread has pieces (or reply voice) still to hear."""
        return self._inbox.qsize() > 0

    def submit(self, chunk: Any, playing: bool, position_s: float) -> threading.Event:
        done = threading.Event()
        self._inbox.put((chunk, playing, position_s, done))
        return done

    def collect(self) -> LiveUpdate:
        """What changed since the page was last told: a barge-in, a finished utterance, the status."""
        with self.lock:
            failure, self._failure = self._failure, None
            if failure is not None:
                raise failure
            idle = "thinking" if self.busy else "listening"
            status = "hearing" if self.listener.is_speaking else idle
            barge, self._barge = self._barge, None
            utterance = self._waiting.pop(0) if self._waiting else None
            note, self._note = self._note, ""
            if barge is not None:
                return dataclasses.replace(barge, utterance=utterance, status=status, note=note or barge.note)
            return LiveUpdate(status="thinking" if utterance else status, utterance=utterance, note=note)

    def close(self) -> None:
        _listening(self, False)
        self._inbox.put(None)
        self._thread.join(timeout=5)
        self._fail_early(InputError("hands-free talk stopped before the words were recognised; talk again"))
        try:
            self.listener.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _work(self) -> None:
        while (item := self._inbox.get()) is not None:
            if isinstance(item, _VoicePiece):
                self._keep_voice(item)
                continue
            chunk, playing, position_s, done = item
            try:
                self._hear(chunk, playing, position_s)
            except Exception as exc:  # noqa: BLE001 - told to the page with the next piece
                failure = exc if isinstance(exc, E3rgError) else InputError(
                    f"could not hear that piece of the microphone ({type(exc).__name__})")
                with self.lock:
                    self._failure = failure
                self._fail_early(failure)
                if not isinstance(exc, E3rgError):
                    logger.exception("hands-free listening failed")
            finally:
                done.set()

    def _keep_voice(self, piece: _VoicePiece) -> None:
        from e3rg_core.media.audio import read_audio

        try:
            audio = read_audio(piece.wav_path)
        except Exception as exc:  # noqa: BLE001 - the room's thread goes on; the echo check with the pieces it has
            logger.warning("could not read the reply's voice piece %s: %s", piece.wav_path.name, exc)
            return
        samples = audio.samples
        if audio.sample_rate_hz != SAMPLE_RATE_HZ:
            import soxr

            samples = soxr.resample(samples, audio.sample_rate_hz, SAMPLE_RATE_HZ)
        with self.lock:
            current = self.control.current
            if current is not None and current.turn == piece.turn and not current.cancelled:  # its reply goes on
                self.voice.append(np.asarray(samples, dtype=np.float32))
                self.reply_text = piece.text

    def _ended(self, event: SpeechEnd) -> None:
        """The listener heard a turn's pause (on this room's thread): with the avatar silent, the page is told now."""
        if self._replying:
            return
        utterance_id, pending = uuid.uuid4().hex, Future()
        with self.lock:
            self.ready[utterance_id] = pending
            self._early.append(pending)
            self._waiting.append(utterance_id)

    def _hear(self, chunk: Any, playing: bool, position_s: float) -> None:
        with self.lock:
            self._replying = playing and bool(self.voice)
        if self._first_piece_at is None:
            self._first_piece_at = time.monotonic()
        utterances = _feed(self.listener, chunk)
        with self.lock:
            speaking = playing and bool(self.voice)
            if speaking and self.listener.is_speaking:
                self._check_barge_in(position_s)
            for utterance in utterances:
                early = self._early.pop(0) if self._early else None
                if early is None and speaking and self._barge is None and self._is_echo(utterance, position_s):
                    self._note = "the reply's own voice was heard; set aside"
                    continue
                # the microphone's audio against the time since its first piece: a growing gap is audio lost
                logger.info("heard %.2f s of speech; its words were ready %.2f s after the pause (%d partials%s); "
                            "the microphone gave %.1f s of audio in %.1f s",
                            utterance.end_s - utterance.start_s, utterance.transcript_wait_s or 0.0,
                            utterance.partials, ", the last reused" if utterance.partial_reused else "",
                            self.listener.heard_s, time.monotonic() - self._first_piece_at)
                if early is not None:
                    early.set_result(utterance)
                    continue
                utterance_id = uuid.uuid4().hex
                self.ready[utterance_id] = _done(utterance)
                self._waiting.append(utterance_id)

    def _fail_early(self, exc: Exception) -> None:
        """The utterances told at their pause will not come: their turns hear why."""
        with self.lock:
            for pending in self._early:
                pending.set_exception(exc)
            self._early = []

    def _check_barge_in(self, position_s: float) -> None:
        so_far = self.listener.speech_so_far()
        if so_far is None:
            return
        reference = self._reference(position_s, len(so_far.samples) / SAMPLE_RATE_HZ)
        decision = decide_barge_in(so_far.samples, voiced_s=so_far.voiced_s, avatar_speaking=True,
                                   reference=reference, heard_text=so_far.partial_text, reply_text=self.reply_text)
        if decision.interrupt:
            cut = self.control.interrupt(at_s=float(position_s))
            logger.info("barge-in at %.2f s: %s", position_s, decision.describe())
            self.voice = []  # the reply is over: what follows is the person's
            self._barge = LiveUpdate(status="hearing", barge_in=float(position_s), cut=cut, stored=self.stored)
        elif decision.reason in (BargeInReason.ECHO_SOUND, BargeInReason.ECHO_WORDS):
            self.listener.discard()
            self._note = decision.describe()

    def _is_echo(self, utterance: Utterance, position_s: float) -> bool:
        """A whole utterance heard while the reply played: the reply's own sound or words?"""
        from e3rg_core.media.audio import read_audio

        mic = read_audio(utterance.wav_path).samples
        reference = self._reference(position_s, len(mic) / SAMPLE_RATE_HZ)
        heard = utterance.transcript.text if utterance.transcript is not None else ""
        decision = decide_barge_in(mic, voiced_s=utterance.end_s - utterance.start_s, avatar_speaking=True,
                                   reference=reference, heard_text=heard, reply_text=self.reply_text)
        return decision.reason in (BargeInReason.ECHO_SOUND, BargeInReason.ECHO_WORDS)

    def _reference(self, position_s: float, duration_s: float) -> np.ndarray:
        voice = np.concatenate(self.voice) if self.voice else np.zeros(1, dtype=np.float32)
        return played_reference(voice, sample_rate_hz=SAMPLE_RATE_HZ, playback_s=max(0.0, float(position_s)),
                                duration_s=max(duration_s, 0.05))


class LiveRooms:
    """Every open page's ``Room``; ``transcribe`` makes the recogniser (loaded on first use)."""

    def __init__(self, root: Path, transcribe: Callable[[], Transcribe], *,
                 options: ListenerOptions | None = None) -> None:
        self.root = Path(root)
        self._transcribe = transcribe
        self.options = options or HANDS_FREE
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()

    def room(self, key: str) -> Room:
        """The page ``key``'s room (made on first use)."""
        if not key:
            raise InputError("hands-free talk needs a page session; reload the page")
        with self._lock:
            self._sweep()
            room = self._rooms.get(key)
            if room is None:
                folder = self.root / uuid.uuid4().hex
                room = Room(folder, transcribe=_sharing(self._transcribe()), options=self.options)
                self._rooms[key] = room
            room.touched = time.monotonic()
            return room

    def hear(self, key: str, chunk: Any, *, playing: bool = False, position_s: float = 0.0) -> LiveUpdate:
        """Feed one microphone piece: ``(rate, samples)`` as Gradio's numpy audio, or WAV bytes.

        ``playing``/``position_s``: whether the avatar's voice plays on the page, and where. The piece
        is heard on the room's thread; this waits for it at most ``FEED_WAIT_S`` (what it changes
        after that is told with the next piece), and not at all when the room is still hearing earlier
        pieces (it is recognising the last words of a turn): Gradio's microphone drops the pieces it
        records while one is unanswered.
        """
        room = self.room(key)
        behind = room.behind()
        heard = room.submit(chunk, playing, position_s)
        if not behind:
            heard.wait(FEED_WAIT_S)
        return room.collect()

    def open(self, key: str, conversation: str) -> str:
        """Page ``key`` starts listening in ``conversation``; a note when another open page listens in it too."""
        room = self.room(key)
        room.conversation = conversation
        _listening(room, True)
        with self._lock:
            others = [k for k, r in self._rooms.items() if k != key and conversation and r.conversation == conversation
                      and time.monotonic() - r.touched < OTHER_TAB_S]
        if others:
            return ("This conversation is open hands-free in another tab too: both add their turns to it. "
                    "Stop the microphone in one of them to talk in the other alone.")
        return ""

    def take(self, key: str, utterance_id: str) -> Utterance:
        """The finished utterance ``utterance_id`` of page ``key`` (each is answered once), once its words are
        recognised (the page is told of it at the pause, ``Room``)."""
        room = self.room(key)
        with room.lock:
            pending = room.ready.pop(str(utterance_id or ""), None)
        if pending is None:
            raise InputError("that utterance was answered already or never heard; keep talking")
        began = time.perf_counter()
        try:
            utterance = pending.result(timeout=TAKE_WAIT_S)
        except FutureTimeout:
            raise InputError("the words of what you said took too long to recognise; say it again") from None
        logger.info("the turn of %s waited %.2f s for its words", utterance.wav_path.name, time.perf_counter() - began)
        return utterance

    def stop(self, key: str) -> None:
        """The page stopped its microphone: what was being said ends there (and is answered); the room stays."""
        with self._lock:
            room = self._rooms.get(key)
        if room is not None:
            room.submit(_FLUSH, False, 0.0)
            _listening(room, False)

    def close(self, key: str) -> None:
        with self._lock:
            room = self._rooms.pop(key, None)
        if room is not None:
            room.close()

    def _sweep(self) -> None:
        now = time.monotonic()
        for touched, key in sorted((r.touched, k) for k, r in self._rooms.items()):
            if now - touched > IDLE_S or len(self._rooms) >= MAX_ROOMS:
                self._rooms.pop(key).close()


@dataclass(frozen=True)
class _VoicePiece:
    wav_path: Path
    text: str  # the reply's text so far
    turn: int  # the reply (``TurnControl``'s count) it belongs to


def _done(utterance: Utterance) -> Future:
    future: Future = Future()
    future.set_result(utterance)
    return future


def _listening(room: Room, on: bool) -> None:
    from e3rg_core import cores

    with room.lock:
        if room.listening != on:
            room.listening = on
            cores.share(1 if on else -1)


def _sharing(transcribe: Transcribe) -> Transcribe:
    """``transcribe`` marked as work beside the LLM (``e3rg_core.cores``): an LLM writing meanwhile, for the
    reply still being made, moves to one thread fewer instead of stalling on a shared core."""
    def shared(path: Path) -> Any:
        from e3rg_core import cores

        with cores.busy():
            return transcribe(path)
    return shared


def _feed(listener: Listener, chunk: Any) -> list[Utterance]:
    if chunk is _FLUSH:  # the microphone stopped: what was being said ends there
        return listener.flush()
    if isinstance(chunk, tuple) and len(chunk) == 2:
        rate, samples = chunk  # int16 or float, [n] or [n, channels]: the listener reads them all
        return listener.feed_samples(np.asarray(samples), sample_rate_hz=int(rate))
    if isinstance(chunk, (bytes, bytearray)):
        return listener.feed_wav(bytes(chunk))
    if isinstance(chunk, (str, Path)):
        return listener.feed_file(Path(chunk))
    raise InputError(f"a microphone piece must be (rate, samples), WAV bytes or a WAV file, not {type(chunk).__name__}")
