"""The stages of a turn over the configured models: each model is loaded once and called from one place here.

``Stages`` holds the models (loaded on first use; ``warm_up()`` loads them all), a lock per stage
(the models are not re-entrant; different stages of different turns can overlap) and one method per
stage: ``hear``, ``decide`` and ``write`` (understanding), ``speak``, ``render`` and ``check``. The
orchestration, which stage runs when, is ``pipeline.Pipeline.run`` (the whole reply at once) and
``streaming.stream_turn`` (the reply spoken while it is written); both call these methods and
measure them with ``measured``, so the seconds a stage worked are counted apart from the seconds it
waited for a model busy with another turn, one way for both.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from e3rg_core import cores
from e3rg_core.config import Config
from e3rg_core.errors import E3rgError, InputError
from e3rg_core.events import OPTIONAL_STAGES, Heard, StageFailure, StageResult, StageValue, TurnRequest
from e3rg_core.memory import AvatarLibrary, Profile
from e3rg_core.types import Speech, Stage, Understanding, UserTurn, Video

if TYPE_CHECKING:
    from e3rg_core.perception.asr import WhisperTranscriber
    from e3rg_core.perception.consistency import Consistency
    from e3rg_core.speech.base import Speaker
    from e3rg_core.understanding.engine import Decided, Understander
    from e3rg_core.video.base import Renderer

logger = logging.getLogger(__name__)

#: the turn the warm-up understands once (see ``Stages.warm_up``)
WARM_UP_TEXT = "Hi there, I just wanted to say hello and see how you are today."
#: what an avatar says, neutrally, in the rendering its self-check reads as its neutral face
NEUTRAL_FACE_TEXT = "Hello. I am listening; tell me what is on your mind today."
#: the listening face: a silent clip that loops while the person speaks and the reply is prepared
LISTENING_S = 4.0
LISTENING_INTENSITY = {"neutral": 0.0}  # any other emotion: a brief, gentle expression of it
LISTENING_OTHER_INTENSITY = 0.35

#: per thread: seconds waited for model locks so far
_WAIT = threading.local()


@dataclass
class Clock:
    """What ``Stages.measured`` measured: the seconds of work, and apart from them the seconds waited."""

    seconds: float = 0.0
    waited_s: float = 0.0


class Stages:
    """The models of the three E3RG stages (and perception), each loaded once, and the call of each stage."""

    def __init__(self, config: Config, *, library: AvatarLibrary | None = None,
                 understander: Understander | None = None, speakers: dict[str, Speaker] | None = None,
                 renderer: Renderer | None = None, transcriber: WhisperTranscriber | None = None) -> None:
        self.config = config
        self.library = library or AvatarLibrary(user_root=config.data_dir / "avatars")
        self._understander = understander
        self._speakers: dict[str, Speaker] = dict(speakers or {})
        self._renderer = renderer
        from e3rg_core.perception.fusion import Perceiver

        self.perceiver = Perceiver(config, transcriber=transcriber)
        self._locks = {stage: threading.Lock() for stage in Stage}
        self._load_lock = threading.Lock()
        self._neutral_faces: dict[tuple, dict[str, float] | None] = {}  # see neutral_face
        self._neutral_reading: tuple[tuple, Path] | None = None  # see check: the last reply read neutrally

    # -- locks and time -----------------------------------------------------------------------
    @contextmanager
    def locked(self, stage: Stage) -> Iterator[None]:
        """Hold a stage's model lock, counting the wait apart from the work (see ``measured``).

        Work other than the LLM's is marked ``cores.busy`` while it runs, so an LLM writing at the
        same time (a streamed reply, another user's turn) leaves it a core.
        """
        start = time.perf_counter()
        with self._locks[stage]:
            _WAIT.s = getattr(_WAIT, "s", 0.0) + time.perf_counter() - start
            with nullcontext() if stage is Stage.UNDERSTOOD else cores.busy():
                yield

    @staticmethod
    @contextmanager
    def measured() -> Iterator[Clock]:
        """Time the work inside on this thread: ``seconds`` of work and, apart, ``waited_s`` for busy models."""
        clock = Clock()
        waited_before, start = getattr(_WAIT, "s", 0.0), time.perf_counter()
        try:
            yield clock
        finally:
            clock.waited_s = getattr(_WAIT, "s", 0.0) - waited_before
            clock.seconds = max(0.0, time.perf_counter() - start - clock.waited_s)

    def run_stage(self, stage: Stage, work: Callable[[], StageValue]) -> StageResult:
        """Run one stage's ``work()``, timed apart from waiting for busy models; optional stages degrade."""
        if stage in OPTIONAL_STAGES:
            with self.measured() as clock:
                value, waited = self._degradable(stage, work)
            seconds = max(0.0, clock.seconds - waited)
        else:
            with self.measured() as clock:
                value = work()
            seconds, waited = clock.seconds, clock.waited_s
        logger.info("turn stage %s took %.2f s (and waited %.2f s for a busy model)", stage, seconds, waited)
        return StageResult(stage, value, seconds, waited)

    def _degradable(self, stage: Stage, work: Callable[[], StageValue]) -> tuple[StageValue, float]:
        """Run an optional stage within its time limit; a failure becomes a ``StageFailure``, not an error.

        Returns the value and the seconds it waited for a busy model (the limit counts the wait too).
        """
        import concurrent.futures

        def timed() -> tuple[StageValue, float]:
            with self.measured() as clock:
                value = work()
            return value, clock.waited_s

        limit = float(self.config.video.timeout_s)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"e3rg-{stage}")
        try:
            return pool.submit(timed).result(timeout=limit)
        except concurrent.futures.TimeoutError:
            logger.error("stage %s ran past its %.0f s limit; the turn goes on without it", stage, limit)
            what = "the video" if stage is Stage.RENDERED else "the self-check"
            return StageFailure(stage, f"{what} took longer than {limit:.0f} s and was given up"), 0.0
        except Exception as exc:  # noqa: BLE001 - any failure here degrades the turn instead of losing it
            logger.exception("stage %s failed; the turn goes on without it", stage)
            detail = str(exc) if isinstance(exc, E3rgError) else f"{type(exc).__name__}: {exc}"
            what = "the video could not be made" if stage is Stage.RENDERED else "the self-check failed"
            return StageFailure(stage, f"{what}: {detail}"), 0.0
        finally:
            pool.shutdown(wait=False)

    # -- the models, loaded on first use ------------------------------------------------------
    def understander(self) -> Understander:
        with self._load_lock:
            if self._understander is None:
                from e3rg_core.understanding.engine import Understander

                self._understander = Understander(self.config)
            return self._understander

    def speaker(self, backend: str) -> Speaker:
        with self._load_lock:
            if backend not in self._speakers:
                from e3rg_core.speech import create_speaker

                self._speakers[backend] = create_speaker(self.config, backend)
            return self._speakers[backend]

    def renderer(self) -> Renderer:
        with self._load_lock:
            if self._renderer is None:
                from e3rg_core.video import create_renderer

                self._renderer = create_renderer(self.config)
            return self._renderer

    def avatar(self, avatar_id: str | None) -> Profile:
        """The avatar a turn is with: ``avatar_id``, or the library's default."""
        return self.library.get(avatar_id) if avatar_id else self.library.default()

    def warm_up(self, avatar_id: str | None = None, *, first_turn: bool = True) -> dict[str, float]:
        """Load every model the default turn needs and (``first_turn``) understand one turn; seconds per stage."""
        timings = {}
        # Whisper before the LLM: with CTranslate2 loaded after llama.cpp, llama.cpp decodes a quarter
        # slower on 2 cores (7.8 against 10.4 tokens/s, measured); loaded before, it costs nothing
        for name, load in (("hear", self.perceiver.transcriber), ("understand", self.understander),
                           ("perceive", lambda: (self.perceiver.voice_reader(), self.perceiver.face_reader())),
                           ("speak", lambda: [self.speaker(b) for b in self._voice_backends(avatar_id)]),
                           ("render", self.renderer)):
            start = time.perf_counter()
            load()
            timings[name] = round(time.perf_counter() - start, 3)
        # One turn understood (the emotion decided and the reply written), so the first person's turn does
        # not pay for what a model does only once: llama.cpp reads the fixed part of its prompts and pages
        # its weights in, the sentence encoders run for the first time. Measured (bench/turn.py, cold_start):
        # the first turn's understanding took 3.9 s against 0.7 s for the turns after it.
        if not first_turn:
            return timings
        start = time.perf_counter()
        heard = Heard(text=WARM_UP_TEXT, input_kind="text")
        for _ in self.write(self.decide(heard, TurnRequest(text=WARM_UP_TEXT))):
            pass
        timings["first_turn"] = round(time.perf_counter() - start, 3)
        return timings

    def _voice_backends(self, avatar_id: str | None) -> list[str]:
        """The speech backends of the turn's avatar and of every shipped one, so that a voice that cannot
        load (OpenVoice without its weights) stops the start, not a later turn with another avatar."""
        first = self.avatar(avatar_id).voice.backend
        shipped = sorted({self.library.get(i).voice.backend for i in self.library.shipped_ids()} - {first})
        return [first, *shipped]

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
        with self.locked(Stage.HEARD):
            perception = self.perceiver.perceive(
                audio_path=request.audio_path, video_path=request.video_path, workdir=Path(workdir),
                max_seconds=float(self.config.ui.max_recording_s), transcript=request.transcript)
        transcript = perception.transcript
        if text:
            note = "typed text used" + ("; the recording was heard too" if transcript.text else "")
            return Heard(text=text, input_kind=kind, perception=perception, note=note)
        if not transcript.text:
            raise InputError(f"no speech heard in the {kind} recording ({transcript.duration_s:.1f} s); "
                             "speak a little louder or closer, or type your message")
        return Heard(text=transcript.text, input_kind=kind, perception=perception)

    def decide(self, heard: Heard, request: TurnRequest) -> Decided:
        """The first half of understanding: the emotion, before the reply (``Understander.decide``)."""
        perception = heard.perception
        # an omni model hears the recording's sound as 16 kHz mono and sees the video's frames
        audio = perception.audio_path if perception is not None else request.audio_path
        turn = UserTurn(text=heard.text, history=request.history, audio_path=audio,
                        video_path=request.video_path, cues=perception.cues if perception else "",
                        context=request.context)
        votes = self.perceiver.votes(perception, map_name=self.config.understanding.emotion_map) if perception else []
        with self.locked(Stage.UNDERSTOOD):
            return self.understander().decide(turn, emotion=request.emotion, extra_votes=votes)

    def write(self, decided: Decided, *, first_clause_words: int = 0) -> Iterator[str]:
        """The second half: the reply's sentences as the LLM ends each one (``Understander.reply_sentences``).

        The model stays locked until the generator is exhausted or closed; closing it stops the LLM.
        """
        with self.locked(Stage.UNDERSTOOD):
            sentences = self.understander().reply_sentences(decided, first_clause_words=first_clause_words)
            try:
                yield from sentences
            finally:
                sentences.close()

    def finish(self, decided: Decided, reply: str, *, reply_s: float) -> Understanding:
        """Understanding's result once the reply is written."""
        return self.understander().finish(decided, reply, reply_s=reply_s)

    def understand(self, heard: Heard, request: TurnRequest) -> Understanding:
        """The whole of understanding: the emotion, then the whole reply."""
        decided = self.decide(heard, request)
        with self.measured() as clock:
            reply = " ".join(self.write(decided))
        return self.finish(decided, reply, reply_s=clock.seconds)

    def speak(self, text: str, *, emotion: str, intensity: float, avatar: Profile, out_path: Path) -> Speech:
        """``text`` in the avatar's voice with ``emotion`` (a coarse class) at ``intensity`` (0..1)."""
        from e3rg_core.speech import voice_for

        voice = voice_for(avatar)
        with self.locked(Stage.SPOKEN):
            return self.speaker(voice.backend).synthesize(text, emotion=emotion, intensity=intensity, voice=voice,
                                                          out_path=out_path)

    def render(self, speech: Speech, avatar: Profile, out_path: Path, *, emotion: str | None = None,
               intensity: float | None = None, start_s: float = 0.0) -> Video:
        """The avatar's portrait speaking ``speech``, with the speech's emotion unless another is given.

        ``start_s``: where the clip starts in a reply rendered in pieces (a streamed turn).
        """
        with self.locked(Stage.RENDERED):
            return self.renderer().render(
                speech, portrait=avatar.portrait, emotion=speech.emotion if emotion is None else emotion,
                intensity=speech.intensity if intensity is None else intensity, out_path=out_path, start_s=start_s)

    def listening_face(self, avatar_id: str | None, emotion: str = "neutral", *, render: bool = True) -> Path | None:
        """The avatar listening (``LISTENING_S`` silent seconds: blinks, breathing, the idle sway), once
        per avatar, portrait, emotion and video settings, then kept in the cache directory.

        The page loops it while the person speaks and while the reply is prepared; once the person's
        emotion is known, the clip of that emotion shows it gently. ``render=False``: None unless it
        was made already (the turn never waits for it).
        """
        from e3rg_core.emotions import COARSE
        from e3rg_core.media.audio import write_wav

        if emotion not in COARSE:
            raise InputError(f"unknown emotion {emotion!r} for the listening face; choose from {', '.join(COARSE)}")
        avatar = self.avatar(avatar_id)
        portrait = Path(avatar.portrait)
        video = self.config.video
        name = f"{avatar.id}-{emotion}-{portrait.stat().st_mtime_ns}-{video.backend}-{video.size_px}-{video.fps}.mp4"
        out = self.config.cache_dir / "listening" / name
        if out.is_file() or not render:
            return out if out.is_file() else None
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="listening-", dir=out.parent) as tmp:
            import numpy as np

            rate = 16000
            silence = Path(tmp) / "silence.wav"
            write_wav(silence, np.zeros(int(LISTENING_S * rate), dtype=np.float32), rate)
            intensity = LISTENING_INTENSITY.get(emotion, LISTENING_OTHER_INTENSITY)
            speech = Speech(wav_path=silence, sample_rate_hz=rate, duration_s=LISTENING_S, text="", emotion=emotion,
                            intensity=intensity, voice="silence")
            clip = self.render(speech, avatar, Path(tmp) / "listening.mp4")
            Path(clip.mp4_path).replace(out)
        return out

    def neutral_face(self, avatar: Profile, workdir: Path) -> dict[str, float] | None:
        """How the expression model reads the avatar's own neutral face: the self-check's baseline.

        The portrait animated neutral over ``NEUTRAL_FACE_TEXT`` in the avatar's own voice, rendered
        and read once per avatar, portrait file and voice (then kept). None when no face is found in it.
        """
        from e3rg_core.speech import voice_for

        portrait = Path(avatar.portrait)
        key = (avatar.id, str(portrait), portrait.stat().st_mtime_ns, repr(voice_for(avatar)))
        if key not in self._neutral_faces:
            with tempfile.TemporaryDirectory(prefix="neutral-face-", dir=workdir) as tmp:  # not kept with the turn
                folder = Path(tmp)
                speech = self.speak(NEUTRAL_FACE_TEXT, emotion="neutral", intensity=0.0, avatar=avatar,
                                    out_path=folder / "neutral.wav")
                video = self.render(speech, avatar, folder / "neutral.mp4", emotion="neutral", intensity=0.0)
                with self.locked(Stage.CHECKED):
                    reading = self.perceiver.face_reader().read_video(video.mp4_path)
            self._neutral_faces[key] = dict(reading.distribution) if reading.frames_with_face else None
            logger.info("read %s's neutral face: %s", avatar.id, reading.top if reading.frames_with_face else "no face")
        return self._neutral_faces[key]

    def check(self, speech: Speech, video: Video, avatar: Profile, workdir: Path) -> Consistency:
        """Read the avatar's own face and voice back (``perception.consistency``)."""
        from e3rg_core.perception.consistency import check_output
        from e3rg_core.speech import voice_for

        neutral = speech.wav_path
        if speech.emotion != "neutral" and speech.text:
            # the same reply checked in several emotions in one folder (an avatar's self-check,
            # ``consistency.check_avatar``) is spoken neutrally once
            key = (speech.text, avatar.id, repr(voice_for(avatar)), str(Path(workdir)))
            kept = self._neutral_reading
            if kept is not None and kept[0] == key and kept[1].is_file():
                neutral = kept[1]
            else:
                neutral = self.speak(speech.text, emotion="neutral", intensity=0.0, avatar=avatar,
                                     out_path=Path(workdir) / "reply_neutral.wav").wav_path
                self._neutral_reading = (key, Path(neutral))
        try:
            neutral_face = self.neutral_face(avatar, workdir)
        except Exception:  # noqa: BLE001 - the check goes on, judging the face by its top class alone
            logger.exception("the avatar's neutral face could not be read; the face check uses the top class only")
            neutral_face = None
        with self.locked(Stage.CHECKED):
            return check_output(intended=speech.emotion, video_path=video.mp4_path, wav_path=speech.wav_path,
                                neutral_wav=neutral, face_reader=self.perceiver.face_reader(),
                                voice_reader=self.perceiver.voice_reader(), neutral_face=neutral_face)
