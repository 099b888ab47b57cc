"""Hands-free talk in Chromium: the fake microphone says three things with pauses, the last over the
avatar's reply, then plays noise and music; nothing is clicked but Record (``bench/live.py``'s run on a
shorter plan, its figures not asserted: timings are the bench's)."""

from __future__ import annotations

import importlib
import shutil
import warnings

import pytest

from tests.app.browser_support import ROOT, AppServer

pytestmark = [
    pytest.mark.browser, pytest.mark.slow,
    pytest.mark.skipif(shutil.which("chromium") is None,
                       reason="needs Debian's chromium on PATH (.ci/run installs it: apt-get install chromium)"),
]
pytest.importorskip("playwright.sync_api", reason="needs playwright (tests/requirements.txt)")


#: bench/live.py's plan, shorter: two turns in a row, a long one said over the second reply (it spans the
#: moments the reply may start on a slow machine), then noise and music
PLAN = ((1.0, "I failed my driving test again today."),
        (13.0, "My sister called and we laughed for an hour."),  # after the first reply, even on a slow machine
        (3.5, "Sorry to cut in but I really want to tell you about my sister and the long trip we planned "
              "together for next summer"),
        (10.0, ("noise", 2.5)),  # once the third reply has been said
        (2.0, ("music", 3.0)),
        (1.0, None))
#: after the music the page is watched until it has listened with nothing changing for this long (a turn
#: made from the music would show), rather than for a fixed time that a slow machine might overrun
SETTLE_S = 2.5


@pytest.fixture(scope="module")
def live():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "bench"))
        yield importlib.import_module("live")


@pytest.fixture(scope="module")
def talked(live, tmp_path_factory, _shared_server):
    """One hands-free conversation: the plan, the page's events, the stored turns, the server's log."""
    # Real time on two cores: the app the other modules share (its models loaded, its threads alive) is
    # stopped first, not left beside this one; the next module that needs it starts it again (conftest.py).
    _shared_server.stop()
    root = tmp_path_factory.mktemp("handsfree")
    assert live.INTERRUPTION == 2  # the third utterance is said over the avatar's reply
    wav, marks = live.make_wav(root, PLAN)
    capture_ms, events, capture_epoch_s, server = _conversation(live, root / "server", wav, marks)
    if "faster_whisper" not in server.log_path.read_text(errors="replace"):
        # No audio at all reached the server's listener (its speech recognition never ran): on a loaded two-core
        # machine the page's stream from Chromium's fake microphone now and then never starts (issue 20's
        # twenty-second and twenty-third passes, on a slower machine). What these tests judge is the turn-taking
        # once audio flows, so the conversation is had once more on a fresh server, with a warning; a second
        # silent start fails them. (Why the stream does not start is not known; docs/replies.md.)
        warnings.warn("hands-free test: no audio reached the server; talking once more", stacklevel=2)
        capture_ms, events, capture_epoch_s, server = _conversation(live, root / "server_again", wav, marks)
    turns = live.stored_turns(server.data)
    log = server.log_path.read_text(errors="replace")
    # a turn counts as stored with 40 % of its words: on a loaded machine Gradio's streaming input drops
    # a piece now and then (a word or two misheard), which the bench reports and this test does not judge
    return marks, events, turns, live.measure(marks, capture_ms, events, turns, log, capture_epoch_s,
                                              heard_share=0.4)


def _conversation(live, folder, wav, marks):
    """The plan said into the page of a fresh server in ``folder``: the capture's start, the page's events,
    the capture's start as a Unix time, and the (stopped) server."""
    folder.mkdir()
    server = AppServer(folder)
    server.launch()
    try:
        server.wait_ready()
        capture_ms, events, capture_epoch_s = live.run_page(server.url, wav, marks[-1]["end_s"] + 1.5,
                                                            settle_s=SETTLE_S)
    finally:
        server.stop()
    return capture_ms, events, capture_epoch_s, server


def test_each_pause_ends_a_turn_and_none_is_lost(talked):
    marks, _events, turns, figures = talked
    said = [m["text"] for m in marks if m["kind"] == "speech"]
    assert figures["turns_lost"] == 0, figures["utterances"]
    assert len(turns) == len(said)  # two turns in a row and the interruption: one turn each
    # the first and the last are answered aloud; the second's reply may start only as the third is said
    rows = figures["utterances"]
    assert rows[0]["end_to_first_audio_s"] is not None and rows[-1]["end_to_first_audio_s"] is not None


def test_talking_over_the_reply_silences_it_and_stores_what_was_said(talked):
    _marks, _events, turns, figures = talked
    cut = [t for t in turns if "interrupted" in t["details"]]
    assert len(cut) == 1 and len(figures["barge_ins_at_s"]) == 1 and figures["false_barge_ins"] == 0
    assert figures["barge_in_to_silence_s"] is not None
    interrupted = cut[0]["details"]["interrupted"]
    unspoken = interrupted["unspoken"]
    assert unspoken and unspoken not in cut[0]["reply"]  # what was heard, not what was not
    # Something of it was heard, unless the reply began while the person was still talking: on a slow machine
    # (first audio ~7 s after a turn) the long third utterance is under way when the second reply starts, the
    # page cuts it at once ("barge-in at 0.02 s: the person is speaking; voiced 1.86 s") and none of it was heard
    assert cut[0]["reply"] or interrupted["at_s"] < 0.5


def test_silence_noise_and_music_make_no_turn(talked):
    *_rest, figures = talked
    assert figures["turns_from_silence_noise_or_music"] == []


def test_the_page_says_when_it_hears_and_thinks(talked):
    _marks, events, _turns, _figures = talked
    states = {e["ev"] for e in events if e["ev"].startswith("state:")}
    assert {"state:listening", "state:hearing", "state:thinking"} <= states
