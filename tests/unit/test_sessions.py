"""Stage 2: persistent conversations in SQLite, their media, atomicity, restarts and export."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from e3rg_core.errors import BackendFailed, ConfigError, InputError
from e3rg_core.sessions import MAX_TEXT_CHARS, SCHEMA_VERSION, SessionStore, TurnRecord
from e3rg_core.sessions import store as store_module
from e3rg_core.sessions.records import record_to_dict
from e3rg_core.types import Utterance


def _record(**changes) -> TurnRecord:
    base = TurnRecord(
        user_text="I failed my driving test again.",
        input_kind="audio",
        user_emotion="disappointed",
        user_coarse="sad",
        confidence=0.75,
        emotion_source="predicted",
        reply_text="That sounds really frustrating. You will get there.",
        reply_emotion="sad",
        reply_intensity=0.6,
        avatar_id="eileen",
        timings_s={"asr": 0.4, "llm": 1.25},
        details={"votes": [{"voter": "minilm", "label": "sad"}], "cues": "voice: low energy"},
    )
    return dataclasses.replace(base, **changes)


def _media(folder: Path, tag: str, keys=("user_audio", "reply_audio", "reply_video")) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    suffix = {"user_audio": ".WAV", "user_video": ".webm", "reply_audio": ".wav", "reply_video": ".mp4"}
    out = {}
    for key in keys:
        path = folder / f"{tag}-{key}{suffix[key]}"
        path.write_bytes(f"{tag}:{key}:".encode() + os.urandom(64))
        out[key] = path
    return out


def _dirs(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.exists() else set()


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(data_dir):
    s = SessionStore(data_dir)
    yield s
    s.close()


# --- opening -------------------------------------------------------------------------------------


def test_new_store_creates_a_wal_database_and_media_folder(store, data_dir):
    assert (data_dir / "sessions.sqlite3").is_file()
    assert (data_dir / "media").is_dir()
    with sqlite3.connect(data_dir / "sessions.sqlite3") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    conn = store._connect()
    try:
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    finally:
        conn.close()


def test_newer_schema_on_disk_is_refused_and_kept(store, data_dir):
    store.create("eileen")
    store.close()
    with sqlite3.connect(data_dir / "sessions.sqlite3") as conn:
        conn.execute("PRAGMA user_version = 7")
    with pytest.raises(ConfigError, match="schema version 7, newer .*up to 1"):
        SessionStore(data_dir)
    with sqlite3.connect(data_dir / "sessions.sqlite3") as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1


def test_corrupt_database_names_the_file_and_the_fix(data_dir):
    data_dir.mkdir()
    db = data_dir / "sessions.sqlite3"
    db.write_bytes(b"this is not an SQLite file\n" * 200)
    with pytest.raises(ConfigError) as info:
        SessionStore(data_dir)
    assert str(db) in str(info.value) and "move it aside" in str(info.value)
    assert db.read_bytes().startswith(b"this is not")


def test_some_other_sqlite_database_is_not_taken_over(data_dir):
    data_dir.mkdir()
    with sqlite3.connect(data_dir / "sessions.sqlite3") as conn:
        conn.execute("CREATE TABLE photos (id INTEGER)")
    with pytest.raises(ConfigError, match="not an e3rg session store.*photos"):
        SessionStore(data_dir)


def test_closed_store_refuses_calls(store):
    info = store.create("eileen")
    store.close()
    store.close()  # twice is fine
    with pytest.raises(ConfigError, match="closed"):
        store.get(info.id)


def test_import_loads_nothing_heavy():
    code = ("import sys, e3rg_core.sessions; "
            "bad = [m for m in ('gradio', 'numpy', 'torch') if m in sys.modules]; sys.exit(bool(bad))")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


# --- sessions ------------------------------------------------------------------------------------


def test_create_and_get_an_empty_session(store):
    info = store.create("eileen", owner="browser-1")
    assert len(info.id) == 32 and info.id == info.id.lower() and int(info.id, 16) >= 0
    assert (info.avatar_id, info.owner, info.n_turns, info.title) == ("eileen", "browser-1", 0, "")
    created = datetime.fromisoformat(info.created_at)
    assert created.utcoffset() == timedelta(0)
    assert info.updated_at == info.created_at
    session = store.get(info.id)
    assert session.info == info and session.turns == ()
    assert store.exists(info.id)
    assert store.history(info.id) == ()


def test_create_validates_avatar_and_owner(store):
    with pytest.raises(InputError, match="invalid avatar id"):
        store.create("../eileen")
    with pytest.raises(InputError, match="owner"):
        store.create("eileen", owner="x" * 201)
    assert store.list() == ()


@pytest.mark.parametrize("bad", ["../x", "", "A" * 32, "0123456789ABCDEF0123456789abcdef", "g" * 32, "a" * 31,
                                 "a" * 33, "12345678-1234-1234-1234-123456789abc", "../../etc/passwd", None, 5])
def test_malformed_session_ids_are_rejected(store, tmp_path, bad):
    assert store.exists(bad) is False
    calls = [lambda: store.get(bad), lambda: store.delete(bad), lambda: store.history(bad),
             lambda: store.set_avatar(bad, "eileen"), lambda: store.add_turn(bad, _record(), {}),
             lambda: store.replace_last_turn(bad, _record(), {}), lambda: store.export(bad, tmp_path / "x.zip")]
    for call in calls:
        with pytest.raises(InputError, match="invalid session id"):
            call()
    assert _dirs(store.media_dir) == set()


def test_unknown_session_ids_are_input_errors(store, tmp_path):
    ghost = "0" * 32
    assert not store.exists(ghost)
    calls = [lambda: store.get(ghost), lambda: store.delete(ghost), lambda: store.history(ghost),
             lambda: store.set_avatar(ghost, "eileen"), lambda: store.export(ghost, tmp_path / "x.zip"),
             lambda: store.add_turn(ghost, _record(), _media(tmp_path / "in", "a")),
             lambda: store.replace_last_turn(ghost, _record(), {})]
    for call in calls:
        with pytest.raises(InputError, match=f"no conversation {ghost}"):
            call()
    assert _dirs(store.media_dir) == set()
    assert not (tmp_path / "x.zip").exists()


def test_list_orders_by_latest_activity_and_filters_by_owner(store):
    a = store.create("eileen", owner="u1")
    b = store.create("eileen", owner="u2")
    c = store.create("amara", owner="u1")
    assert [s.id for s in store.list()] == [c.id, b.id, a.id]
    store.add_turn(a.id, _record(), {})
    assert [s.id for s in store.list()] == [a.id, c.id, b.id]
    assert [s.id for s in store.list(owner="u1")] == [a.id, c.id]
    assert store.list(owner="") == ()
    assert [s.id for s in store.list(limit=1)] == [a.id]
    listed = store.list()[0]
    assert (listed.n_turns, listed.title) == (1, "I failed my driving test again.")
    for bad in (0, -1, 1001, 2.0, True):
        with pytest.raises(InputError, match="limit"):
            store.list(limit=bad)


def test_set_avatar_switches_and_counts_as_activity(store):
    info = store.create("eileen")
    updated = store.set_avatar(info.id, "amara")
    assert updated.avatar_id == "amara" and updated.updated_at > info.updated_at
    assert store.get(info.id).info == updated
    with pytest.raises(InputError, match="invalid avatar id"):
        store.set_avatar(info.id, "Amara!")
    assert store.get(info.id).info.avatar_id == "amara"


# --- turns ---------------------------------------------------------------------------------------


def test_add_turn_stores_the_record_and_copies_media(store, tmp_path):
    info = store.create("eileen")
    sources = _media(tmp_path / "in", "t0")
    turn = store.add_turn(info.id, _record(), sources)
    assert turn.index == 0 and len(turn.id) == 32
    assert set(turn.media) == set(sources)
    for key, path in turn.media.items():
        assert path.is_absolute()
        assert path.parent == store.media_dir / info.id / turn.id
        assert path.read_bytes() == sources[key].read_bytes()
        assert sources[key].exists()  # copied, not moved
    assert turn.media["user_audio"].name == "user_audio.wav"  # suffix lower-cased
    assert turn.media["reply_video"].name == "reply_video.mp4"
    stored = store.get(info.id)
    assert stored.turns == (turn,)
    assert stored.turns[0].record == _record()
    assert stored.info.n_turns == 1 and stored.info.updated_at == turn.created_at > info.created_at
    assert _dirs(store.media_dir / info.id) == {turn.id}  # no temporary folder left
    with sqlite3.connect(store.db_path) as conn:  # stored relative to data_dir, so the folder can move
        media_json = json.loads(conn.execute("SELECT media_json FROM turns").fetchone()[0])
    assert media_json["reply_audio"] == f"media/{info.id}/{turn.id}/reply_audio.wav"


def test_a_turn_without_media_creates_no_folder(store):
    info = store.create("eileen")
    turn = store.add_turn(info.id, _record(input_kind="text"), {})
    assert turn.media == {}
    assert not (store.media_dir / info.id).exists()


def test_title_is_the_first_user_text_on_one_line_cut_to_60(store):
    info = store.create("eileen")
    store.add_turn(info.id, _record(user_text="  My   dog\nran away " + "and I looked everywhere " * 5), {})
    store.add_turn(info.id, _record(user_text="second"), {})
    title = store.get(info.id).info.title
    assert title.startswith("My dog ran away and I looked") and len(title) == 60 and title.endswith("…")
    short = store.create("eileen")
    store.add_turn(short.id, _record(user_text="hi"), {})
    assert store.get(short.id).info.title == "hi"


def test_history_alternates_speaker_and_listener_in_turn_order(store):
    info = store.create("eileen")
    for i in range(3):
        store.add_turn(info.id, _record(user_text=f"user {i}", reply_text=f"avatar {i}"), {})
    history = store.history(info.id)
    assert history == tuple(
        Utterance(role, f"{who} {i}") for i in range(3) for role, who in (("speaker", "user"), ("listener", "avatar"))
    )
    assert [t.index for t in store.get(info.id).turns] == [0, 1, 2]


def test_history_leaves_out_empty_lines(store):
    info = store.create("eileen")
    store.add_turn(info.id, _record(user_text="", input_kind="video", reply_text="I'm here."), {})
    assert store.history(info.id) == (Utterance("listener", "I'm here."),)


def test_media_keys_and_files_are_checked_before_anything_is_written(store, tmp_path):
    info = store.create("eileen")
    sources = _media(tmp_path / "in", "x")
    with pytest.raises(InputError, match="unknown media key 'portrait'; allowed: user_audio, user_video"):
        store.add_turn(info.id, _record(), {**sources, "portrait": sources["user_audio"]})
    with pytest.raises(InputError, match="does not exist"):
        store.add_turn(info.id, _record(), {"user_audio": tmp_path / "nope.wav"})
    with pytest.raises(InputError, match="does not exist"):
        store.add_turn(info.id, _record(), {"user_audio": tmp_path})  # a folder is not a file
    assert store.get(info.id).turns == ()
    assert not (store.media_dir / info.id).exists()


@pytest.mark.parametrize("changes, message", [
    ({"input_kind": "gif"}, "input_kind"),
    ({"emotion_source": "guessed"}, "emotion_source"),
    ({"user_emotion": "meh"}, "user_emotion"),
    ({"user_coarse": "joyful"}, "user_coarse"),
    ({"reply_emotion": "furious"}, "reply_emotion"),
    ({"confidence": 1.5}, "confidence"),
    ({"confidence": float("nan")}, "confidence"),
    ({"reply_intensity": "high"}, "reply_intensity"),
    ({"user_text": "x" * (MAX_TEXT_CHARS + 1)}, f"at most {MAX_TEXT_CHARS}"),
    ({"reply_text": None}, "reply_text"),
    ({"avatar_id": "../eileen"}, "invalid avatar id"),
    ({"timings_s": {"llm": -1.0}}, "timings_s"),
    ({"timings_s": {"llm": float("inf")}}, "timings_s"),
    ({"details": {"votes": {1, 2}}}, "not JSON-serialisable"),
    ({"details": {"score": float("nan")}}, "not JSON-serialisable"),
    ({"details": ["not", "a", "mapping"]}, "details"),
])
def test_records_that_cannot_be_stored_are_input_errors(store, tmp_path, changes, message):
    info = store.create("eileen")
    with pytest.raises(InputError, match=message):
        store.add_turn(info.id, _record(**changes), _media(tmp_path / "in", "x"))
    assert store.get(info.id).info.n_turns == 0
    assert not (store.media_dir / info.id).exists()


def test_text_of_exactly_the_limit_is_kept(store):
    info = store.create("eileen")
    store.add_turn(info.id, _record(reply_text="y" * MAX_TEXT_CHARS), {})
    assert store.get(info.id).turns[0].record.reply_text == "y" * MAX_TEXT_CHARS


def test_a_full_session_refuses_more_turns_but_allows_replacing_the_last(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_TURNS", 3)
    info = store.create("eileen")
    for _ in range(3):
        store.add_turn(info.id, _record(), {})
    with pytest.raises(InputError, match="full .*start a new conversation"):
        store.add_turn(info.id, _record(), {})
    store.replace_last_turn(info.id, _record(reply_text="better"), {})
    assert store.get(info.id).info.n_turns == 3


def test_replace_last_turn_swaps_the_record_and_its_media(store, tmp_path):
    info = store.create("eileen")
    first = store.add_turn(info.id, _record(user_text="one"), _media(tmp_path / "in", "t0"))
    second = store.add_turn(info.id, _record(user_text="two"), _media(tmp_path / "in", "t1"))
    corrected = _record(user_text="two", user_emotion="anxious", emotion_source="corrected", reply_emotion="fear")
    sources = _media(tmp_path / "in", "t1b", keys=("reply_audio",))
    new = store.replace_last_turn(info.id, corrected, sources)
    assert new.index == 1 and new.id != second.id
    session = store.get(info.id)
    assert session.info.n_turns == 2 and session.turns == (first, new)
    assert session.turns[1].record == corrected
    assert set(new.media) == {"reply_audio"}
    assert new.media["reply_audio"].read_bytes() == sources["reply_audio"].read_bytes()
    assert not (store.media_dir / info.id / second.id).exists()  # the old media went with the old turn
    assert all(p.exists() for p in first.media.values())
    assert _dirs(store.media_dir / info.id) == {first.id, new.id}


def test_replacing_the_only_turn_updates_the_title(store):
    info = store.create("eileen")
    store.add_turn(info.id, _record(user_text="typo"), {})
    store.replace_last_turn(info.id, _record(user_text="fixed"), {})
    assert store.get(info.id).info.title == "fixed"


def test_replace_last_turn_on_an_empty_session_is_an_input_error(store, tmp_path):
    info = store.create("eileen")
    with pytest.raises(InputError, match="no turn to replace"):
        store.replace_last_turn(info.id, _record(), _media(tmp_path / "in", "x"))
    assert store.get(info.id).turns == ()
    assert not (store.media_dir / info.id).exists()


# --- atomicity -----------------------------------------------------------------------------------


def _snapshot(store, session_id):
    return store.get(session_id), _dirs(store.media_dir / session_id)


def test_a_media_file_vanishing_mid_copy_leaves_everything_as_it_was(store, tmp_path, monkeypatch):
    info = store.create("eileen")
    store.add_turn(info.id, _record(), _media(tmp_path / "in", "t0"))
    before = _snapshot(store, info.id)
    sources = _media(tmp_path / "in", "t1")
    real_copy = shutil.copyfile
    copied = []

    def copy_then_lose_the_next(src, dst):
        real_copy(src, dst)
        copied.append(dst)
        sources["reply_video"].unlink(missing_ok=True)  # deleted by someone else after validation

    monkeypatch.setattr(store_module.shutil, "copyfile", copy_then_lose_the_next)
    with pytest.raises(InputError, match="disappeared"):
        store.add_turn(info.id, _record(), sources)
    assert copied and not any(Path(p).exists() for p in copied)
    assert _snapshot(store, info.id) == before


def test_a_disk_error_while_copying_is_a_backend_failure_and_changes_nothing(store, tmp_path, monkeypatch):
    info = store.create("eileen")
    before = _snapshot(store, info.id)

    def no_space(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module.shutil, "copyfile", no_space)
    with pytest.raises(BackendFailed, match="No space left"):
        store.add_turn(info.id, _record(), _media(tmp_path / "in", "x"))
    assert _snapshot(store, info.id) == before


def _fail_before_commit(monkeypatch):
    """Make the next write transaction fail after its body ran (the media folder is already renamed)."""
    real = SessionStore._transaction
    seen = []

    @contextmanager
    def failing(self):
        with real(self) as conn:
            yield conn
            seen.append([p for p in self.media_dir.rglob("*") if p.is_dir()])
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(SessionStore, "_transaction", failing)
    return seen


def test_a_failed_commit_after_the_rename_rolls_back_the_row_and_the_folder(store, tmp_path, monkeypatch):
    info = store.create("eileen")
    store.add_turn(info.id, _record(user_text="kept"), _media(tmp_path / "in", "t0"))
    before = _snapshot(store, info.id)
    seen = _fail_before_commit(monkeypatch)
    with pytest.raises(BackendFailed, match="disk I/O error"):
        store.add_turn(info.id, _record(user_text="lost"), _media(tmp_path / "in", "t1"))
    assert len(seen[0]) == 3  # session folder + the kept turn + the renamed new turn existed at commit time
    monkeypatch.undo()
    assert _snapshot(store, info.id) == before


def test_a_failed_replace_keeps_the_old_turn_and_its_media(store, tmp_path, monkeypatch):
    info = store.create("eileen")
    old = store.add_turn(info.id, _record(user_text="kept"), _media(tmp_path / "in", "t0"))
    before = _snapshot(store, info.id)
    _fail_before_commit(monkeypatch)
    with pytest.raises(BackendFailed):
        store.replace_last_turn(info.id, _record(user_text="lost"), _media(tmp_path / "in", "t1"))
    monkeypatch.undo()
    assert _snapshot(store, info.id) == before
    assert all(p.exists() for p in old.media.values())


# --- persistence and concurrency -------------------------------------------------------------------


def test_a_new_store_on_the_same_folder_sees_everything(store, data_dir, tmp_path):
    info = store.create("eileen", owner="u1")
    store.add_turn(info.id, _record(), _media(tmp_path / "in", "t0"))
    store.add_turn(info.id, _record(user_text="again"), {})
    before = store.get(info.id)
    store.close()
    with SessionStore(data_dir) as reopened:
        assert reopened.get(info.id) == before
        assert reopened.list(owner="u1") == (before.info,)


def test_the_data_folder_can_move(store, data_dir, tmp_path):
    info = store.create("eileen")
    turn = store.add_turn(info.id, _record(), _media(tmp_path / "in", "t0"))
    content = turn.media["reply_audio"].read_bytes()
    store.close()
    moved = tmp_path / "moved"
    data_dir.rename(moved)
    with SessionStore(moved) as reopened:
        path = reopened.get(info.id).turns[0].media["reply_audio"]
        assert path.is_relative_to(moved.resolve()) and path.read_bytes() == content


def test_two_stores_on_one_folder_share_sessions_and_serialise_writes(store, data_dir, tmp_path):
    other = SessionStore(data_dir)
    try:
        info = store.create("eileen")
        assert other.exists(info.id)
        other.add_turn(info.id, _record(user_text="from other"), _media(tmp_path / "in", "o"))
        assert store.get(info.id).turns[0].record.user_text == "from other"

        errors = []

        def writer(s, name):
            try:
                for i in range(8):
                    s.add_turn(info.id, _record(user_text=f"{name} {i}"), {})
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(s, f"w{n}")) for n, s in enumerate([store, other] * 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        session = other.get(info.id)
        assert session.info.n_turns == 33
        assert [t.index for t in session.turns] == list(range(33))
        for n in range(4):  # each writer's turns kept their order
            mine = [t.record.user_text for t in session.turns if t.record.user_text.startswith(f"w{n} ")]
            assert mine == [f"w{n} {i}" for i in range(8)]
    finally:
        other.close()


_OTHER_PROCESS = """
import sys
from pathlib import Path
from e3rg_core.sessions import SessionStore, TurnRecord
record = TurnRecord("", "text", "neutral", "neutral", 1.0, "predicted", "", "neutral", 0.0, "amara")
src = Path(sys.argv[3])
with SessionStore(Path(sys.argv[1])) as store:
    for i in range(30):
        store.add_turn(sys.argv[2], TurnRecord(**{**record.__dict__, "user_text": f"p{i}"}), {"user_audio": src})
"""


def test_another_process_can_write_at_the_same_time(store, data_dir, tmp_path):
    info = store.create("eileen")
    source = _media(tmp_path / "in", "p", keys=("user_audio",))["user_audio"]
    other = subprocess.Popen([sys.executable, "-c", _OTHER_PROCESS, str(data_dir), info.id, str(source)],
                             cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 30
    while store.get(info.id).info.n_turns == 0 and other.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)  # start writing once the other process does
    for i in range(10):
        store.add_turn(info.id, _record(user_text=f"m{i}"), {"reply_audio": source})
    assert other.wait(timeout=60) == 0
    session = store.get(info.id)
    assert [t.index for t in session.turns] == list(range(40))
    for prefix, count in (("m", 10), ("p", 30)):
        mine = [t.record.user_text for t in session.turns if t.record.user_text.startswith(prefix)]
        assert mine == [f"{prefix}{i}" for i in range(count)]
    assert _dirs(store.media_dir / info.id) == {t.id for t in session.turns}
    assert all(p.read_bytes() == source.read_bytes() for t in session.turns for p in t.media.values())


# --- delete and export -----------------------------------------------------------------------------


def test_delete_removes_rows_and_media(store, tmp_path):
    keep = store.create("eileen")
    store.add_turn(keep.id, _record(), _media(tmp_path / "in", "k"))
    gone = store.create("eileen")
    store.add_turn(gone.id, _record(), _media(tmp_path / "in", "g"))
    store.delete(gone.id)
    assert not store.exists(gone.id)
    assert not (store.media_dir / gone.id).exists()
    with sqlite3.connect(store.db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM turns WHERE session_id = ?", (gone.id,)).fetchone()[0] == 0
    assert [s.id for s in store.list()] == [keep.id]
    assert store.get(keep.id).info.n_turns == 1
    with pytest.raises(InputError, match="no conversation"):
        store.delete(gone.id)


def test_export_writes_json_and_media_bytes(store, tmp_path):
    info = store.create("eileen", owner="u1")
    first_sources = _media(tmp_path / "in", "t0", keys=("user_video", "reply_audio", "reply_video"))
    store.add_turn(info.id, _record(user_text="one", input_kind="video"), first_sources)
    store.add_turn(info.id, _record(user_text="two", input_kind="text"), {})
    out = store.export(info.id, tmp_path / "out" / "chat.zip")
    assert out == tmp_path / "out" / "chat.zip"
    assert _dirs(out.parent) == {"chat.zip"}  # no temporary file left
    session = store.get(info.id)
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        document = json.loads(archive.read("session.json"))
        assert names == {"session.json", "media/000/user_video.webm", "media/000/reply_audio.wav",
                         "media/000/reply_video.mp4"}
        assert document["format"] == "e3rg-session" and document["format_version"] == 1
        assert document["session"] == dataclasses.asdict(session.info)
        assert [t["index"] for t in document["turns"]] == [0, 1]
        assert document["turns"][0]["record"] == record_to_dict(session.turns[0].record)
        assert document["turns"][1]["media"] == {}
        for key, name in document["turns"][0]["media"].items():
            assert archive.read(name) == first_sources[key].read_bytes()


def test_export_into_a_folder_uses_the_session_id(store, tmp_path):
    info = store.create("eileen")
    out = store.export(info.id, tmp_path)
    assert out == tmp_path / f"e3rg-session-{info.id}.zip"
    with zipfile.ZipFile(out) as archive:
        assert json.loads(archive.read("session.json"))["turns"] == []


def test_a_failed_export_leaves_the_previous_file_and_no_temporary(store, tmp_path, monkeypatch):
    info = store.create("eileen")
    store.add_turn(info.id, _record(), _media(tmp_path / "in", "t0"))
    target = tmp_path / "out" / "chat.zip"
    target.parent.mkdir()
    target.write_bytes(b"previous export")

    def broken_write(self, *args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(zipfile.ZipFile, "write", broken_write)
    with pytest.raises(BackendFailed, match="cannot write the export"):
        store.export(info.id, target)
    assert target.read_bytes() == b"previous export"
    assert _dirs(target.parent) == {"chat.zip"}


# --- crash leftovers -------------------------------------------------------------------------------


def test_old_orphaned_media_folders_are_swept_on_open(store, data_dir, tmp_path):
    info = store.create("eileen")
    turn = store.add_turn(info.id, _record(), _media(tmp_path / "in", "t0"))
    store.close()
    session_dir = data_dir / "media" / info.id
    old = time.time() - 2 * 3600
    stale_tmp = session_dir / ".tmp-0123"
    stale_turn = session_dir / ("f" * 32)
    stale_session = data_dir / "media" / ("e" * 32)
    fresh_tmp = session_dir / ".tmp-4567"
    for folder in (stale_tmp, stale_turn, stale_session, fresh_tmp):
        folder.mkdir()
        (folder / "reply_audio.wav").write_bytes(b"x")
    for folder in (stale_tmp, stale_turn, stale_session, session_dir / turn.id):
        os.utime(folder, (old, old))
    with SessionStore(data_dir) as reopened:
        assert _dirs(session_dir) == {turn.id, fresh_tmp.name}  # a fresh one may be another process's
        assert not stale_session.exists()
        assert reopened.get(info.id).turns[0].media["user_audio"].exists()
