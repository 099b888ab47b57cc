"""SQLite pieces shared by the session store and the rating store (stdlib only).

Both keep their data in one WAL-mode file, open a connection per call in autocommit mode and run
explicit transactions, so these helpers take a connection and leave its opening to the store.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

#: how long a writer waits for another writer's transaction before SQLite gives up
BUSY_TIMEOUT_S = 30.0


def connect(path: Path, *, synchronous: str, foreign_keys: bool = False,
            check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with ``Row`` results."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=check_same_thread)
    conn.row_factory = sqlite3.Row
    if foreign_keys:
        conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    return conn


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction taken at once, so writers queue on the busy timeout instead of deadlocking."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read transaction: every query inside sees the same committed state."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
