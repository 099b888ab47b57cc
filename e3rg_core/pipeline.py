"""One E3RG turn, end to end: hear → understand → recall the avatar → speak → render → check.

``Pipeline.run(request, workdir)`` is a generator of ``StageResult`` values, one per stage as it
finishes, so a UI can paint the emotion and reply before the audio, and the audio before the video::

    pipeline = Pipeline(load_config())
    for step in pipeline.run(TurnRequest(text="I failed my driving test."), workdir=Path("out")):
        print(step.stage, step.seconds)

Models load on first use of each stage (``warm_up()`` loads them all). Each stage runs one request
at a time (the models are not re-entrant); different stages of different turns can overlap. A
failing stage raises the same clear ``E3rgError`` as the stage itself; nothing is half-written.
The video and the self-check are optional (``OPTIONAL_STAGES``): if one fails or runs past
``video.timeout_s``, the turn is delivered without it and a ``StageFailure`` says why.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from e3rg_core import cores
from e3rg_core.config import Config
from e3rg_core.errors import E3rgError, InputError
from e3rg_core.memory import AvatarLibrary, Profile
from e3rg_core.types import Speech, Understanding, Utterance, UserTurn, Video

logger = logging.getLogger(__name__)

#: the stages, in the order ``run`` reports them ("checked" only with ``perception.check_output``)
STAGES = ("heard", "understood", "spoken", "rendered", "checked")


@dataclass(frozen=True)
class TurnRequest:
    """What the user sent: typed text and/or a microphone or webcam recording, and the avatar."""

    text: str = ""
    audio_path: Path | None = None  # a microphone clip
    video_path: Path | None = None  # a webcam recording (its audio track is heard)
    avatar_id: str | None = None  # None: the library's default
    history: tuple[Utterance, ...] = ()
    emotion: str | None = None  # the user's correction of the predicted emotion, e.g. "tired"
    context: str = ""  # the situation, when known (AvaMERG's dialogue context)


@dataclass(frozen=True)
class Heard:
    """The user's words this turn, where they came from, and how they came across."""

    text: str
    input_kind: str  # "text", "audio" or "video"
    perception: Any = None  # perception.fusion.Perception when a recording was read
    note: str = ""  # e.g. "typed text used; the recording was heard too"

    @property
    def transcript(self) -> Any:
        return self.perception.transcript if self.perception is not None else None


#: stages a turn can lose and still be delivered: without them the reply's text and voice stand
OPTIONAL_STAGES = ("rendered", "checked")


@dataclass(frozen=True)
class StageFailure:
    """An optional stage that failed or ran out of time; the turn goes on without it."""

    stage: str
    message: str


@dataclass(frozen=True)
class StageResult:
    stage: str  # one of STAGES
    value: Any  # Heard, Understanding, Speech or Video
    seconds: float  # the stage's own work
    waited_s: float = 0.0  # time spent waiting for a model busy with another turn


#: per thread: seconds this stage has waited for model locks
_WAIT = threading.local()


@dataclass(frozen=True)
class TurnOutput:
    """Everything one turn produced."""

    avatar: Profile
    heard: Heard
    understanding: Understanding
    speech: Speech
    video: Video
    timings_s: dict[str, float]
    consistency: Any = None  # perception.consistency.Consistency, when checked


#: what an avatar says, neutrally, in the rendering its self-check reads as its neutral face
NEUTRAL_FACE_TEXT = "Hello. I am listening; tell me what is on your mind today."


class Pipeline:
    """The three E3RG stages over the configured backends, each loaded once."""

    def __init__(self, config: Config, *, library: AvatarLibrary | None = None, understander: Any = None,
                 speakers: dict[str, Any] | None = None, renderer: Any = None, transcriber: Any = None) -> None:
        self.config = config
        self.library = library or AvatarLibrary(user_root=config.data_dir / "avatars")
        self._understander = understander
        self._speakers: dict[str, Any] = dict(speakers or {})
        self._renderer = renderer
        from e3rg_core.perception.fusion import Perceiver

        self.perceiver = Perceiver(config, transcriber=transcriber)
        self._locks = {stage: threading.Lock() for stage in STAGES}
        self._load_lock = threading.Lock()
        self._neutral_faces: dict[tuple, dict[str, float] | None] = {}  # see neutral_face

    @contextmanager
    def locked(self, stage: str) -> Iterator[float]:
        """Hold a stage's model lock, counting the wait apart from the work; gives the seconds waited.

        Work other than the LLM's is marked ``cores.busy`` while it runs, so an LLM writing at the
        same time (a streamed reply, another user's turn) leaves it a core.
        """
        start = time.perf_counter()
        with self._locks[stage]:
            waited = time.perf_counter() - start
            _WAIT.s = getattr(_WAIT, "s", 0.0) + waited
            with nullcontext() if stage == "understood" else cores.busy():
                yield waited

    # -- the models, loaded on first use ------------------------------------------------------
    def understander(self) -> Any:
        with self._load_lock:
            if self._understander is None:
                from e3rg_core.understanding.engine import Understander

                self._understander = Understander(self.config)
            return self._understander

    def speaker(self, backend: str) -> Any:
        with self._load_lock:
            if backend not in self._speakers:
                from e3rg_core.speech import create_speaker

                self._speakers[backend] = create_speaker(self.config, backend)
            return self._speakers[backend]

    def renderer(self) -> Any:
        with self._load_lock:
            if self._renderer is None:
                from e3rg_core.video import create_renderer

                self._renderer = create_renderer(self.config)
            return self._renderer

    def warm_up(self, avatar_id: str | None = None) -> dict[str, float]:
        """Load every model the default turn needs; seconds per stage."""
        timings = {}
        # Whisper before the LLM: with CTranslate2 loaded after llama.cpp, llama.cpp decodes a quarter
        # slower on 2 cores (7.8 against 10.4 tokens/s, measured); loaded before, it costs nothing
        for name, load in (("hear", self.perceiver.transcriber), ("understand", self.understander),
                           ("perceive", lambda: (self.perceiver.voice_reader(), self.perceiver.face_reader())),
                           ("speak", lambda: self.speaker(self.library.resolve(avatar_id).voice.backend)),
                           ("render", self.renderer)):
            start = time.perf_counter()
            load()
            timings[name] = round(time.perf_counter() - start, 3)
        return timings

    # -- the stages ---------------------------------------------------------------------------
    def hear(self, request: TurnRequest, workdir: Path) -> Heard:
        """The user's words: the typed text, else the transcript of the recording."""
        recording = request.video_path or request.audio_path
        kind = "video" if request.video_path else "audio" if request.audio_path else "text"
        from e3rg_core.understanding.engine import strip_controls

        text = " ".join(strip_controls(request.text or "").split())  # stored as it was understood
        if recording is None:
            if not text:
                raise InputError("nothing to answer: type a message or record one")
            return Heard(text=text, input_kind="text")
        with self.locked("heard"):
            perception = self.perceiver.perceive(
                audio_path=request.audio_path, video_path=request.video_path, workdir=Path(workdir),
                max_seconds=float(self.config.ui.max_recording_s))
        transcript = perception.transcript
        if text:
            note = "typed text used" + ("; the recording was heard too" if transcript.text else "")
            return Heard(text=text, input_kind=kind, perception=perception, note=note)
        if not transcript.text:
            raise InputError(f"no speech heard in the {kind} recording ({transcript.duration_s:.1f} s); "
                             "speak a little louder or closer, or type your message")
        return Heard(text=transcript.text, input_kind=kind, perception=perception)

    def decide(self, heard: Heard, request: TurnRequest) -> tuple[Any, Any]:
        """The first half of understanding: the emotion, before the reply (``Understander.decide``).

        Returns the understander and its ``Decided`` value, which ``reply_sentences`` and ``finish`` take.
        """
        perception = heard.perception
        # an omni model hears the recording's sound as 16 kHz mono and sees the video's frames
        audio = perception.audio_path if perception is not None else request.audio_path
        turn = UserTurn(text=heard.text, history=request.history, audio_path=audio,
                        video_path=request.video_path, cues=perception.cues if perception else "",
                        context=request.context)
        votes = self.perceiver.votes(perception, map_name=self.config.understanding.emotion_map) if perception else []
        with self.locked("understood"):
            understander = self.understander()
            return understander, understander.decide(turn, emotion=request.emotion, extra_votes=votes)

    def understand(self, heard: Heard, request: TurnRequest) -> Understanding:
        understander, decided = self.decide(heard, request)
        with self.locked("understood"):
            start = time.perf_counter()
            reply = " ".join(understander.reply_sentences(decided))
            return understander.finish(decided, reply, reply_s=time.perf_counter() - start)

    def speak(self, understanding: Understanding, avatar: Profile, out_path: Path) -> Speech:
        from e3rg_core.speech import voice_for

        voice = voice_for(avatar)
        with self.locked("spoken"):
            return self.speaker(voice.backend).synthesize(
                understanding.reply, emotion=understanding.reply_emotion,
                intensity=understanding.reply_intensity, voice=voice, out_path=out_path)

    def render(self, speech: Speech, avatar: Profile, out_path: Path) -> Video:
        with self.locked("rendered"):
            return self.renderer().render(speech, portrait=avatar.portrait, emotion=speech.emotion,
                                          intensity=speech.intensity, out_path=out_path)

    def neutral_face(self, avatar: Profile, workdir: Path) -> dict[str, float] | None:
        """How the expression model reads the avatar's own neutral face: the self-check's baseline.

        The portrait animated neutral over ``NEUTRAL_FACE_TEXT`` in the avatar's own voice, rendered
        and read once per avatar, portrait file and voice (then kept). None when no face is found in it.
        """
        from e3rg_core.speech import voice_for

        voice = voice_for(avatar)
        portrait = Path(avatar.portrait)
        key = (avatar.id, str(portrait), portrait.stat().st_mtime_ns, repr(voice))
        if key not in self._neutral_faces:
            with tempfile.TemporaryDirectory(prefix="neutral-face-", dir=workdir) as tmp:  # not kept with the turn
                folder = Path(tmp)
                with self.locked("spoken"):
                    speech = self.speaker(voice.backend).synthesize(
                        NEUTRAL_FACE_TEXT, emotion="neutral", intensity=0.0, voice=voice,
                        out_path=folder / "neutral.wav")
                with self.locked("rendered"):
                    video = self.renderer().render(speech, portrait=portrait, emotion="neutral", intensity=0.0,
                                                   out_path=folder / "neutral.mp4")
                with self.locked("checked"):
                    reading = self.perceiver.face_reader().read_video(video.mp4_path)
            self._neutral_faces[key] = dict(reading.distribution) if reading.frames_with_face else None
            logger.info("read %s's neutral face: %s", avatar.id, reading.top if reading.frames_with_face else "no face")
        return self._neutral_faces[key]

    def check(self, speech: Speech, video: Video, avatar: Profile, workdir: Path) -> Any:
        """Read the avatar's own face and voice back (``perception.consistency``)."""
        from e3rg_core.perception.consistency import check_output
        from e3rg_core.speech import voice_for

        neutral = speech.wav_path
        if speech.emotion != "neutral" and speech.text:
            voice = voice_for(avatar)
            with self.locked("spoken"):
                neutral = self.speaker(voice.backend).synthesize(
                    speech.text, emotion="neutral", intensity=0.0, voice=voice,
                    out_path=Path(workdir) / "reply_neutral.wav").wav_path
        try:
            neutral_face = self.neutral_face(avatar, workdir)
        except Exception:  # noqa: BLE001 - the check goes on, judging the face by its top class alone
            logger.exception("the avatar's neutral face could not be read; the face check uses the top class only")
            neutral_face = None
        with self.locked("checked"):
            return check_output(intended=speech.emotion, video_path=video.mp4_path, wav_path=speech.wav_path,
                                neutral_wav=neutral, face_reader=self.perceiver.face_reader(),
                                voice_reader=self.perceiver.voice_reader(), neutral_face=neutral_face)

    def run(self, request: TurnRequest, workdir: Path) -> Iterator[StageResult]:
        """Run a turn, yielding each stage's result as it is ready. Files go into ``workdir``."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        avatar = self.library.get(request.avatar_id) if request.avatar_id else self.library.default()
        steps = (
            ("heard", lambda: self.hear(request, workdir)),
            ("understood", lambda: self.understand(values["heard"], request)),
            ("spoken", lambda: self.speak(values["understood"], avatar, workdir / "reply.wav")),
            ("rendered", lambda: self.render(values["spoken"], avatar, workdir / "reply.mp4")),
            ("checked", lambda: self.check(values["spoken"], values["rendered"], avatar, workdir)),
        )[: 5 if self.config.perception.check_output else 4]
        values: dict[str, Any] = {}
        for stage, step in steps:
            if stage == "checked" and isinstance(values.get("rendered"), StageFailure):
                break  # no video to check
            result = self.step(stage, step)
            values[stage] = result.value
            yield result

    def stream(self, request: TurnRequest, workdir: Path) -> Iterator[Any]:
        """Run a turn that speaks while it is still being written (``e3rg_core.streaming``).

        Yields ``EmotionDecided``, then ``SpokenPiece`` and ``RenderedPiece`` events as each piece of
        the reply is ready, then the same ``StageResult`` values as ``run``.
        """
        from e3rg_core.streaming import stream_turn

        yield from stream_turn(self, request, workdir)

    def step(self, stage: str, work: Any) -> StageResult:
        """Run one stage's ``work()``, timed apart from waiting for busy models; optional stages degrade."""
        start = time.perf_counter()
        if stage in OPTIONAL_STAGES:
            value, waited = self._degradable(stage, work)
        else:
            _WAIT.s = 0.0
            value = work()
            waited = _WAIT.s
        seconds = max(0.0, time.perf_counter() - start - waited)
        logger.info("turn stage %s took %.2f s (and waited %.2f s for a busy model)", stage, seconds, waited)
        return StageResult(stage, value, seconds, waited)

    def _degradable(self, stage: str, step: Any) -> tuple[Any, float]:
        """Run an optional stage within its time limit; a failure becomes a ``StageFailure``, not an error.

        Returns the value and the seconds it waited for a busy model (the limit counts the wait too).
        """
        import concurrent.futures

        def timed() -> tuple[Any, float]:
            _WAIT.s = 0.0
            return step(), _WAIT.s

        limit = float(self.config.video.timeout_s)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"e3rg-{stage}")
        try:
            return pool.submit(timed).result(timeout=limit)
        except concurrent.futures.TimeoutError:
            logger.error("stage %s ran past its %.0f s limit; the turn goes on without it", stage, limit)
            what = "the video" if stage == "rendered" else "the self-check"
            return StageFailure(stage, f"{what} took longer than {limit:.0f} s and was given up"), 0.0
        except Exception as exc:  # noqa: BLE001 - any failure here degrades the turn instead of losing it
            logger.exception("stage %s failed; the turn goes on without it", stage)
            detail = str(exc) if isinstance(exc, E3rgError) else f"{type(exc).__name__}: {exc}"
            what = "the video could not be made" if stage == "rendered" else "the self-check failed"
            return StageFailure(stage, f"{what}: {detail}"), 0.0
        finally:
            pool.shutdown(wait=False)

    def turn(self, request: TurnRequest, workdir: Path) -> TurnOutput:
        """Run a whole turn and return everything it produced."""
        values, timings = {}, {}
        for step in self.run(request, workdir):
            values[step.stage], timings[step.stage] = step.value, round(step.seconds, 3)
        avatar = self.library.get(request.avatar_id) if request.avatar_id else self.library.default()
        return TurnOutput(avatar=avatar, heard=values["heard"], understanding=values["understood"],
                          speech=values["spoken"], video=values["rendered"], timings_s=timings,
                          consistency=values.get("checked"))
