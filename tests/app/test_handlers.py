"""The page's handlers called as plain functions, without a browser or a server (real speech and video)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from e3rg_core.errors import InputError
from e3rg_core.ui.access import Passes
from e3rg_core.ui.handlers import PageHandlers, TurnView, last
from e3rg_core.ui.served import ServedFiles
from tests.app.serve import build

SECRET = "a-secret-of-this-server"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("handlers")
    _demo, _launch, service = build(str(root / "data"), str(root / "cache"), size_px=192, check_output=False)
    yield service
    service.close()


@pytest.fixture()
def handlers(service, tmp_path):
    discarded = []
    h = PageHandlers(service.config, service, Passes(SECRET), ServedFiles(tmp_path / "served" / "e3rg", SECRET),
                     resources="Call 988.", discard=lambda *paths: discarded.extend(p for p in paths if p))
    h.discarded = discarded
    return h


def test_a_turn_paints_emotion_then_voice_then_face_and_ends_with_its_result(handlers, service, tmp_path):
    steps = []
    views = list(handlers.turn(None, "kofi", "I failed my driving test again today.", None, None,
                               progress=lambda fraction, desc: steps.append((fraction, desc))))
    assert all(isinstance(v, TurnView) for v in views) and views[-1].stored is not None
    first = views[0]
    assert max(first.emotion, key=first.emotion.get) == "sad" and "disappointed" in first.emotion_note
    assert first.reply_text and first.reply_audio is None  # the words come before the voice
    assert [v.reply_audio is not None for v in views].index(True) < [v.reply_video is not None for v in views].index(True)
    assert [d for _f, d in steps][:2] == ["listening", "understanding"] and sorted(steps) == steps
    result = views[-1].stored.result
    assert (result.emotion, result.label, result.crisis, result.risk, result.turn) == ("sad", "disappointed", False,
                                                                                       "none", 1)
    assert result.reply == first.reply_text and max(result.distribution, key=result.distribution.get) == "sad"
    assert {"heard", "understood", "spoken", "rendered"} <= set(result.timings)
    for path in (result.audio, result.video):  # served copies, never the data dir
        assert Path(path).is_file() and Path(path).is_relative_to(tmp_path / "served")
    assert result.details() == {"label": "disappointed", "confidence": round(result.confidence, 4), "risk": "none",
                                "turn": 1, "note": result.note}
    (stored,) = handlers.conversation(result.sid)
    assert stored["user_text"] == "I failed my driving test again today." and stored["reply"] == result.reply
    assert views[-1].stored.chat[0] == {"role": "user", "content": "I failed my driving test again today."}


def test_a_streamed_turn_hands_out_each_piece_once(handlers):
    views = list(handlers.turn(None, "amara", "My sister called and we laughed for an hour.", None, None, stream=True))
    pieces = [v.live_audio for v in views if v.live_audio]
    assert pieces and len(pieces) == len(set(pieces)) and any(v.live_video for v in views)
    result = last(iter(views))
    assert result.emotion == "happy" and {"first_audio_s", "first_video_s"} <= set(result.timings)


def test_refusals_say_what_is_allowed_and_change_nothing(handlers):
    sid = last(handlers.turn(None, "amara", "Hello there.", None, None)).sid
    with pytest.raises(InputError, match="nothing to answer"):
        list(handlers.turn(sid, "amara", "   ", None, None))
    with pytest.raises(InputError, match="unknown avatar 'bob'"):
        list(handlers.turn(sid, "bob", "Hi.", None, None))
    with pytest.raises(InputError, match="not one this server gave out"):
        handlers.resume(sid.split(".")[2])  # a bare conversation id
    with pytest.raises(InputError, match="pick a conversation"):
        handlers.resume("")
    other = handlers.new_session(None, "amara").token  # another browser
    with pytest.raises(InputError, match="belongs to someone else"):
        handlers.export(handlers.passes.issue(other.split(".")[1], sid.split(".")[2]))
    assert [t["user_text"] for t in handlers.conversation(sid)] == ["Hello there."]


def test_redo_takes_the_users_own_feeling(handlers):
    sid = last(handlers.turn(None, "amara", "I failed my driving test again today.", None, None)).sid
    with pytest.raises(InputError, match="say how you feel"):
        list(handlers.redo(sid, "amara", ""))
    redone = last(handlers.redo(sid, "amara", "lonely"))
    assert (redone.label, redone.emotion, redone.turn) == ("lonely", "sad", 1)
    assert [t["source"] for t in handlers.conversation(sid)] == ["corrected"]


def test_sessions_new_resume_list_delete(handlers, service):
    first = last(handlers.turn(None, "rosa", "My sister called and we laughed for an hour.", None, None)).sid
    fresh = handlers.new_session(first, "kofi")
    assert fresh.token.split(".")[1] == first.split(".")[1] and fresh.chat == [] and fresh.avatar_id == "kofi"
    assert {token for _label, token in fresh.past} == {first, fresh.token}
    opened = handlers.resume(first)
    assert opened.token == first and opened.avatar_id == "rosa" and len(opened.timeline) == 2
    gone = handlers.delete_session(first, "amara")
    assert gone.note == "Conversation deleted." and gone.token != first
    assert first not in {token for _label, token in handlers.conversations(gone.token)}
    with pytest.raises(InputError):
        service.session(first.split(".")[2])


def test_the_page_opens_with_its_conversation_and_a_bad_pass_starts_afresh(handlers):
    sid = last(handlers.turn(None, "amara", "Hello there.", None, None)).sid
    page = handlers.load(sid)
    assert page.token == sid and len(page.chat) >= 2 and ("amara" in {i for _l, i in page.avatar_choices})
    assert handlers.load("p1.made-up").chat == []
    assert handlers.pick_avatar(sid, 0) == page.avatar_choices[0][1] and handlers.pick_avatar(sid, 99) is None


def test_shared_conversations_are_one_list_only_when_the_operator_says_so(handlers, service, tmp_path):
    def two_visitors(shared: bool):
        h = PageHandlers(service.config, service, Passes(SECRET, shared=shared),
                         ServedFiles(tmp_path / f"served-{shared}", SECRET), resources="")
        first = h.new_session(None, "amara").token
        seen = {token.split(".")[2] for _label, token in h.new_session(None, "amara").past}  # the second visitor's
        return first.split(".")[2], seen

    first, seen = two_visitors(False)
    assert first not in seen  # the default: each browser its own
    first, seen = two_visitors(True)
    assert first in seen  # a kiosk: one list


def test_a_custom_avatar_is_its_makers_alone(handlers):
    portrait = Path(__file__).resolve().parents[2] / "avatars" / "kofi" / "portrait.png"
    mine = handlers.new_session(None, "amara").token
    with pytest.raises(InputError, match="upload a portrait"):
        handlers.create_avatar("Zed", "young", "male", None, None, True, mine)
    with pytest.raises(InputError, match="needs the pass"):
        handlers.create_avatar("Zed", "young", "male", str(portrait), None, True, None)
    made = handlers.create_avatar("Zed", "young", "male", str(portrait), None, True, mine)
    assert made.avatar_id.startswith("zed-") and "Created **Zed**" in made.note
    assert made.avatar_id in {a["id"] for a in handlers.avatars(mine)}
    assert handlers.resume(mine).avatar_id == made.avatar_id  # the open conversation talks to it now
    stranger = handlers.new_session(None, "amara").token
    assert made.avatar_id not in {a["id"] for a in handlers.avatars(stranger)}
    with pytest.raises(InputError, match="only the avatars you made"):
        handlers.delete_avatar(stranger, made.avatar_id)
    after = handlers.delete_avatar(mine, made.avatar_id)
    assert after.avatar_id == handlers.default_avatar and made.avatar_id not in {a["id"] for a in after.avatars}


def test_the_error_wrapper_says_what_is_allowed_and_hides_the_rest():
    import gradio as gr

    from e3rg_core.ui.app import shown

    @shown("Could not export")
    def refused():
        raise InputError("there is no conversation open to export")

    @shown()
    def broken():
        yield 1
        raise KeyError("internal detail")

    with pytest.raises(gr.Error, match="no conversation open to export") as raised:
        refused()
    assert raised.value.title == "Could not export"
    with pytest.raises(gr.Error) as raised:
        list(broken())
    assert "KeyError" in raised.value.message and "internal detail" not in raised.value.message


def test_the_page_update_of_a_turn(handlers):
    from e3rg_core.ui.app import Widgets, _turn_update

    names = ("emotion", "reply_text", "reply_audio", "reply_video", "emotion_note", "timings", "chat", "timeline",
             "sid_store", "text_in", "audio_in", "video_in", "check_note", "correction", "live_audio", "live_video")
    w = Widgets(**{n: n for n in names})  # the widgets stand in as their names
    views = list(handlers.turn(None, "amara", "Hello there.", None, None))
    first = _turn_update(w, views[0])
    assert {"emotion", "emotion_note", "reply_text", "check_note"} == set(first)  # the rest stay as they are
    end = _turn_update(w, views[-1])
    assert (end["text_in"], end["audio_in"], end["sid_store"]) == ("", None, views[-1].stored.token)
    assert _turn_update(w, replace(views[0], live_audio="piece.wav"))["live_audio"] == "piece.wav"


def test_background_work_can_run_at_the_lowest_cpu_priority():
    import os
    import threading

    from e3rg_core.ui.handlers import _quietly

    seen = []

    def work():
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=_quietly, args=(work,), kwargs={"nice": 19})
    thread.start()
    thread.join()
    assert seen == [19] and os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) < 19  # the caller keeps its own
