"""kill -9 the served app in the middle of a turn, restart it on the same data dir, and check the damage.

What must hold (``e3rg_core.sessions.store``): a turn is written in one transaction after its media are
staged in ``media/<session>/.tmp-<uuid>`` and renamed into place, so a crash leaves every committed
turn as it was and the interrupted one absent. Media folders no row refers to (a crash between the
rename and the commit) are removed by the next ``SessionStore`` once ``ORPHAN_AGE_S`` old.
A turn's scratch files live in ``<tmp>/e3rg-work/<server id>/<turn id>`` (``ChatService.work_root``).
"""

from __future__ import annotations

import os
import signal
import time
import wave
from pathlib import Path


from e3rg_core.sessions.store import ORPHAN_AGE_S, SessionStore
from tests.app.api import conversation, turn
from tests.app.browser_support import AppServer
from tests.bad_inputs import face_video, speech_wav

def _turn(client, sid, text="", *, audio=None):
    return turn(client, sid, text, audio=audio)


def _turn_dirs(tmp_root: Path) -> set[Path]:
    return set((tmp_root / "e3rg-work").glob("*/*"))


def _check_intact(data: Path, sid: str, n_turns: int) -> None:
    """The session has ``n_turns`` turns, every one with readable media, and no stray media folder.

    ``sid`` is the pass the app returned; the conversation's id is its third part."""
    sid = sid.split(".")[2]
    store = SessionStore(data)
    try:
        session = store.get(sid)
        assert session.info.n_turns == n_turns and len(session.turns) == n_turns
        for turn in session.turns:
            assert {"reply_audio", "reply_video"} <= set(turn.media)
            for key, path in turn.media.items():
                assert path.is_file() and path.stat().st_size > 0, (key, path)
                if path.suffix == ".wav":
                    with wave.open(str(path), "rb") as w:
                        assert w.getnframes() > 0
                if path.suffix == ".mp4":
                    assert path.read_bytes()[4:8] == b"ftyp"
        folders = {p.name for p in (data / "media" / sid).iterdir()}
        assert folders == {t.id for t in session.turns}, folders  # no orphan, no staging folder
    finally:
        store.close()


def test_kill_during_a_turn_loses_only_that_turn(tmp_path, monkeypatch):
    from gradio_client import Client, handle_file

    tmp_root = tmp_path / "tmp"  # the server's TMPDIR: its work folders and uploads, and no one else's
    tmp_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_root))
    (tmp_path / "served").mkdir()
    server = AppServer(tmp_path / "served")
    server.launch()  # it loads its models while the clips are made
    try:
        clips = tmp_path / "clips"
        clips.mkdir()
        spoken = speech_wav(clips)
        long_clip = face_video(clips / "twenty_s.mp4", speech_wav(clips, pad_to_s=20.0))
        server.wait_ready()
        client = Client(server.url, verbose=False)
        sid = _turn(client, None, "My sister called and we laughed for an hour.")["sid"]
        _turn(client, sid, audio=spoken)  # a turn with the user's recording among its media
        _check_intact(server.data, sid, 2)

        before = _turn_dirs(tmp_root)
        job = client.submit(sid, "amara", "", None, handle_file(str(long_clip)), api_name="/turn")
        deadline = time.monotonic() + 60
        while not (_turn_dirs(tmp_root) - before) and time.monotonic() < deadline:
            time.sleep(0.05)
        started = _turn_dirs(tmp_root) - before
        assert started, "the turn never started"
        time.sleep(1.0)  # into the turn: decoding, speech recognition, face reading
        assert not job.done(), "the turn finished before the kill; make the clip longer"
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=20)
        server.proc = None

        server.start()  # same port, same data dir
        _check_intact(server.data, sid, 2)  # the interrupted turn is absent, the others whole
        client = Client(server.url, verbose=False)
        after = _turn(client, sid, "I failed my driving test again today.")
        assert after["details"]["turn"] == 3 and len(conversation(client, sid)) == 3
        _check_intact(server.data, sid, 3)
        # the new server's own turn cleaned up after itself
        assert not any(p for p in _turn_dirs(tmp_root) if p not in started)
    finally:
        server.stop()
    _report_work_folders(started)


def _report_work_folders(started: set[Path]) -> None:
    """The killed turn's scratch folder (the next server sweeps it once it is an hour old: see below)."""
    for folder in started:
        if folder.exists():
            print(f"left behind by the killed turn: {folder} ({sum(1 for _ in folder.rglob('*'))} files)")


def test_a_killed_servers_work_folder_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / "e3rg-work" / "0123456789ab" / ("f" * 32)
    stale.mkdir(parents=True)
    (stale / "reply.wav").write_bytes(b"RIFF")
    old = time.time() - 2 * ORPHAN_AGE_S
    for p in (stale / "reply.wav", stale, stale.parent):
        os.utime(p, (old, old))
    from tests.app.serve import build

    _demo, _launch, service = build(str(tmp_path / "data"), str(tmp_path / "cache"), check_output=False)
    try:
        assert not stale.exists()
    finally:
        service.close()


def test_orphan_media_folders_are_swept_once_old(tmp_path):
    """What a kill between the folder rename and the commit leaves: removed by the next store, once an hour old."""
    store = SessionStore(tmp_path)
    sid = store.create("amara").id
    store.close()
    session_dir = tmp_path / "media" / sid
    old_staging, old_orphan = session_dir / ".tmp-aaaa", session_dir / ("a" * 32)
    young_staging, young_orphan = session_dir / ".tmp-bbbb", session_dir / ("b" * 32)
    for folder in (old_staging, old_orphan, young_staging, young_orphan):
        folder.mkdir(parents=True)
        (folder / "reply_audio.wav").write_bytes(b"RIFF")
    old = time.time() - ORPHAN_AGE_S - 60
    for folder in (old_staging, old_orphan):
        os.utime(folder, (old, old))
    SessionStore(tmp_path).close()
    assert not old_staging.exists() and not old_orphan.exists()
    assert young_staging.exists() and young_orphan.exists()  # perhaps another process's turn in flight
