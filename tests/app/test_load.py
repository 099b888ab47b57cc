"""Concurrent sessions on the served app: no turn lost, none crossed into another session.

``bench/load.py`` small: 4 sessions x 2 typed turns at once against ``tests/app/serve.py`` (the
scripted understander, real speech and video), each session through its own ``gradio_client``
session, on the served app the app tests share (``conftest.py``; the modules run one at a time, so
nothing else writes to it meanwhile). Afterwards the store is read directly: the run made exactly its
own sessions, and every one holds exactly its own turns, in order. No timing is asserted.
"""

from __future__ import annotations

import importlib

import pytest

from e3rg_core.sessions.store import MAX_LIST_LIMIT
from tests.app.browser_support import ROOT

pytestmark = pytest.mark.slow

N_SESSIONS, N_TURNS = 4, 2


@pytest.fixture(scope="module")
def load():
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "bench"))  # the benches import their shared helpers as ``_common``
        yield importlib.import_module("load")


def _session_ids(data_dir) -> set[str]:
    from e3rg_core.sessions import SessionStore

    with SessionStore(data_dir) as store:
        ids = {info.id for info in store.list(owner=None, limit=MAX_LIST_LIMIT)}
    assert len(ids) < MAX_LIST_LIMIT, "the shared server holds too many conversations to list them all"
    return ids


@pytest.fixture(scope="module")
def loaded(load, shared_server):
    """The load run's results, the served data directory, and the sessions the run made."""
    before = _session_ids(shared_server.data)
    results = load.run_load(shared_server.url, n_sessions=N_SESSIONS, n_turns=N_TURNS)
    return results, shared_server.data, _session_ids(shared_server.data) - before


def test_every_turn_comes_back_to_its_own_session(loaded):
    results, _data_dir, _made = loaded
    rows = results["sessions"]
    assert [r["lost_why"] for r in rows] == [[]] * N_SESSIONS
    assert [r["errors"] for r in rows] == [[]] * N_SESSIONS
    assert [r["crossed_with"] for r in rows] == [[]] * N_SESSIONS
    # the queue (16) holds 4 sessions' turns, so nothing is refused either
    assert (results["turns_ok"], results["refused"], results["lost"]) == (N_SESSIONS * N_TURNS, 0, 0)
    assert [r["stored"]["ok"] for r in rows] == [True] * N_SESSIONS  # the /export of each session
    assert len({r["sid"] for r in rows}) == N_SESSIONS and all(len(r["latency_s"]) == N_TURNS for r in rows)


def test_the_store_holds_each_sessions_own_turns_in_order(load, loaded):
    from e3rg_core.sessions import SessionStore

    results, data_dir, made = loaded
    # the app hands out passes (e3rg_core.ui.access): the conversation id is the third part
    assert made == {r["sid"].split(".")[2] for r in results["sessions"]}
    with SessionStore(data_dir) as store:
        for row in results["sessions"]:
            session = store.get(row["sid"].split(".")[2])
            assert [t.record.user_text for t in session.turns] == [load.message(row["session"], t)
                                                                    for t in range(N_TURNS)]
            assert [t.index for t in session.turns] == list(range(N_TURNS))
            assert {t.record.avatar_id for t in session.turns} == {row["avatar"]} == {session.info.avatar_id}
            assert all(t.record.reply_text for t in session.turns)
