"""Several writes in one PostgreSQL statement, through data-modifying ``WITH`` clauses.

Every statement is a round trip to the server, and on a busy host each one waits for the
server process to be scheduled as well; writes whose results nobody reads before the next
statement can go together. PostgreSQL runs every sub-statement of a ``WITH`` to completion
whether or not the main query reads it, all of them or none (one statement is atomic), and
checks foreign keys at the end of the statement, so a row and the rows that refer to it may be
inserted side by side. SQLite has no data-modifying ``WITH``: there the same writes are sent
one by one.

The statements are built once per shape (tables, column names, number of rows) and bound with
parameters named ``r<n>_<column>`` for the ``n``-th row, in the order given.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

import sqlalchemy as sa

from openseal.runtime.store import fastsql

#: which columns each inserted row sets, in order: (table, column names) per row
Shape = tuple[tuple[sa.Table, tuple[str, ...]], ...]

_lock = threading.Lock()
_notifying: dict[Shape, sa.Select[Any]] = {}
_inserts: dict[sa.Table, sa.Insert] = {}
#: the run a combined insert announces at commit, and the channel it is announced on
NOTIFY_CHANNEL: Final = "p_channel"
NOTIFY_RUN: Final = "p_run"


def insert_each(conn: sa.Connection, rows: Sequence[tuple[sa.Table, Mapping[str, Any]]]) -> None:
    """Insert ``rows`` the way every dialect can: one statement per run of rows of the same
    table and columns (several rows at once through ``executemany``)."""
    shape = shape_of(rows)
    n = 0
    for table, _keys, count in _runs_of(shape):
        stmt = _inserts.get(table)
        if stmt is None:
            with _lock:
                stmt = _inserts.setdefault(table, sa.insert(table))
        batch = [row for _table, row in rows[n : n + count]]
        fastsql.execute(conn, stmt, batch[0] if count == 1 else batch)
        n += count


def shape_of(rows: Sequence[tuple[sa.Table, Mapping[str, Any]]]) -> Shape:
    """The shape of ``rows`` (tables and the columns each row sets): what a statement is
    built for."""
    return tuple((table, tuple(row)) for table, row in rows)


def parameters(
    rows: Sequence[tuple[sa.Table, Mapping[str, Any]]], first: int = 0
) -> dict[str, Any]:
    """The bound values of ``rows`` for a statement built by :func:`insert_ctes` (numbered from
    ``first``)."""
    return {
        f"r{n}_{key}": value
        for n, (_table, row) in enumerate(rows, start=first)
        for key, value in row.items()
    }


def insert_ctes(shape: Shape, first: int = 0) -> list[sa.CTE]:
    """One ``INSERT`` per run of consecutive rows of the same table and columns (a multi-row
    ``VALUES``), each as a ``WITH`` clause to add to a statement; rows are numbered from
    ``first``."""
    ctes: list[sa.CTE] = []
    n = first
    for table, keys, count in _runs_of(shape):
        values = [
            {key: sa.bindparam(f"r{n + i}_{key}", type_=table.c[key].type) for key in keys}
            for i in range(count)
        ]
        ctes.append(sa.insert(table).values(values).cte(f"new_{n}"))
        n += count
    return ctes


def _runs_of(shape: Shape) -> list[tuple[sa.Table, tuple[str, ...], int]]:
    runs: list[tuple[sa.Table, tuple[str, ...], int]] = []
    for table, keys in shape:
        if runs and runs[-1][0] is table and runs[-1][1] == keys:
            runs[-1] = (table, keys, runs[-1][2] + 1)
        else:
            runs.append((table, keys, 1))
    return runs


def inserts_then_notify(shape: Shape) -> sa.Select[Any]:
    """``WITH <one INSERT per table> SELECT pg_notify(:p_channel, :p_run)``: rows inserted and
    a run announced (delivered at commit, like any ``NOTIFY``), in one statement."""
    stmt = _notifying.get(shape)
    if stmt is None:
        notify = sa.func.pg_notify(
            sa.bindparam(NOTIFY_CHANNEL, type_=sa.String), sa.bindparam(NOTIFY_RUN, type_=sa.String)
        )
        stmt = sa.select(notify).add_cte(*insert_ctes(shape))
        with _lock:
            _notifying[shape] = stmt
    return stmt
