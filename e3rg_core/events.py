"""What a turn takes and the events it yields, in order (``Pipeline.run`` and ``Pipeline.stream``)::

    StageResult(HEARD) ─ [EmotionDecided ─ SpokenPiece ─ RenderedPiece ─ ...] ─ StageResult(UNDERSTOOD)
        ─ StageResult(SPOKEN) ─ StageResult(RENDERED) ─ StageResult(CHECKED)

The bracketed events come only in a streamed turn. An optional stage (``OPTIONAL_STAGES``) that fails
or runs out of time yields its ``StageResult`` with a ``StageFailure`` as its value; ``TurnOutput.collect``
turns the events of either kind of turn into one value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Union

from e3rg_core.types import Decision, Speech, Stage, Understanding, Utterance, Video

if TYPE_CHECKING:  # the values of optional parts; importing them here would load nothing, but keeps it light
    from e3rg_core.memory import Profile
    from e3rg_core.perception.asr import Transcript
    from e3rg_core.perception.consistency import Consistency
    from e3rg_core.perception.fusion import Perception

#: the stages, in the order a turn reports them (CHECKED only with ``perception.check_output``)
STAGES: tuple[Stage, ...] = tuple(Stage)
#: stages a turn can lose and still be delivered: without them the reply's text and voice stand
OPTIONAL_STAGES: tuple[Stage, ...] = (Stage.RENDERED, Stage.CHECKED)


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
    #: the recording's words, already recognised while the person spoke (hands-free: e3rg_core.live)
    transcript: Transcript | None = None


@dataclass(frozen=True)
class Heard:
    """The user's words this turn, where they came from, and how they came across."""

    text: str
    input_kind: str  # "text", "audio" or "video"
    perception: Perception | None = None  # when a recording was read
    note: str = ""  # e.g. "typed text used; the recording was heard too"

    @property
    def transcript(self) -> Transcript | None:
        return self.perception.transcript if self.perception is not None else None


@dataclass(frozen=True)
class StageFailure:
    """An optional stage that failed or ran out of time; the turn goes on without it."""

    stage: Stage
    message: str


#: what a stage gives: HEARD a ``Heard``, UNDERSTOOD an ``Understanding``, SPOKEN a ``Speech``,
#: RENDERED a ``Video`` and CHECKED a ``Consistency``; an optional stage that failed a ``StageFailure``
StageValue = Union["Heard", Understanding, Speech, Video, "Consistency", StageFailure]


@dataclass(frozen=True)
class StageResult:
    """A stage has finished."""

    stage: Stage
    value: StageValue
    seconds: float  # the stage's own work
    waited_s: float = 0.0  # time spent waiting for a model busy with another turn

    @property
    def failed(self) -> bool:
        """An optional stage failed; ``value`` says why and the turn goes on without it."""
        return isinstance(self.value, StageFailure)


@dataclass(frozen=True)
class EmotionDecided:
    """A streamed turn: the user's emotion and the avatar's, before the reply is written."""

    decision: Decision
    seconds: float


@dataclass(frozen=True)
class SpokenPiece:
    """A streamed turn: a piece of the reply in the avatar's voice, ready to play."""

    index: int
    text: str
    speech: Speech  # padded to whole video frames
    start_s: float  # where the piece starts in the whole reply
    at_s: float  # seconds since the turn began


@dataclass(frozen=True)
class RenderedPiece:
    """A streamed turn: a segment of the talking-head video (its own audio track included), in order.

    A spoken piece is shown by one segment or more: while the LLM writes, video is rendered a
    second (``streaming.CHUNK_S``) at a time.
    """

    index: int  # the segment's number
    piece: int  # the spoken piece it shows
    video: Video
    start_s: float  # where it starts in the whole reply
    at_s: float


#: anything a turn yields
TurnEvent = Union[StageResult, EmotionDecided, SpokenPiece, RenderedPiece]


@dataclass(frozen=True)
class TurnOutput:
    """Everything one turn produced: its events collected."""

    avatar: Profile
    heard: Heard
    understanding: Understanding
    speech: Speech
    video: Video | StageFailure
    timings_s: dict[Stage, float]
    consistency: Consistency | StageFailure | None = None  # when checked

    @classmethod
    def collect(cls, events: Iterable[TurnEvent], avatar: Profile) -> TurnOutput:
        """The value of a turn's events (a streamed turn's pieces are in its joined speech and video)."""
        values, timings = {}, {}
        for event in events:
            if isinstance(event, StageResult):
                values[event.stage], timings[event.stage] = event.value, round(event.seconds, 3)
        return cls(avatar=avatar, heard=values[Stage.HEARD], understanding=values[Stage.UNDERSTOOD],
                   speech=values[Stage.SPOKEN], video=values[Stage.RENDERED], timings_s=timings,
                   consistency=values.get(Stage.CHECKED))
