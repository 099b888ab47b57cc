"""A streamed turn: the avatar starts speaking while the rest of the reply is still being made.

``Pipeline.stream(request, workdir)`` runs the same stages as ``Pipeline.run`` and yields the same
``StageResult`` values at the end, with three kinds of event before them::

    heard ─ EmotionDecided ─ SpokenPiece 0 ─ RenderedPiece 0 ─ SpokenPiece 1 ─ ... ─ understood, spoken, rendered, checked

1. The emotion is decided first (``Understander.decide``): it sets the voice's and the face's
   emotion before a word of the reply exists.
2. A writer thread streams the reply from the LLM sentence by sentence (``reply_sentences``); the
   first piece ends at a comma when its first sentence is long (``FIRST_CLAUSE_WORDS``).
3. A media thread speaks each sentence as soon as it ends (every sentence that is ready by then
   goes into one piece), pads the piece's audio to whole video frames and hands it out
   (``SpokenPiece``). Whenever it has nothing to speak it renders the video from where the reply's
   clock stands (``RenderedPiece``; the animator's ``start_s``): a second at a time while the LLM
   writes (``CHUNK_S``), so a sentence that ends is never stuck behind a long render, and the rest
   piece by piece once the reply is written. The first second comes as soon as the first piece is
   spoken, so the face shows up soon. Speaking always goes before rendering, so the voice runs
   ahead of the face and never waits for it. While it works the LLM computes on a thread fewer
   (``e3rg_core.cores``).
4. When the reply is finished, the pieces are joined into the turn's one WAV (as soon as the last
   piece is spoken; its AAC is encoded in the background while the last video renders) and one
   MP4 (the video pieces without re-encoding, under the joined audio), and the stage results
   follow as in a turn that was not streamed, so the session stores the same things either way.

The video stays optional: a piece that fails to render, or rendering that runs past
``video.timeout_s``, stops the video (a ``StageFailure``); the voice goes on. A failure to
write or speak the reply fails the turn with the stage's own error, as ``run`` does. A consumer
that stops iterating stops the threads after the piece they are on.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from e3rg_core.errors import InputError
from e3rg_core.events import (EmotionDecided, RenderedPiece, SpokenPiece, StageFailure, StageResult, TurnEvent,
                              TurnRequest)
from e3rg_core.stages import Stages
from e3rg_core.threads import Handover, stopping_on
from e3rg_core.types import Decision, Speech, Stage, Video

if TYPE_CHECKING:
    from e3rg_core.media.mp4 import AacEncoding
    from e3rg_core.memory import Profile
    from e3rg_core.understanding.engine import Decided

__all__ = ["CHUNK_S", "FIRST_CLAUSE_WORDS", "EmotionDecided", "RenderedPiece", "SpokenPiece", "stream_turn"]

logger = logging.getLogger(__name__)


#: while the LLM writes, the video is rendered in segments this long (the first one always is)
CHUNK_S = 1.0
#: the first piece ends at a comma once it has this many words ("I'm so sorry to hear that," ...)
FIRST_CLAUSE_WORDS = 4


_DONE = object()
_CANCELLED = object()

#: how often a streamed turn waiting for its next piece asks whether it was cancelled
CANCEL_POLL_S = 0.05


def _next(events: queue.Queue, cancelled: Callable[[], bool] | None) -> object:
    """The media thread's next event, or ``_CANCELLED`` as soon as ``cancelled`` says so."""
    while True:
        if cancelled is not None and cancelled():
            return _CANCELLED
        try:
            return events.get(timeout=CANCEL_POLL_S if cancelled is not None else None)
        except queue.Empty:
            continue


def stream_turn(stages: Stages, request: TurnRequest, workdir: Path,
                cancelled: Callable[[], bool] | None = None) -> Iterator[TurnEvent]:
    """The events of one streamed turn (see the module docstring).

    ``cancelled``: asked every ``CANCEL_POLL_S`` while the turn waits for its next piece; once it says
    so the turn ends there (no stage results), its writing and media work stopped.
    """
    began = time.perf_counter()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    avatar = stages.avatar(request.avatar_id)

    step = stages.run_stage(Stage.HEARD, lambda: stages.hear(request, workdir))
    yield step
    heard = step.value
    start = time.perf_counter()
    decided = stages.decide(heard, request)
    yield EmotionDecided(decided.decision, time.perf_counter() - start)

    fps = float(getattr(stages.renderer(), "fps", 25))
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    written: dict[str, float] = {}
    reply = Handover(_written(stages, decided, written, stop), name="e3rg-reply")  # the writer thread
    media = _Media(stages, decided.decision, avatar, workdir, fps, reply, events, stop, began)
    performer = threading.Thread(target=media.run, name="e3rg-media", daemon=True)
    performer.start()
    try:
        failure: BaseException | None = None
        while (event := _next(events, cancelled)) is not _DONE:
            if event is _CANCELLED:
                break
            if isinstance(event, BaseException):
                failure = failure or event
                stop.set()
            else:
                yield event
        if failure is not None:
            raise failure
        if event is _CANCELLED:
            return
    finally:
        stop.set()
        reply.close()  # stops the LLM and wakes the media thread if it waits for text
        performer.join()

    if not media.spoken:
        raise InputError(f"nothing to speak in the reply {' '.join(media.texts)[:80]!r}: it has no pronounceable words")
    reply_s = written.get("reply_s", 0.0)
    understanding = stages.finish(decided, " ".join(media.texts), reply_s=reply_s)
    yield StageResult(Stage.UNDERSTOOD, understanding, understanding.timings_s.get("emotion_s", 0.0) + reply_s)
    start = time.perf_counter()
    speech = media.join_voice()  # joined when the last piece was spoken, unless the turn ended otherwise
    yield StageResult(Stage.SPOKEN, speech, media.seconds[Stage.SPOKEN] + time.perf_counter() - start,
                      media.waits[Stage.SPOKEN])
    video: Video | StageFailure
    start = time.perf_counter()
    if media.video_failure is not None:
        video = media.video_failure
    else:
        try:
            video = _join_video(media.rendered, speech, workdir / "reply.mp4", media.aac)
        except Exception as exc:  # noqa: BLE001 - the video is optional: the turn keeps its voice
            logger.exception("joining the video pieces failed; the turn goes on without video")
            video = StageFailure(Stage.RENDERED, f"the video could not be made: {exc}")
    yield StageResult(Stage.RENDERED, video, media.seconds[Stage.RENDERED] + time.perf_counter() - start,
                      media.waits[Stage.RENDERED])
    if stages.config.perception.check_output and isinstance(video, Video):
        yield stages.run_stage(Stage.CHECKED, lambda: stages.check(speech, video, avatar, workdir))


def _written(stages: Stages, decided: Decided, written: dict[str, float], stop: threading.Event) -> Iterator[str]:
    """The reply's sentences as the model ends each one (run on the writer thread); its seconds into ``written``.

    Once ``stop`` is set (the turn ended early: a barge-in, a failure) llama.cpp stops at its next
    token instead of the end of its sentence, so the model is free for the next turn at once.
    """
    with stopping_on(stop), stages.measured() as clock:
        yield from stages.write(decided, first_clause_words=FIRST_CLAUSE_WORDS)
    written["reply_s"] = clock.seconds


class _Media:
    """The media thread: speak each piece as soon as its text is ready, render the video when nothing is."""

    def __init__(self, stages: Stages, decision: Decision, avatar: Profile, workdir: Path, fps: float,
                 reply: Handover[str], events: queue.Queue, stop: threading.Event, began: float) -> None:
        self.stages, self.decision, self.avatar, self.workdir, self.fps = stages, decision, avatar, workdir, fps
        self.reply, self.events, self.stop, self.began = reply, events, stop, began
        self.texts: list[str] = []
        self.spoken: list[Speech] = []
        self.segments: list[tuple[int, Speech, float]] = []  # (piece, speech, start_s) still to render
        self.rendered: list[Video] = []
        self.video_failure: StageFailure | None = None
        self.seconds = {Stage.SPOKEN: 0.0, Stage.RENDERED: 0.0}
        self.waits = {Stage.SPOKEN: 0.0, Stage.RENDERED: 0.0}
        self.voice: Speech | None = None  # the whole reply's WAV, once it is all spoken
        self.aac: AacEncoding | None = None  # its AAC, for the joined MP4

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - handed to the turn's thread, which raises it
            self.events.put(exc)
        finally:
            self.events.put(_DONE)

    def _run(self) -> None:
        while not self.stop.is_set():
            unrendered = bool(self.segments) and self.video_failure is None
            text = self.reply.ready(block=not unrendered)  # None once the whole reply is written
            if text:
                self._speak(" ".join(text))
                continue
            if text is None and self.spoken:
                self.join_voice()  # all spoken: its AAC encodes while the rest of the video renders
            if unrendered:
                self._render(*self._next_segment())
            elif text is None:
                return  # the reply is written, spoken and rendered

    def join_voice(self) -> Speech:
        """The reply's one WAV, joined from the pieces once (when the last one is spoken); its AAC for
        the MP4 starts encoding in the background then, while the last pieces' video renders."""
        if self.voice is None:
            from e3rg_core.media.mp4 import AacEncoding
            from e3rg_core.speech.pieces import join_speech

            start = time.perf_counter()
            self.voice = join_speech(self.spoken, self.workdir / "reply.wav")
            self.seconds[Stage.SPOKEN] += time.perf_counter() - start
            if self.video_failure is None:
                try:
                    self.aac = AacEncoding(self.voice.wav_path, self.workdir / "reply.m4a")
                except Exception:  # noqa: BLE001 - the join encodes the audio itself then
                    logger.exception("could not start encoding the reply's audio; the join will")
        return self.voice

    def _next_segment(self) -> tuple[int, Speech, float]:
        """The next video segment to render: a second of it while the LLM writes (and always the first)."""
        from e3rg_core.speech.pieces import split_speech

        piece, speech, offset = self.segments.pop(0)
        chunk_s = round(CHUNK_S * self.fps) / self.fps  # whole frames
        if (self.reply.finished and self.rendered) or speech.duration_s < chunk_s + 0.5:
            return piece, speech, offset
        n = len(self.rendered)
        head, tail = split_speech(speech, chunk_s, self.workdir / f"chunk{n:03d}a.wav",
                                  self.workdir / f"chunk{n:03d}b.wav")
        self.segments.insert(0, (piece, tail, offset + head.duration_s))
        return piece, head, offset

    def _speak(self, text: str) -> None:
        from e3rg_core.speech.pieces import pad_to_frames

        index = len(self.spoken)
        self.texts.append(text)
        with self.stages.measured() as clock:
            try:
                speech = self.stages.speak(text, emotion=self.decision.reply_emotion,
                                           intensity=self.decision.reply_intensity, avatar=self.avatar,
                                           out_path=self.workdir / f"piece{index:03d}.wav")
            except InputError as exc:  # e.g. a piece that is only an emoji; the reply's other pieces are spoken
                logger.info("piece %d has nothing to speak (%s); it stays in the text only", index, exc)
                return
            speech = pad_to_frames(speech, fps=self.fps)
        self.waits[Stage.SPOKEN] += clock.waited_s
        self.seconds[Stage.SPOKEN] += clock.seconds
        offset = sum(s.duration_s for s in self.spoken)
        self.spoken.append(speech)
        self.events.put(SpokenPiece(index, text, speech, offset, time.perf_counter() - self.began))
        self.segments.append((index, speech, offset))

    def _render(self, piece: int, speech: Speech, offset: float) -> None:
        index = len(self.rendered)
        limit = float(self.stages.config.video.timeout_s)
        try:
            if self.seconds[Stage.RENDERED] > limit:
                raise TimeoutError(f"the video took longer than {limit:.0f} s and was given up")
            with self.stages.measured() as clock:
                video = self.stages.render(speech, self.avatar, self.workdir / f"segment{index:03d}.mp4",
                                           start_s=offset)
        except Exception as exc:  # noqa: BLE001 - the video is optional: the voice goes on
            logger.exception("rendering segment %d failed; the reply goes on without video", index)
            message = str(exc) if isinstance(exc, TimeoutError) else f"the video could not be made: {exc}"
            self.video_failure = StageFailure(Stage.RENDERED, message)
            return
        self.waits[Stage.RENDERED] += clock.waited_s
        self.seconds[Stage.RENDERED] += clock.seconds
        self.rendered.append(video)
        self.events.put(RenderedPiece(index, piece, video, offset, time.perf_counter() - self.began))


def _join_video(parts: list[Video], speech: Speech, out_path: Path, aac: AacEncoding | None = None) -> Video:
    from e3rg_core.errors import BackendFailed
    from e3rg_core.media.mp4 import concat_mp4

    audio, copy_audio = Path(speech.wav_path), False
    if aac is not None:
        try:
            audio, copy_audio = aac.result(), True
        except BackendFailed:
            logger.exception("the reply's audio was not encoded in the background; encoding it now")
    concat_mp4([v.mp4_path for v in parts], out_path, audio_path=audio, copy_audio=copy_audio,
               durations_s=[v.n_frames / v.fps for v in parts])
    n_frames = sum(v.n_frames for v in parts)
    first = parts[0]
    return Video(mp4_path=Path(out_path), fps=first.fps, n_frames=n_frames, width=first.width, height=first.height,
                 duration_s=n_frames / first.fps, emotion=first.emotion)
