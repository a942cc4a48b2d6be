"""How every SQLite connection of the store is set up, by SQLAlchemy's engine and by the reads
that go without it (:mod:`openseal.runtime.store.sqlite_reads`) alike. It imports no
SQLAlchemy.
"""

from __future__ import annotations

import sqlite3

#: how the store opens SQLite unless told otherwise (``open_store``'s defaults)
SYNCHRONOUS = "FULL"
BUSY_TIMEOUT_MS = 10_000


def configure(connection: sqlite3.Connection, *, synchronous: str, busy_timeout_ms: int) -> None:
    """Set up a new SQLite connection as the store uses every one: WAL, ``synchronous``, a busy
    timeout, foreign keys enforced, and transactions begun by the store (not the driver).

    Statement journals (what a savepoint rolls back to) are kept in memory: a shared batch
    holds a savepoint per member, and on disk each page they journal cost two writes to a
    temporary file. Crash recovery never reads them: the WAL does that."""
    connection.isolation_level = None
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.close()
