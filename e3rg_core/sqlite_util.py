"""SQLite pieces shared by the session store and the rating store (stdlib only).

Both keep their data in one WAL-mode file, open a connection per call in autocommit mode and run
explicit transactions: ``Database`` does that for a store, over the helpers below.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

logger = logging.getLogger(__name__)

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


class Database:
    """One store's SQLite file: a connection per call, explicit transactions, and one connection kept open.

    Keeping one connection open for the store's life stops SQLite from checkpointing and deleting the
    WAL file every time a per-call connection closes. ``closed_error`` makes the error a call after
    ``close`` raises; ``failure`` maps an ``sqlite3.Error`` inside a call to the store's own error (none:
    raised as it is). ``lock`` serialises the store's writers (taken by the store, around a transaction).
    """

    def __init__(self, path: Path, *, synchronous: str, foreign_keys: bool = False,
                 closed_error: Callable[[], Exception],
                 failure: Callable[[sqlite3.Error], Exception] | None = None) -> None:
        self.path = path
        self._synchronous, self._foreign_keys = synchronous, foreign_keys
        self._closed_error, self._failure = closed_error, failure
        self.lock = threading.Lock()
        self.closed = False
        self._anchor: sqlite3.Connection | None = None

    def connect(self, *, check_same_thread: bool = True) -> sqlite3.Connection:
        """A new connection (``connect``'s settings); the caller closes it."""
        if self.closed:
            raise self._closed_error()
        return connect(self.path, synchronous=self._synchronous, foreign_keys=self._foreign_keys,
                       check_same_thread=check_same_thread)

    def open(self, setup: Callable[[sqlite3.Connection], None]) -> None:
        """Open the file in WAL mode and run ``setup`` (create or upgrade the schema) in one write transaction.

        The connection stays open until ``close``. What fails is raised as it is, the connection closed.
        """
        conn = self.connect(check_same_thread=False)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                logger.warning("%s: journal mode is %s, not WAL; is the folder on a network file system?",
                               self.path, mode)
            conn.execute("BEGIN IMMEDIATE")
            try:
                setup(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except BaseException:
            conn.close()
            raise
        self._anchor = conn

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for one call, closed after it."""
        conn = None
        try:
            conn = self.connect()
            yield conn
        except sqlite3.Error as exc:
            if self._failure is None:
                raise
            raise self._failure(exc) from exc
        finally:
            if conn is not None:
                conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A call's connection in a write transaction (``write_transaction``)."""
        with self.connection() as conn, write_transaction(conn):
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A call's connection in a read transaction (``read_snapshot``)."""
        with self.connection() as conn, read_snapshot(conn):
            yield conn

    def close(self) -> None:
        """Release the file; later calls raise ``closed_error()``. Closing twice is fine."""
        with self.lock:
            if not self.closed:
                self.closed = True
                if self._anchor is not None:
                    self._anchor.close()
