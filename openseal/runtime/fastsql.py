"""Hot statements executed on the DBAPI cursor, below SQLAlchemy's per-statement machinery.

A turn runs a dozen small statements. On SQLite, ``Connection.execute`` costs several times
what SQLite itself spends on them (execution context, parameter construction, result set-up,
event dispatch), so the statements the engine runs on every turn go through :func:`execute`
instead. Each statement is compiled once per dialect and parameter shape by SQLAlchemy; what
is skipped is only the per-call work around the cursor. Nothing here is dialect-specific:
the SQL text, the parameter style and the type conversions (``UtcTimestamp`` as epoch
seconds, JSON as compact text) all come from the dialect's own compiler and type processors,
so both backends run exactly the SQL they would have run through ``Connection.execute``.

What stays the same as ``Connection.execute``:

* the statement runs on the connection's current transaction (it must have begun: the
  store's ``write()``/``read()`` begin it; otherwise this falls back to ``execute``);
* DBAPI errors are raised as SQLAlchemy's exceptions (``sa.exc.IntegrityError`` ...);
* ``before_cursor_execute`` listeners still see each statement (with no execution context).

Statements SQLAlchemy rewrites at execution time (expanding ``IN`` parameters, literal
execution) are not handled here; they go through ``Connection.execute`` unchanged.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

Processor = Callable[[Any], Any] | None
_MISSING = object()


@dataclass(frozen=True)
class _Prepared:
    """One statement compiled for one dialect and one set of parameter names."""

    sql: str
    #: (parameter name, value used when the caller passes none, bind processor), in the order
    #: a positional paramstyle expects them
    binds: tuple[tuple[str, Any, Processor], ...]
    #: the name each value is passed under for a named paramstyle; None when positional
    names: tuple[str, ...] | None
    #: result column keys and the SQL type whose result processor converts them
    columns: tuple[tuple[str, sa.types.TypeEngine[Any]], ...]
    #: result processors by the column type codes the driver reports (PostgreSQL's
    #: processors may depend on them; SQLite reports none)
    results: dict[tuple[Any, ...], list[Processor]] = field(default_factory=dict)

    def arguments(self, params: Mapping[str, Any]) -> Any:
        values = []
        for name, default, process in self.binds:
            value = params.get(name, default)
            if value is _MISSING:
                raise sa.exc.ArgumentError(f"a value is required for bind parameter {name!r}")
            values.append(value if process is None else process(value))
        if self.names is None:
            return tuple(values)
        return dict(zip(self.names, values, strict=True))


_lock = threading.Lock()
_Entries = dict[tuple[int, frozenset[str]], tuple[sa.ClauseElement, _Prepared | None]]
#: per dialect (one per engine: its JSON serialiser is part of the bind processors), then
#: (statement, parameter names) → prepared form, or None where not handled. Statements are
#: module-level constants or cached per shape, so each dialect's cache stays small.
_prepared: weakref.WeakKeyDictionary[Dialect, _Entries] = weakref.WeakKeyDictionary()


def _prepare(stmt: sa.ClauseElement, dialect: Dialect, keys: frozenset[str]) -> _Prepared | None:
    entries = _prepared.get(dialect)
    if entries is None:
        with _lock:
            entries = _prepared.setdefault(dialect, {})
    found = entries.get((id(stmt), keys))
    if found is not None and found[0] is stmt:
        return found[1]
    compiled = stmt.compile(dialect=dialect, column_keys=sorted(keys))
    prepared = _from_compiled(compiled) if isinstance(compiled, SQLCompiler) else None
    with _lock:
        # The statement is kept alive with its entry, so its id cannot be reused meanwhile.
        entries[(id(stmt), keys)] = (stmt, prepared)
    return prepared


def _from_compiled(compiled: SQLCompiler) -> _Prepared | None:
    if compiled.post_compile_params or compiled.literal_execute_params:
        return None
    processors = compiled._bind_processors
    if compiled.positional:
        order = list(compiled.positiontup or ())
        names: tuple[str, ...] | None = None
    else:
        order = list(compiled.bind_names.values())
        escaped = compiled.escaped_bind_names
        names = tuple(escaped.get(name, name) for name in order)
    binds: list[tuple[str, Any, Processor]] = []
    for name in order:
        bind = compiled.binds.get(name)
        if bind is None or bind.callable is not None:
            return None
        default = _MISSING if bind.required else bind.value
        process = processors.get(name)
        if process is not None and not callable(process):
            return None  # a per-element processor list (tuples): leave it to SQLAlchemy
        binds.append((name, default, process))
    columns = tuple((column[0], column[3]) for column in compiled._result_columns)
    return _Prepared(compiled.string, tuple(binds), names, columns)


def execute(
    conn: sa.Connection,
    stmt: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Run ``stmt`` with ``params`` (one mapping, or a list for many rows) in ``conn``'s
    transaction; the rows it returns, as dicts keyed by column name (empty without any)."""
    return _run(conn, stmt, params)[0]


def execute_count(conn: sa.Connection, stmt: sa.Executable, params: Mapping[str, Any]) -> int:
    """Run an UPDATE or DELETE without RETURNING; the number of rows it matched."""
    return _run(conn, stmt, params)[1]


def execute_driver_sql(conn: sa.Connection, sql: str) -> None:
    """Run ``sql`` (no parameters, no rows: ``BEGIN IMMEDIATE``) on the connection's cursor.

    For statements a dialect hook issues on every transaction; like ``exec_driver_sql``, but
    without the execution context around it.
    """
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        _cursor_execute(conn, cursor, sql, (), many=False)
    finally:
        cursor.close()


def _cursor_execute(
    conn: sa.Connection, cursor: Any, sql: str, parameters: Any, many: bool
) -> None:
    if conn.dispatch.before_cursor_execute:
        conn.dispatch.before_cursor_execute(conn, cursor, sql, parameters, None, many)
    try:
        if many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(
            sql, parameters, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
        ) from exc


def _run(
    conn: sa.Connection,
    stmt: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], int]:
    many = not isinstance(params, Mapping)
    rows: Sequence[Mapping[str, Any]] = params if many else (params,)  # type: ignore[assignment]
    if not rows:
        return [], 0
    prepared = _prepare(cast(sa.ClauseElement, stmt), conn.dialect, frozenset(rows[0]))
    if prepared is None or not conn.in_transaction():
        result = conn.execute(stmt, list(rows) if many else rows[0])
        if result.returns_rows:
            return [dict(row) for row in result.mappings()], -1
        return [], result.rowcount
    arguments = [prepared.arguments(row) for row in rows]
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        _cursor_execute(conn, cursor, prepared.sql, arguments if many else arguments[0], many)
        if not prepared.columns or cursor.description is None:
            return [], cursor.rowcount
        return _rows(conn.dialect, prepared, cursor.description, cursor.fetchall()), -1
    finally:
        cursor.close()


def _rows(
    dialect: Dialect, prepared: _Prepared, description: Sequence[Any], fetched: Sequence[Any]
) -> list[dict[str, Any]]:
    codes = tuple(described[1] for described in description)
    processors = prepared.results.get(codes)
    if processors is None:
        processors = prepared.results[codes] = [
            type_._cached_result_processor(dialect, code)
            for (_key, type_), code in zip(prepared.columns, codes, strict=True)
        ]
    keys = [key for key, _type in prepared.columns]
    return [
        {
            key: value if process is None else process(value)
            for key, process, value in zip(keys, processors, row, strict=True)
        }
        for row in fetched
    ]


def one_or_none(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The single row, None when there is none; more than one is an error (as in SQLAlchemy)."""
    if len(rows) > 1:
        raise sa.exc.MultipleResultsFound("Multiple rows were found when one or none was required")
    return rows[0] if rows else None
