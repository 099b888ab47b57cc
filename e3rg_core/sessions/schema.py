"""The session database's tables, and the steps that bring an older file up to date.

The version lives in ``PRAGMA user_version``. A file newer than this code is refused, never altered:
an older e3rg must not drop what a newer one wrote.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from e3rg_core.errors import ConfigError

logger = logging.getLogger(__name__)

# MIGRATIONS[n] takes the schema from version n to n + 1; append a step, never edit a shipped one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            avatar_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            title TEXT NOT NULL,
            n_turns INTEGER NOT NULL
        )""",
        "CREATE INDEX sessions_by_activity ON sessions (updated_at DESC)",
        "CREATE INDEX sessions_by_owner ON sessions (owner, updated_at DESC)",
        # The record's fields are columns (not one JSON blob) so the emotions can be queried later.
        """CREATE TABLE turns (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            user_text TEXT NOT NULL,
            input_kind TEXT NOT NULL,
            user_emotion TEXT NOT NULL,
            user_coarse TEXT NOT NULL,
            confidence REAL NOT NULL,
            emotion_source TEXT NOT NULL,
            reply_text TEXT NOT NULL,
            reply_emotion TEXT NOT NULL,
            reply_intensity REAL NOT NULL,
            avatar_id TEXT NOT NULL,
            timings_json TEXT NOT NULL,
            details_json TEXT NOT NULL,
            media_json TEXT NOT NULL,
            UNIQUE (session_id, idx)
        )""",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

#: TurnRecord fields stored one per column under the same name.
TURN_COLUMNS: tuple[str, ...] = ("user_text", "input_kind", "user_emotion", "user_coarse", "confidence",
                                 "emotion_source", "reply_text", "reply_emotion", "reply_intensity", "avatar_id")


def migrate(conn: sqlite3.Connection, db_path: Path) -> None:
    """Create or upgrade the schema inside the caller's write transaction; ``ConfigError`` if it cannot."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"{db_path} has session schema version {version}, newer than this e3rg reads "
            f"(up to {SCHEMA_VERSION}); upgrade e3rg, or point data_dir (E3RG_DATA_DIR) at another folder"
        )
    if version == 0:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if tables:
            raise ConfigError(
                f"{db_path} is an SQLite database but not an e3rg session store (it has tables "
                f"{', '.join(tables)}); move it aside or choose another data_dir"
            )
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step]:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {step + 1}")
        logger.info("%s: session schema now at version %d", db_path, step + 1)
