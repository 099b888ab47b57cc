"""Streamed turns (``Pipeline.stream``): the voice begins while the reply is still being written.

Real speech and video; the understander is the scripted ``KeywordChat`` of ``tests/app/serve.py``,
which writes its reply a word every ``WORD_S`` seconds, like the embedded model on two cores.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile

from e3rg_core.errors import BackendFailed
from e3rg_core.media.mp4 import probe
from e3rg_core.events import EmotionDecided, RenderedPiece, SpokenPiece, StageFailure, StageResult, TurnRequest
from e3rg_core.ui.service import Committed
from e3rg_core.threads import stop_requested
from tests.app import serve
from tests.app.serve import build

TEXT = "I failed my driving test again today."  # KeywordChat: disappointed, two sentences


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    _demo, _launch, service = build(str(root / "data"), str(root / "cache"), size_px=192, check_output=False)
    yield service
    service.close()


def _chat(service):
    return service.pipeline.understander().backend("qwen1.5b")


def _stream_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in ("e3rg-reply", "e3rg-media")]


def test_the_voice_begins_before_the_reply_is_written_and_the_pieces_make_the_whole(service, tmp_path, monkeypatch):
    chat = _chat(service)
    written = chat.chat_stream
    first_heard, waited = threading.Event(), []

    def holds_the_rest_back(messages, **kwargs):
        """Writes the first sentence (and the next word, which shows it ended), then waits until its
        voice is out before writing the rest."""
        ended = False
        for piece in written(messages, **kwargs):
            yield piece
            if ended and not waited:
                waited.append(first_heard.wait(timeout=120))
            ended = ended or piece.endswith(".")

    monkeypatch.setattr(chat, "chat_stream", holds_the_rest_back)
    timeline: list[tuple[str, float, object]] = []
    began = time.perf_counter()
    calls_before = chat.calls
    for event in service.pipeline.stream(TurnRequest(text=TEXT, avatar_id="amara"), tmp_path):
        kind = type(event).__name__ if not isinstance(event, StageResult) else event.stage
        timeline.append((kind, time.perf_counter() - began, event))
        if isinstance(event, SpokenPiece):
            first_heard.set()
    # the voice of the first sentence came while the model was still writing (or it would have
    # waited for ever: the writer held the rest back until then)
    assert waited == [True]
    kinds = [k for k, _, _ in timeline]
    assert kinds[:2] == ["heard", "EmotionDecided"] and kinds[-3:] == ["understood", "spoken", "rendered"]
    assert isinstance(timeline[1][2], EmotionDecided)
    decided = timeline[1][2].decision  # the emotion, before the reply is written
    assert (decided.emotion, decided.reply_emotion) == ("disappointed", "sad") and not hasattr(decided, "reply")

    spoken = [e for _, _, e in timeline if isinstance(e, SpokenPiece)]
    rendered = [e for _, _, e in timeline if isinstance(e, RenderedPiece)]
    reply = timeline[-3][2].value.reply
    assert len(spoken) >= 2 and [p.index for p in spoken] == list(range(len(spoken)))
    assert " ".join(p.text for p in spoken) == reply == serve.REPLIES["driving"][1]
    assert spoken[0].text == "Oh no, that must sting after all that practice."
    # each piece's video follows its voice; the segments sit end to end on one clock
    assert kinds.index("SpokenPiece") < kinds.index("RenderedPiece")
    assert [r.index for r in rendered] == list(range(len(rendered)))
    assert sorted({r.piece for r in rendered}) == [p.index for p in spoken]
    fps = rendered[0].video.fps
    assert rendered[0].video.n_frames == 25 and rendered[1].piece == 0  # the first second comes on its own
    for k, segment in enumerate(rendered):
        assert segment.start_s == pytest.approx(sum(r.video.n_frames for r in rendered[:k]) / fps)
    for k, piece in enumerate(spoken):
        assert piece.start_s == pytest.approx(sum(p.speech.duration_s for p in spoken[:k]))
        frames = sum(r.video.n_frames for r in rendered if r.piece == k)
        assert frames == round(piece.speech.duration_s * fps)  # padded to whole frames

    speech, video = timeline[-2][2].value, timeline[-1][2].value
    audio, rate = soundfile.read(str(speech.wav_path), dtype="int16")
    pieces = np.concatenate([soundfile.read(str(p.speech.wav_path), dtype="int16")[0] for p in spoken])
    assert np.array_equal(audio, pieces)  # the turn's WAV is the pieces that were played
    assert speech.visemes[-1].end_s <= speech.duration_s + 1e-6 and speech.text == reply
    info = probe(video.mp4_path)
    assert info.n_frames == sum(r.video.n_frames for r in rendered) == video.n_frames
    assert info.audio_duration_s == pytest.approx(speech.duration_s, abs=0.05)  # one audio track, in sync
    assert (tmp_path / "reply.m4a").is_file()  # encoded while the last video rendered, copied by the join
    assert chat.calls - calls_before == 2  # one emotion vote, one reply: nothing asked twice
    assert _stream_threads() == []


def test_a_streamed_turn_is_stored_like_a_whole_one(service):
    session = service.new_session()
    events = list(service.turn(session.info.id, text=TEXT, stream=True))
    assert isinstance(events[-1], Committed)
    stored = events[-1].turn
    assert {"reply_audio", "reply_video"} <= set(stored.media)
    assert stored.record.reply_text == serve.REPLIES["driving"][1]
    streamed = stored.record.details["streamed"]
    assert 0 < streamed["first_audio_s"] < streamed["first_video_s"]
    assert service.store.history(session.info.id)[-1].text == stored.record.reply_text


def test_a_video_piece_that_fails_leaves_the_voice(service, tmp_path, monkeypatch):
    renderer = service.pipeline.renderer()
    real, calls = renderer.render, []

    def second_fails(speech, **kwargs):
        calls.append(kwargs["start_s"])
        if len(calls) == 2:
            raise BackendFailed("the GPU fell over")
        return real(speech, **kwargs)

    monkeypatch.setattr(renderer, "render", second_fails)
    events = list(service.pipeline.stream(TurnRequest(text=TEXT), tmp_path))
    results = {e.stage: e.value for e in events if isinstance(e, StageResult)}
    assert isinstance(results["rendered"], StageFailure) and "the GPU fell over" in results["rendered"].message
    assert results["spoken"].duration_s > 2 and results["understood"].reply == serve.REPLIES["driving"][1]
    assert len(calls) == 2  # no more pieces are rendered once one failed
    assert _stream_threads() == []


def test_a_reply_that_fails_midway_fails_the_turn_cleanly(service, tmp_path, monkeypatch):
    chat = _chat(service)

    def breaks(messages, **kwargs):
        yield "Oh no, that must sting. "
        yield "After all"
        raise BackendFailed("llama.cpp could not answer: out of memory")

    monkeypatch.setattr(chat, "chat_stream", breaks)
    seen = []
    with pytest.raises(BackendFailed, match="out of memory"):
        for event in service.pipeline.stream(TurnRequest(text=TEXT), tmp_path):
            seen.append(type(event).__name__)
    assert "SpokenPiece" in seen  # the first sentence was already spoken when the model failed
    assert _stream_threads() == []


def test_a_listener_that_leaves_stops_the_turn(service, tmp_path):
    events = service.pipeline.stream(TurnRequest(text=TEXT), tmp_path)
    for event in events:
        if isinstance(event, SpokenPiece):
            break
    events.close()  # the browser went away
    assert _stream_threads() == []
    assert isinstance(event, SpokenPiece) and Path(event.speech.wav_path).is_file()


def test_speech_and_video_work_leaves_the_llm_a_core_meanwhile(service, tmp_path, monkeypatch):
    """While a piece is spoken or rendered beside the writing LLM it is marked ``cores.busy``, so
    llama.cpp computes on a thread fewer (its threads stall when one loses its core)."""
    from e3rg_core import cores

    renderer, speaker = service.pipeline.renderer(), service.pipeline.speaker("embedded")
    real_render, real_speak, seen = renderer.render, speaker.synthesize, []
    monkeypatch.setattr(renderer, "render", lambda *a, **k: (seen.append(("render", cores.others_busy())),
                                                             real_render(*a, **k))[1])
    monkeypatch.setattr(speaker, "synthesize", lambda *a, **k: (seen.append(("speak", cores.others_busy())),
                                                                real_speak(*a, **k))[1])
    list(service.pipeline.stream(TurnRequest(text=TEXT, avatar_id="amara"), tmp_path))
    assert {kind for kind, _ in seen} == {"render", "speak"} and all(flag for _, flag in seen)
    assert not cores.others_busy()


def test_while_the_llm_writes_video_is_rendered_a_second_at_a_time(service, tmp_path):
    """Short segments while the LLM writes, so a sentence that ends is never stuck behind a long render."""
    events = list(service.pipeline.stream(TurnRequest(text=TEXT, avatar_id="amara"), tmp_path))
    kinds = [type(e).__name__ for e in events]
    rendered = [e for e in events if isinstance(e, RenderedPiece)]
    spoken = [e for e in events if isinstance(e, SpokenPiece)]
    assert kinds.index("RenderedPiece") == kinds.index("SpokenPiece") + 1  # the first second as soon as the voice is out
    # the first piece is about 3 s long and the second sentence takes the LLM about a second more:
    # meanwhile the first piece's video comes a second at a time
    assert spoken[0].speech.duration_s > 2.5 and [r.video.n_frames for r in rendered[:2]] == [25, 25]
    assert sum(r.video.n_frames for r in rendered) == round(sum(p.speech.duration_s for p in spoken) * 25)


def test_a_cancelled_turn_ends_while_the_model_is_still_writing(service, tmp_path, monkeypatch):
    """A barge-in while the model writes a sentence (nothing new to speak) ends the turn at once,
    not when the sentence is done; the writer is told to stop (llama.cpp stops at its next token)."""
    chat = _chat(service)
    release = threading.Event()

    def slow_second_sentence(messages, **kwargs):
        yield "Oh no, that must sting. "
        yield "After"
        for _ in range(300):  # a long sentence still being written, a token every 10 ms, as llama.cpp stops
            if release.wait(timeout=0.01) or stop_requested():
                break
        yield " all that practice."

    monkeypatch.setattr(chat, "chat_stream", slow_second_sentence)
    cancel = threading.Event()
    seen, ended_s = [], None
    for event in service.pipeline.stream(TurnRequest(text=TEXT), tmp_path, cancelled=cancel.is_set):
        seen.append(event)
        if isinstance(event, SpokenPiece):
            cancel.set()
            began = time.perf_counter()
            threading.Timer(3.0, release.set).start()  # the model would end its sentence only now
    ended_s = time.perf_counter() - began
    release.set()
    assert ended_s < 2.5, f"the cancelled turn waited {ended_s:.2f} s for the model"
    assert not any(isinstance(e, StageResult) and e.stage.name == "UNDERSTOOD" for e in seen)
