"""Persistent conversations: sessions, their turns and media, in SQLite under the data directory.

Pure library: stdlib ``sqlite3`` only, no UI import. See ``e3rg_core.sessions.store`` for the on-disk
layout, the concurrency rules and why the data directory must never be served by the web server.
"""

from e3rg_core.sessions.records import (
    EMOTION_SOURCES,
    INPUT_KINDS,
    MAX_TEXT_CHARS,
    MAX_TURNS,
    MEDIA_KEYS,
    Session,
    SessionInfo,
    StoredTurn,
    TurnRecord,
)
from e3rg_core.sessions.schema import SCHEMA_VERSION
from e3rg_core.sessions.store import SessionStore

__all__ = [
    "EMOTION_SOURCES",
    "INPUT_KINDS",
    "MAX_TEXT_CHARS",
    "MAX_TURNS",
    "MEDIA_KEYS",
    "SCHEMA_VERSION",
    "Session",
    "SessionInfo",
    "SessionStore",
    "StoredTurn",
    "TurnRecord",
]
