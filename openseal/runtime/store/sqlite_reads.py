"""Reads of the embedded SQLite store through Python's own ``sqlite3``, without SQLAlchemy.

``openseal runs list`` is one query and a lookup per workflow version; importing SQLAlchemy
alone costs more CPU than all the rest of the command. So a list opens the database with
``sqlite3`` and runs the SQL SQLAlchemy compiles for the store's own statement
(:func:`openseal.runtime.store.repos.runs.newest_runs`, ``definitions.VERSION``), rendered ahead
into :mod:`.sqlite_sql` by :mod:`.prepared_reads` (a test fails when the two differ). It binds
the same values, converts them and the columns as the schema's types do (:mod:`.values`), and
reads the rows into the same records. A page it has no SQL for (one with scopes, or of one
objective) is read by the store itself, opened then.

:func:`open_reads` serves only a store already at the packaged schema head (one query); for
any other the store itself, opened read-only, refuses or explains, as it always has. A database
fault while reading is raised as SQLAlchemy's exception for it, as the store raises it.

Everything here reads the file read-only: a damaged store (with a WAL left over from a crash,
say) is reported as ``store_damaged`` and left exactly as it was, never checkpointed into.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.db.json_text import loads_json
from openseal.runtime.store.db.sqlite_connections import (
    BUSY_TIMEOUT_MS,
    SYNCHRONOUS,
    configure,
    damaged,
    read_only_uri,
)
from openseal.runtime.store.tables.migrations import packaged_head
from openseal.runtime.store.tables.records import DefinitionVersion, Run
from openseal.runtime.store.tables.sqlite_sql import COLUMNS, STATEMENTS
from openseal.runtime.store.tables.values import epoch_seconds, from_epoch_seconds

if TYPE_CHECKING:
    from openseal.runtime.store.store import Store
    from openseal.runtime.store.tables.listing import ListQuery

#: how a column or a parameter is converted (:mod:`.values`): as it is, JSON text, epoch seconds
_COLUMN_READERS: dict[str, Callable[[Any], Any]] = {
    "json": lambda value: None if value is None else loads_json(value),
    "timestamp": from_epoch_seconds,
}
_PARAMETER_WRITERS: dict[str, Callable[[Any], Any]] = {"timestamp": epoch_seconds}


def open_reads(home: Path) -> SQLiteReads | None:
    """Reads of the SQLite store under ``home`` without SQLAlchemy, or None when it is missing,
    cannot be read, or its schema is not at the packaged head: open the store itself then.
    Raises ``store_damaged`` for a damaged file."""
    path = home / "openseal.db"
    if not path.is_file():
        return None
    try:
        # read-only: never create, write or checkpoint a database here
        connection = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error:
        return None
    try:
        configure(
            connection, synchronous=SYNCHRONOUS, busy_timeout_ms=BUSY_TIMEOUT_MS, read_only=True
        )
        found = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error as exc:
        broken = damaged(exc, path)
        if broken is not None:
            connection.close()
            raise broken from None
        found = []
    if found != [(packaged_head(),)]:
        connection.close()
        return None
    return SQLiteReads(connection, home)


class SQLiteReads:
    """``runs.newest`` and ``definitions.get`` of the store under ``home``, on one ``sqlite3``
    connection (a :class:`~openseal.runtime.store.tables.reads.Reads`). Use :func:`open_reads`."""

    def __init__(self, connection: sqlite3.Connection, home: Path) -> None:
        self.home = home
        self._connection = connection
        self._store: Store | None = None
        self.runs = _Runs(self)
        self.definitions = _Definitions(self)

    def store(self) -> Store:
        """The store itself, opened on first need (for what has no SQL rendered ahead)."""
        if self._store is None:
            from openseal.runtime.store.store import open_store

            self._store = open_store(home=self.home, read_only=True)
        return self._store

    def fetch(
        self, statement: str, filters: tuple[str, ...], values: Mapping[str, Any]
    ) -> list[dict[str, Any]] | None:
        """The rows of ``statement`` with ``filters``, its parameters taken from ``values`` by
        name, in one read transaction; None when its SQL was not rendered ahead."""
        found = STATEMENTS[statement].get(filters)
        if found is None:
            return None
        sql, parameters = found
        bound = [
            fixed if kind == "fixed" else _PARAMETER_WRITERS.get(kind, _same)(values[name])
            for name, kind, fixed in parameters
        ]
        names, readers = zip(*COLUMNS[statement], strict=True)
        convert = [_COLUMN_READERS.get(kind, _same) for kind in readers]
        try:
            self._connection.execute("BEGIN DEFERRED")
            try:
                rows = self._connection.execute(sql, bound).fetchall()
            finally:
                self._connection.execute("COMMIT")
        except sqlite3.Error as exc:
            broken = damaged(exc, self.home / "openseal.db")
            if broken is not None:
                raise broken from None
            raise _database_failure(exc, sql) from exc
        return [
            {name: read(value) for name, read, value in zip(names, convert, row, strict=True)}
            for row in rows
        ]

    def close(self) -> None:
        self._connection.close()
        if self._store is not None:
            self._store.close()


class _Runs:
    def __init__(self, reads: SQLiteReads) -> None:
        self._reads = reads

    def newest(self, query: ListQuery, *, objective_id: str | None = None) -> tuple[Run, ...]:
        """As the store's ``runs.newest``."""
        rows = None
        if query.scopes is None and objective_id is None:
            values = {name: getattr(query, name) for name in ("limit", *query.filters())}
            rows = self._reads.fetch("runs.newest", query.filters(), values)
        if rows is None:
            return self._reads.store().runs.newest(query, objective_id=objective_id)
        return tuple(Run.from_row(row) for row in rows)


class _Definitions:
    def __init__(self, reads: SQLiteReads) -> None:
        self._reads = reads
        self._versions: dict[str, DefinitionVersion] = {}

    def get(self, digest: str) -> DefinitionVersion:
        """As the store's ``definitions.get``."""
        found = self._versions.get(digest)
        if found is None:
            rows = self._reads.fetch("definitions.version", (), {"p_digest": digest})
            if rows is None:
                return self._reads.store().definitions.get(digest)
            if not rows:
                raise NotFound(f"definition version {digest} not found")
            found = self._versions[digest] = DefinitionVersion.from_row(rows[0])
        return found


def _same(value: Any) -> Any:
    return value


def _database_failure(exc: sqlite3.Error, sql: str) -> Exception:
    """The exception SQLAlchemy raises for ``exc`` (``sa.exc.OperationalError`` ...), so a
    fault here is reported and retried as one of the store's."""
    import sqlalchemy as sa

    return sa.exc.DBAPIError.instance(sql, None, exc, sqlite3.Error)
