"""Conversations kept on disk: one SQLite database (WAL) plus a media folder, under the data directory.

::

    <data_dir>/
      sessions.sqlite3               sessions and turns; schema version in PRAGMA user_version
      media/<session id>/<turn id>/  the turn's copied recordings: user_audio.wav, reply_video.mp4, ...

The data directory holds users' voices and faces: it must not lie inside a folder the web server serves
(Gradio's ``allowed_paths``, the working directory of a static server). Handlers hand files to the UI
through copies or explicit per-file grants, never by serving ``data_dir``.

Concurrency: every call opens its own connection (30 s busy timeout), and writes in one process are
serialised by a lock; SQLite's file locking serialises writers across processes, so several
``SessionStore`` objects (threads, server workers) may share one directory. The folder must be on a local
disk: WAL does not work over network file systems.

A turn is committed atomically: its media are copied into a temporary folder, then one transaction
inserts the turn and updates the session, the folder is renamed into place, and the transaction commits.
Any failure removes the folder and leaves the database as it was. Folders left behind by a crash are
removed by the next ``SessionStore`` opened on the directory, once they are an hour old.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Mapping

from e3rg_core import sqlite_util
from e3rg_core.errors import BackendFailed, ConfigError, InputError
from e3rg_core.memory.profiles import check_avatar_id
from e3rg_core.sessions.export import write_export
from e3rg_core.sessions.records import (
    MAX_TURNS,
    MEDIA_KEYS,
    SESSION_ID,
    Session,
    SessionInfo,
    StoredTurn,
    TurnRecord,
    check_owner,
    check_record,
    check_session_id,
    details_json,
    make_title,
    utc_now,
)
from e3rg_core.sessions.schema import TURN_COLUMNS, migrate
from e3rg_core.types import Utterance

logger = logging.getLogger(__name__)

DB_NAME = "sessions.sqlite3"
MEDIA_DIR = "media"
MAX_LIST_LIMIT = 1000
ORPHAN_AGE_S = 3600.0  # a media folder no row refers to is removed once this old
_TMP_PREFIX = ".tmp-"


class SessionStore:
    """Persistent conversations under ``data_dir`` (see the module docstring for the layout and rules)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.db_path = self.data_dir / DB_NAME
        self.media_dir = self.data_dir / MEDIA_DIR
        try:
            self.media_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the session folder {self.media_dir}: {exc}; set data_dir (E3RG_DATA_DIR) "
                "to a writable folder"
            ) from exc
        self._db = self._open()
        self._lock = self._db.lock
        self._sweep_orphans()

    # --- public API -----------------------------------------------------------------------------

    def create(self, avatar_id: str, *, owner: str = "") -> SessionInfo:
        """Start an empty conversation with ``avatar_id``."""
        check_avatar_id(avatar_id)
        check_owner(owner)
        now = utc_now()
        info = SessionInfo(uuid.uuid4().hex, avatar_id, owner, now, now, 0, "")
        with self._lock, self._transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, avatar_id, owner, created_at, updated_at, title, n_turns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (info.id, info.avatar_id, info.owner, info.created_at, info.updated_at, info.title, info.n_turns),
            )
        return info

    def get(self, session_id: str) -> Session:
        """The conversation ``session_id`` with all its turns; ``InputError`` if there is none."""
        check_session_id(session_id)
        with self._snapshot() as conn:
            info = self._info(conn, session_id)
            rows = conn.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY idx", (session_id,)).fetchall()
        return Session(info, tuple(self._turn_from_row(row) for row in rows))

    def exists(self, session_id: str) -> bool:
        """Whether ``session_id`` is a well-formed id of a stored conversation."""
        if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
            return False
        with self._snapshot() as conn:
            return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None

    def list(self, *, owner: str | None = None, limit: int = 50) -> tuple[SessionInfo, ...]:
        """Conversations, most recent activity first; only ``owner``'s when given ("" is an owner too)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
            raise InputError(f"limit must be an integer in 1..{MAX_LIST_LIMIT}, not {limit!r}")
        query, params = "SELECT * FROM sessions", ()
        if owner is not None:
            query, params = query + " WHERE owner = ?", (check_owner(owner),)
        with self._snapshot() as conn:
            rows = conn.execute(query + " ORDER BY updated_at DESC, rowid DESC LIMIT ?", (*params, limit)).fetchall()
        return tuple(_info_from_row(row) for row in rows)

    def set_avatar(self, session_id: str, avatar_id: str) -> SessionInfo:
        """Switch the conversation to another avatar from the next turn on."""
        check_session_id(session_id)
        check_avatar_id(avatar_id)
        with self._lock, self._transaction() as conn:
            self._info(conn, session_id)
            conn.execute("UPDATE sessions SET avatar_id = ?, updated_at = ? WHERE id = ?",
                         (avatar_id, utc_now(), session_id))
            return self._info(conn, session_id)

    def add_turn(self, session_id: str, record: TurnRecord, media: Mapping[str, Path]) -> StoredTurn:
        """Append a turn, copying its ``media`` (keys from ``MEDIA_KEYS``) into the store."""
        return self._write_turn(session_id, record, media, replace=False)

    def replace_last_turn(self, session_id: str, record: TurnRecord, media: Mapping[str, Path]) -> StoredTurn:
        """Swap the last turn and its media for a new one (regenerating with a corrected emotion)."""
        return self._write_turn(session_id, record, media, replace=True)

    def history(self, session_id: str) -> tuple[Utterance, ...]:
        """The dialogue so far for the understanding stage: user (speaker) and avatar (listener) lines.

        Lines with empty text are left out.
        """
        check_session_id(session_id)
        with self._snapshot() as conn:
            self._info(conn, session_id)
            rows = conn.execute(
                "SELECT user_text, reply_text FROM turns WHERE session_id = ? ORDER BY idx", (session_id,)
            ).fetchall()
        lines = []
        for row in rows:
            lines += [Utterance("speaker", row["user_text"]), Utterance("listener", row["reply_text"])]
        return tuple(u for u in lines if u.text.strip())

    def delete(self, session_id: str) -> None:
        """Remove the conversation's rows and its media folder."""
        check_session_id(session_id)
        with self._lock:
            with self._transaction() as conn:
                self._info(conn, session_id)
                conn.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            _remove_tree(self.media_dir / session_id)

    def export(self, session_id: str, out_path: Path) -> Path:
        """Write the conversation as a zip: ``session.json`` plus ``media/<turn index>/<key><suffix>``.

        ``out_path`` is the zip file, or an existing folder to write ``e3rg-session-<id>.zip`` into. The
        file is written under a temporary name and renamed, so a reader never sees half a zip.
        """
        return write_export(self.get(session_id), Path(out_path))

    def close(self) -> None:
        """Release the database; later calls raise ``ConfigError``."""
        self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({str(self.data_dir)!r})"

    # --- turns ----------------------------------------------------------------------------------

    def _write_turn(self, session_id: str, record: TurnRecord, media: Mapping[str, Path], *,
                    replace: bool) -> StoredTurn:
        check_session_id(session_id)
        check_record(record)
        sources = _check_media(media)
        turn_id = uuid.uuid4().hex
        session_dir = self.media_dir / session_id
        final_dir = session_dir / turn_id
        with self._lock:
            with self._snapshot() as conn:  # fail before copying anything
                _check_room(self._info(conn, session_id), replace)
            staged, names = self._stage(session_id, session_dir, sources) if sources else (None, {})
            old_dir = None
            try:
                with self._transaction() as conn:
                    info = self._info(conn, session_id)
                    _check_room(info, replace)
                    index = info.n_turns - 1 if replace else info.n_turns
                    if replace:
                        old_id = conn.execute("SELECT id FROM turns WHERE session_id = ? AND idx = ?",
                                              (session_id, index)).fetchone()["id"]
                        conn.execute("DELETE FROM turns WHERE id = ?", (old_id,))
                        old_dir = session_dir / old_id
                    created_at = utc_now()
                    rel_media = {key: f"{MEDIA_DIR}/{session_id}/{turn_id}/{name}" for key, name in names.items()}
                    conn.execute(
                        f"INSERT INTO turns (id, session_id, idx, created_at, {', '.join(TURN_COLUMNS)}, "
                        "timings_json, details_json, media_json) VALUES (?, ?, ?, ?, "
                        f"{', '.join('?' * len(TURN_COLUMNS))}, ?, ?, ?)",
                        (turn_id, session_id, index, created_at, *(getattr(record, c) for c in TURN_COLUMNS),
                         json.dumps({k: float(v) for k, v in record.timings_s.items()}),
                         details_json(record.details), json.dumps(rel_media)),
                    )
                    title = make_title(record.user_text) if index == 0 else info.title
                    conn.execute("UPDATE sessions SET updated_at = ?, title = ?, n_turns = ? WHERE id = ?",
                                 (created_at, title, index + 1, session_id))
                    if staged is not None:
                        staged.rename(final_dir)
            except BaseException:
                if staged is not None:
                    _remove_tree(staged)
                    _remove_tree(final_dir)
                raise
            if old_dir is not None:
                _remove_tree(old_dir)
        return StoredTurn(index, created_at, record, {k: self.data_dir / p for k, p in rel_media.items()}, turn_id)

    def _stage(self, session_id: str, session_dir: Path, sources: dict[str, Path]) -> tuple[Path, dict[str, str]]:
        """Copy ``sources`` into a fresh temporary folder in ``session_dir``; return it and the file names."""
        staged = session_dir / f"{_TMP_PREFIX}{uuid.uuid4().hex}"
        names = {}
        try:
            staged.mkdir(parents=True)
            for key, source in sources.items():
                names[key] = key + _suffix(source)
                shutil.copyfile(source, staged / names[key])
        except BaseException as exc:
            _remove_tree(staged)
            if isinstance(exc, OSError):
                missing = [str(p) for p in sources.values() if not p.is_file()]
                if missing:
                    raise InputError(f"media file {missing[0]} disappeared before it could be stored") from exc
                raise BackendFailed(f"cannot store the media of session {session_id} in {session_dir}: {exc}") from exc
            raise
        return staged, names

    # --- database -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return self._db.connect()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.transaction()

    def _snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._db.snapshot()

    def _open(self) -> sqlite_util.Database:
        """Open the database, creating or upgrading its schema."""
        # In WAL mode NORMAL never corrupts the file; a power cut may lose the last commits, not a crash.
        db = sqlite_util.Database(
            self.db_path, synchronous="NORMAL", foreign_keys=True,
            closed_error=lambda: ConfigError(f"the session store in {self.data_dir} is closed"),
            failure=lambda exc: BackendFailed(f"the session database {self.db_path} failed: {exc}"))
        try:
            db.open(lambda conn: migrate(conn, self.db_path))
        except sqlite3.OperationalError as exc:
            raise ConfigError(
                f"cannot open the session database {self.db_path}: {exc}; check that {self.data_dir} is "
                "writable and on a local disk"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"{self.db_path} is not a usable SQLite database ({exc}); move it aside "
                f"(e.g. mv {self.db_path} {self.db_path}.broken) and a new, empty one will be created"
            ) from exc
        return db

    def _info(self, conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise InputError(f"no conversation {session_id}; it was deleted or never existed, start a new one")
        return _info_from_row(row)

    def _turn_from_row(self, row: sqlite3.Row) -> StoredTurn:
        record = TurnRecord(**{c: row[c] for c in TURN_COLUMNS}, timings_s=json.loads(row["timings_json"]),
                            details=json.loads(row["details_json"]))
        media = {key: self.data_dir / rel for key, rel in json.loads(row["media_json"]).items()}
        return StoredTurn(row["idx"], row["created_at"], record, media, row["id"])

    def _sweep_orphans(self) -> None:
        """Remove media folders that no row refers to (left by a crash), once ``ORPHAN_AGE_S`` old."""
        cutoff = time.time() - ORPHAN_AGE_S
        with self._snapshot() as conn:
            sessions = {r[0] for r in conn.execute("SELECT id FROM sessions")}
            turns = {r[0] for r in conn.execute("SELECT id FROM turns")}
        try:
            for session_dir in self.media_dir.iterdir():
                if not session_dir.is_dir():
                    continue
                if session_dir.name not in sessions:
                    if session_dir.stat().st_mtime < cutoff:
                        logger.info("removing orphaned media folder %s", session_dir)
                        _remove_tree(session_dir)
                    continue
                for turn_dir in session_dir.iterdir():
                    if turn_dir.name not in turns and turn_dir.is_dir() and turn_dir.stat().st_mtime < cutoff:
                        logger.info("removing orphaned media folder %s", turn_dir)
                        _remove_tree(turn_dir)
        except OSError as exc:  # a concurrent delete; the next start sweeps again
            logger.warning("sweeping %s stopped: %s", self.media_dir, exc)


def _info_from_row(row: sqlite3.Row) -> SessionInfo:
    return SessionInfo(row["id"], row["avatar_id"], row["owner"], row["created_at"], row["updated_at"],
                       row["n_turns"], row["title"])


def _check_room(info: SessionInfo, replace: bool) -> None:
    if replace and info.n_turns == 0:
        raise InputError(f"conversation {info.id} has no turn to replace yet; send a message first")
    if not replace and info.n_turns >= MAX_TURNS:
        raise InputError(f"this conversation is full ({MAX_TURNS} turns); start a new conversation")


def _check_media(media: Mapping[str, Path]) -> dict[str, Path]:
    if not isinstance(media, Mapping):
        raise InputError(f"media must be a mapping of {', '.join(MEDIA_KEYS)} to file paths")
    sources = {}
    for key, value in media.items():
        if key not in MEDIA_KEYS:
            raise InputError(f"unknown media key {key!r}; allowed: {', '.join(MEDIA_KEYS)}")
        if not isinstance(value, (str, os.PathLike)):
            raise InputError(f"media[{key!r}] must be a file path, not {type(value).__name__}")
        path = Path(value)
        if not path.is_file():
            raise InputError(f"media file for {key!r} does not exist: {path}")
        sources[key] = path
    return sources


def _suffix(path: Path) -> str:
    """The stored copy's suffix: the source's, lower-cased, if it looks like a media extension."""
    suffix = path.suffix.lower()
    return suffix if 2 <= len(suffix) <= 11 and suffix[1:].isascii() and suffix[1:].isalnum() else ""


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        logger.warning("could not remove %s; remove it by hand", path)
