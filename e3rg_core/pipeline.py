"""One E3RG turn, end to end: hear → understand → recall the avatar → speak → render → check.

``Pipeline.run(request, workdir)`` is a generator of turn events (``e3rg_core.events``), a
``StageResult`` per stage as it finishes, so a UI can paint the emotion and reply before the audio,
and the audio before the video; ``Pipeline.stream`` yields the same results after the reply's pieces
as they are spoken and rendered (``e3rg_core.streaming``); ``Pipeline.turn`` collects either::

    pipeline = Pipeline(load_config())
    for event in pipeline.run(TurnRequest(text="I failed my driving test."), workdir=Path("out")):
        print(event)

Models load on first use of each stage (``warm_up()`` loads them all); each stage is called in one
place, ``e3rg_core.stages``. A failing stage raises the same clear ``E3rgError`` as the stage itself;
nothing is half-written. The video and the self-check are optional (``OPTIONAL_STAGES``): if one fails
or runs past ``video.timeout_s``, the turn is delivered without it and a ``StageFailure`` says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Generator, Iterator

from e3rg_core.events import (OPTIONAL_STAGES, STAGES, EmotionDecided, Heard, RenderedPiece, SpokenPiece, StageFailure,
                              StageResult, StageValue, TurnEvent, TurnOutput, TurnRequest)
from e3rg_core.stages import NEUTRAL_FACE_TEXT, Stages
from e3rg_core.streaming import stream_turn
from e3rg_core.types import Stage, Video

__all__ = ["NEUTRAL_FACE_TEXT", "OPTIONAL_STAGES", "STAGES", "EmotionDecided", "Heard", "Pipeline", "RenderedPiece",
           "SpokenPiece", "StageFailure", "StageResult", "TurnOutput", "TurnRequest"]


class Pipeline(Stages):
    """The three E3RG stages over the configured backends, each loaded once; a turn whole or streamed."""

    def run(self, request: TurnRequest, workdir: Path) -> Iterator[StageResult]:
        """Run a turn, the whole reply at once, yielding each stage's result as it is ready (files in ``workdir``)."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        avatar = self.avatar(request.avatar_id)
        heard = yield from self._stage(Stage.HEARD, lambda: self.hear(request, workdir))
        understanding = yield from self._stage(Stage.UNDERSTOOD, lambda: self.understand(heard, request))
        speech = yield from self._stage(Stage.SPOKEN, lambda: self.speak(
            understanding.reply, emotion=understanding.reply_emotion, intensity=understanding.reply_intensity,
            avatar=avatar, out_path=workdir / "reply.wav"))
        video = yield from self._stage(Stage.RENDERED, lambda: self.render(speech, avatar, workdir / "reply.mp4"))
        if self.config.perception.check_output and isinstance(video, Video):  # a failed video is not checked
            yield from self._stage(Stage.CHECKED, lambda: self.check(speech, video, avatar, workdir))

    def _stage(self, stage: Stage, work: Callable[[], StageValue]) -> Generator[StageResult, None, StageValue]:
        """Run one stage, yield its result and give its value (``value = yield from self._stage(...)``)."""
        result = self.run_stage(stage, work)
        yield result
        return result.value

    def stream(self, request: TurnRequest, workdir: Path, *,
               cancelled: Callable[[], bool] | None = None) -> Iterator[TurnEvent]:
        """Run a turn that speaks while it is still being written (``e3rg_core.streaming``).

        Yields ``EmotionDecided``, then ``SpokenPiece`` and ``RenderedPiece`` events as each piece of
        the reply is ready, then the same ``StageResult`` values as ``run``. Once ``cancelled`` says
        so (a barge-in) the events end there, the reply's writing and media work stopped.
        """
        return stream_turn(self, request, workdir, cancelled)

    def turn(self, request: TurnRequest, workdir: Path, *, stream: bool = False) -> TurnOutput:
        """Run a whole turn and return everything it produced."""
        events = self.stream(request, workdir) if stream else self.run(request, workdir)
        return TurnOutput.collect(events, self.avatar(request.avatar_id))
