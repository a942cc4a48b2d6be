"""Several writes in one PostgreSQL statement, through data-modifying ``WITH`` clauses.

Every statement is a round trip to the server, and on a busy host each one waits for the
server process to be scheduled as well; writes whose results nobody reads before the next
statement can go together. PostgreSQL runs every sub-statement of a ``WITH`` to completion
whether or not the main query reads it, all of them or none (one statement is atomic), and
checks foreign keys at the end of the statement, so a row and the rows that refer to it may be
inserted side by side. SQLite has no data-modifying ``WITH``: there the same writes are sent
one by one.

The statements are built once per shape (tables, column names, number of rows) and bound with
parameters named ``r<n>_<column>`` for the ``n``-th row, in the order given. An UPDATE can go
along too (:data:`HeldUpdate`): a statement built once, returning one column, whose parameters
are renamed ``u<n>_<name>`` for the ``n``-th; what each returned comes back as a list. An
``INSERT … RETURNING`` one column goes the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql import visitors

from openseal.runtime.store.db import fastsql, wake_choice

#: which columns each inserted row sets, in order: (table, column names) per row
Shape = tuple[tuple[sa.Table, tuple[str, ...]], ...]
#: an UPDATE or INSERT (built once, ``RETURNING`` one column) and its parameters
HeldUpdate = tuple[sa.Update | sa.Insert, Mapping[str, Any]]
#: a row to insert unless a row with the same unique key exists: (table, key columns, row)
NewRow = tuple[sa.Table, tuple[str, ...], Mapping[str, Any]]

_lock = threading.Lock()
_notifying: dict[Shape, sa.Select[Any]] = {}
#: rows inserted unless their key exists: (table, key columns, columns set) per row
NewShape = tuple[tuple[sa.Table, tuple[str, ...], tuple[str, ...]], ...]
_inserting_new: dict[NewShape, sa.Select[Any]] = {}
_inserts: dict[sa.Table, sa.Insert] = {}
#: the run a combined insert announces at commit (to the process wake_choice.py chooses)
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


def update_each(conn: sa.Connection, updates: Sequence[HeldUpdate]) -> list[list[Any]]:
    """Run ``updates`` one by one, the way every dialect can; the values each returned."""
    return [
        [next(iter(row.values())) for row in fastsql.execute(conn, stmt, params)]
        for stmt, params in updates
    ]


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


def update_parameters(updates: Sequence[HeldUpdate]) -> dict[str, Any]:
    """The bound values of ``updates`` for a statement built with :func:`update_ctes`."""
    return {
        f"u{n}_{key}": value for n, (_stmt, params) in enumerate(updates)
        for key, value in params.items()
    }  # fmt: skip


def update_ctes(statements: Sequence[sa.Update | sa.Insert]) -> list[sa.CTE]:
    """Each of ``statements`` as a ``WITH`` clause to add to a statement, its parameters
    renamed for :func:`update_parameters`; :func:`updated` reads what they return."""
    return [_renamed(stmt, f"u{n}_").cte(f"updated_{n}") for n, stmt in enumerate(statements)]


def updated(ctes: Sequence[sa.CTE]) -> list[sa.Label[Any]]:
    """For a statement's ``RETURNING``: what each of ``ctes`` (:func:`update_ctes`) returned,
    as an array (NULL for none), labelled ``updated_<n>``; :func:`updated_values` reads them."""
    return [
        sa.select(sa.func.array_agg(cte.c[0])).scalar_subquery().label(f"updated_{n}")
        for n, cte in enumerate(ctes)
    ]


def updated_values(row: Mapping[str, Any], count: int) -> list[list[Any]]:
    """What each of ``count`` updates returned, from a row returned with :func:`updated`."""
    return [list(row[f"updated_{n}"] or ()) for n in range(count)]


def _renamed(stmt: sa.Update | sa.Insert, prefix: str) -> sa.Update | sa.Insert:
    """``stmt`` with each named parameter ``p`` renamed ``<prefix>p`` (anonymous ones, such
    as a literal, are numbered apart by the compiler already)."""

    def rename(element: Any, **_kw: Any) -> Any:
        if isinstance(element, sa.BindParameter) and not element.unique:
            return sa.bindparam(prefix + element.key, type_=element.type)
        return None

    no_options: dict[str, Any] = {}
    return cast(sa.Update | sa.Insert, visitors.replacement_traverse(stmt, no_options, rename))


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


def insert_new(conn: sa.Connection, rows: Sequence[NewRow]) -> list[bool]:
    """PostgreSQL: insert each of ``rows`` unless a row with its key exists, in one statement
    (``WITH new_<n> AS (INSERT ... ON CONFLICT DO NOTHING RETURNING ...) SELECT EXISTS ...``);
    whether each was inserted."""
    shape: NewShape = tuple((table, keys, tuple(row)) for table, keys, row in rows)
    stmt = _inserting_new.get(shape)
    if stmt is None:
        ctes = [
            postgresql.insert(table)
            .values({c: sa.bindparam(f"r{n}_{c}", type_=table.c[c].type) for c in columns})
            .on_conflict_do_nothing(index_elements=list(keys))
            .returning(table.c[keys[0]])
            .cte(f"new_{n}")
            for n, (table, keys, columns) in enumerate(shape)
        ]
        inserted: list[Any] = [sa.exists(cte.select()).label(cte.name) for cte in ctes]
        stmt = sa.select(*inserted).add_cte(*ctes)
        with _lock:
            _inserting_new[shape] = stmt
    (found,) = fastsql.execute(conn, stmt, parameters([(table, row) for table, _k, row in rows]))
    return [bool(found[f"new_{n}"]) for n in range(len(rows))]


def inserts_then_notify(shape: Shape) -> sa.Select[Any]:
    """``WITH <one INSERT per table> SELECT pg_notify(chosen.channel, :p_run) FROM <chosen>``:
    rows inserted and a run announced to one listening process (delivered at commit, like any
    ``NOTIFY``; see wake_choice.py), in one statement, with :func:`.wake_choice.announcing`'s
    parameters."""
    stmt = _notifying.get(shape)
    if stmt is None:
        chosen = wake_choice.chosen_listener()
        notify = sa.func.pg_notify(chosen.c.channel, sa.bindparam(NOTIFY_RUN, type_=sa.String))
        stmt = sa.select(notify).select_from(chosen).add_cte(*insert_ctes(shape))
        with _lock:
            _notifying[shape] = stmt
    return stmt
