"""How every SQLite connection of the store is set up, by SQLAlchemy's engine and by the reads
that go without it (:mod:`openseal.runtime.store.sqlite_reads`) alike. It imports no
SQLAlchemy.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from openseal.errors import StoreError

#: how the store opens SQLite unless told otherwise (``open_store``'s defaults)
SYNCHRONOUS = "FULL"
BUSY_TIMEOUT_MS = 10_000
#: SQLite's primary result codes of a file that is not a sound database (damaged, or another
#: kind of file): SQLITE_CORRUPT, SQLITE_NOTADB
_DAMAGED = frozenset({11, 26})


def read_only_uri(path: Path) -> str:
    """The URI that opens the database at ``path`` read-only: such a connection never writes
    the file, and never checkpoints the WAL into it when it closes."""
    return f"{path.resolve().as_uri()}?mode=ro"


def damaged(exc: BaseException, path: Path) -> StoreError | None:
    """The error to show for ``exc`` (SQLite's, as raised while reading the store at ``path``)
    when it says the file is damaged or no database at all; None for any other."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.DatabaseError) or code is None or code & 0xFF not in _DAMAGED:
        return None
    return StoreError(
        f"the store at {path} is damaged ({exc}); nothing was written to it: restore it "
        "from a backup (docs/operations.md#backups)",
        code="store_damaged",
    )


def check_readable(path: Path) -> None:
    """Refuse (``store_damaged``) a SQLite file at ``path`` that is damaged where opening the
    store reads (its header, its schema, the first page of each table), reading it read-only
    first: a writable
    connection that fails on it is closed by the driver, and the last connection to close
    checkpoints the WAL into the file. A missing or unreadable file passes: opening says why."""
    try:
        connection = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error:
        return
    try:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        for (name,) in tables.fetchall():
            # each table's first page: what opening reads (the revision, the recovery marker,
            # the tokens) is among them, and a table whose root is damaged is found here
            connection.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchall()
    except sqlite3.Error as exc:
        broken = damaged(exc, path)
        if broken is not None:
            raise broken from None
    finally:
        connection.close()


def configure(
    connection: sqlite3.Connection,
    *,
    synchronous: str,
    busy_timeout_ms: int,
    read_only: bool = False,
) -> None:
    """Set up a new SQLite connection as the store uses every one: WAL, ``synchronous``, a busy
    timeout, foreign keys enforced, and transactions begun by the store (not the driver). A
    ``read_only`` one leaves the journal mode as the file has it (it may not change it).

    Statement journals (what a savepoint rolls back to) are kept in memory: a shared batch
    holds a savepoint per member, and on disk each page they journal cost two writes to a
    temporary file. Crash recovery never reads them: the WAL does that."""
    connection.isolation_level = None
    cursor = connection.cursor()
    if not read_only:
        cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.close()
