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
* the statement-level events SQLAlchemy documents: ``before_cursor_execute`` (its listeners
  may rewrite the statement and parameters when registered with ``retval=True``) and
  ``after_cursor_execute`` see each statement, with ``context`` None (documented as
  possible); ``handle_error`` sees every failure, which SQLAlchemy's own error path handles:
  DBAPI errors are raised as SQLAlchemy's exceptions (``sa.exc.IntegrityError`` ...), with
  ``hide_parameters`` honoured, and a lost connection is invalidated rather than pooled;
* where that is not enough — a ``before_execute``/``after_execute`` listener (they need the
  statement object and the result), a dialect ``do_execute*`` listener, or statement
  logging (``echo``) — every statement goes through ``Connection.execute`` instead.

Statements SQLAlchemy rewrites at execution time (expanding ``IN`` parameters, literal
execution) are not handled here; they go through ``Connection.execute`` unchanged.

This reaches into SQLAlchemy internals (the compiler's bind and result bookkeeping, the
connection's error handler). ``pyproject.toml`` pins the SQLAlchemy minor release they were
checked against; :func:`internals_problems` lists what no longer matches, a test fails on any,
and at run time any problem turns this module off (every statement goes through
``Connection.execute``, with a warning) rather than guessing.
"""

from __future__ import annotations

import inspect
import operator
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from openseal.runtime.store.db.json_text import column_writer, compact_json

Processor = Callable[[Any], Any] | None
_MISSING = object()


class _Prepared:
    """One statement compiled for one dialect and one set of parameter names.

    What each call needs is worked out here once, so that building a statement's arguments
    and its rows' dicts is mostly done by C code (item getters, ``dict(zip(...))``).
    """

    def __init__(
        self,
        sql: str,
        binds: Sequence[tuple[str, Any, Processor]],
        names: tuple[str, ...] | None,
        columns: tuple[tuple[str, sa.types.TypeEngine[Any]], ...],
    ) -> None:
        self.sql = sql
        #: (parameter name, value used when the caller passes none, bind processor), in the
        #: order a positional paramstyle expects them
        self.binds = tuple(binds)
        #: the name each value is passed under for a named paramstyle; None when positional
        self.names = names
        #: result column keys and the SQL type whose result processor converts them
        self.columns = columns
        self.keys = tuple(key for key, _type in columns)
        #: result processors by the column type codes the driver reports (PostgreSQL's
        #: processors may depend on them; SQLite reports none), as (key, processor) pairs for
        #: the columns that have one
        self.results: dict[tuple[Any, ...], tuple[tuple[str, Callable[[Any], Any]], ...]] = {}
        #: values of the parameters the caller may leave out (literal values in the statement)
        self._defaults = {name: default for name, default, _p in binds if default is not _MISSING}
        self._values = _getter(tuple(name for name, _d, _p in binds))
        self._processors = tuple(
            (index, process) for index, (_n, _d, process) in enumerate(binds) if process is not None
        )

    def arguments(self, params: Mapping[str, Any]) -> Any:
        """The DBAPI parameters for one row of ``params``: the caller's values (or the
        statement's own where it has one and the caller passes none), each through its
        bind processor."""
        if self._defaults:
            params = {**self._defaults, **params}
        try:
            found = self._values(params)
        except KeyError as missing:
            name = missing.args[0]
            raise sa.exc.InvalidRequestError(
                f"A value is required for bind parameter {name!r}"
            ) from None
        if self._processors:
            values = list(found)
            for index, process in self._processors:
                values[index] = process(values[index])
            found = tuple(values)
        if self.names is None:
            return found
        return dict(zip(self.names, found, strict=False))  # as many names as values


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """``names``' values in a mapping, always as a tuple (``itemgetter`` of one name returns
    the bare value, of none is not allowed)."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        (name,) = names
        return lambda params: (params[name],)
    return lambda _params: ()


_lock = threading.Lock()
_Entries = dict[tuple[int, frozenset[str]], tuple[sa.ClauseElement, _Prepared | None]]
#: the attribute of a dialect (one per engine: its JSON serialiser is part of the bind
#: processors) holding its statements: (statement, parameter names) → prepared form, or None
#: where not handled. Kept on the dialect, the cache goes with its engine; statements are
#: module-level constants or cached per shape, so it stays small.
_ENTRIES = "_openseal_fastsql_statements"


def _prepare(stmt: sa.ClauseElement, dialect: Dialect, keys: frozenset[str]) -> _Prepared | None:
    entries: _Entries | None = getattr(dialect, _ENTRIES, None)
    if entries is None:
        with _lock:
            entries = dialect.__dict__.setdefault(_ENTRIES, {})
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
        found = processors.get(name)
        if found is not None and not callable(found):
            return None  # a per-element processor list (tuples): leave it to SQLAlchemy
        process: Processor = found
        if process is not None:
            process = _json_writer(bind.type, compiled.dialect) or process
        binds.append((name, default, process))
    columns = tuple((column.keyname, column.type) for column in compiled._result_columns)
    return _Prepared(compiled.string, tuple(binds), names, columns)


def _json_writer(type_: Any, dialect: Dialect) -> Processor:
    """The bind processor of a JSON column written as compact text, in one call per value
    (:func:`~.json_text.column_writer`), where the dialect's processor is SQLAlchemy's own
    for JSON text (SQLite's: not psycopg's) with :func:`~.json_text.compact_json` as its
    serialiser; None for any other type or dialect (its processor is kept)."""
    if not isinstance(type_, sa.JSON) or getattr(dialect, "_json_serializer", None) is not (
        compact_json
    ):
        return None
    impl: Any = type_.dialect_impl(dialect)
    kind = type(impl)
    if (
        kind.bind_processor is not sa.JSON.bind_processor
        or kind._make_bind_processor is not sa.JSON._make_bind_processor
        or impl._str_impl.bind_processor(dialect) is not None
    ):
        return None
    return column_writer(
        none_as_null=impl.none_as_null, json_null=impl.NULL, sql_null=sa.sql.elements.Null
    )


def execute(
    conn: sa.Connection,
    stmt: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Run ``stmt`` with ``params`` (one mapping, or a list for many rows) in ``conn``'s
    transaction; the rows it returns, as dicts keyed by column name (empty without any)."""
    return _run(conn, stmt, params)[0]


def execute_with_next(conn: sa.Connection, stmt: sa.Executable, params: Mapping[str, Any]) -> None:
    """Run ``stmt``, a write (or a lock taken) whose result nobody reads, in ``conn``'s
    transaction: on
    PostgreSQL (:mod:`.pg_begin`) it is sent with the connection's next statement, or before
    the commit, and a failure of it fails that statement (or the commit) instead. For a write
    that only a fault of the database or a bug can fail: a caller that handles its failure
    (a duplicate key it looks up, say) runs it with :func:`execute`."""
    deferring = getattr(conn.connection.dbapi_connection, "deferring", None)
    if deferring is None:
        _run(conn, stmt, params)
        return
    with deferring():
        # its rows (a lock's) are never read: the cursor has no result of its own yet
        _run(conn, stmt, params, fetch=False)


def execute_read_with_next(
    conn: sa.Connection,
    stmt: sa.Executable,
    params: Mapping[str, Any],
    then: Callable[[list[dict[str, Any]]], None],
) -> bool:
    """Send ``stmt``, a read, in ``conn``'s transaction with the connection's next statement
    (PostgreSQL, :mod:`.pg_begin`); ``then`` gets its rows once that statement's reply is in,
    before that statement returns (``then`` raising fails it). Whether it was sent that way:
    False (SQLite, no transaction block, a listener that needs ``Connection.execute``) sends
    nothing and calls nothing, and the caller runs it with :func:`execute`.

    The read is sent when a statement follows, or when :func:`send_owed` is called, or before
    the commit; a pipeline that fails hands over no rows (a caller that still needs them reads
    again)."""
    dbapi = _dbapi(conn)
    deferring = getattr(dbapi, "deferring", None)
    dispatch = _fast(conn) if _in_transaction(conn) else None
    if deferring is None or dispatch is None or not dbapi.in_block():
        return False
    prepared = _prepare(stmt, conn.dialect, frozenset(params))  # type: ignore[arg-type]
    if prepared is None:
        return False
    dialect, codes_of = conn.dialect, _driver(dbapi).codes

    def arrived(cursor: Any) -> None:
        codes = codes_of(cursor)
        then([] if codes is None else _rows(dialect, prepared, codes, cursor.fetchall()))

    with deferring(arrived):
        _on_cursor(conn, dispatch, prepared.sql, prepared.arguments(params), many=False,
                   fetch=False)  # fmt: skip
    return True


def send_owed(conn: sa.Connection) -> None:
    """Send what ``conn``'s transaction owes (:func:`execute_read_with_next`,
    :func:`execute_with_next`) now, alone, and hand over the rows of the reads among it;
    nothing to do where nothing is owed."""
    begun = getattr(_dbapi(conn), "begun", None)
    if begun is None:
        return
    try:
        with begun():
            pass
    except BaseException as exc:
        if isinstance(exc, conn.dialect.loaded_dbapi.Error):  # wrapped, a disconnect noticed
            conn._handle_dbapi_exception(exc, None, None, None, None)
        raise


def execute_together(
    conn: sa.Connection, statements: Sequence[tuple[sa.Executable, Mapping[str, Any]]]
) -> list[list[dict[str, Any]]]:
    """Run ``statements`` (each with one mapping of parameters) one after the other in
    ``conn``'s transaction; the rows each returns. On PostgreSQL (psycopg) they go to the
    server in one pipeline, one round trip: the server still runs them one at a time, each
    with the snapshot of its own start under READ COMMITTED, so a statement sees what
    committed while an earlier one waited for a lock. Elsewhere, or when a statement needs
    ``Connection.execute``, each is run as :func:`execute` runs it."""
    dispatch: Any = _fast(conn) if _in_transaction(conn) else None
    dbapi: Any = _dbapi(conn)
    pipeline: Any = getattr(dbapi, "pipeline", None)
    prepared = []
    if dispatch is not None and pipeline is not None and len(statements) > 1:
        for stmt, params in statements:
            found = _prepare(stmt, conn.dialect, frozenset(params))  # type: ignore[arg-type]
            if found is None:
                break
            prepared.append((found, params))
    if len(prepared) != len(statements) or len(statements) < 2:
        return [_run(conn, stmt, params)[0] for stmt, params in statements]
    assert dbapi is not None
    sent: list[tuple[Any, _Prepared, str, Any]] = []
    heard = dispatch is not _UNHEARD
    sql, arguments, cursor = "", None, None
    try:
        with pipeline():
            for one, params in prepared:
                sql, arguments = one.sql, one.arguments(params)
                cursor = dbapi.cursor()
                if heard:
                    for listener in dispatch.before_cursor_execute:
                        sql, arguments = listener(conn, cursor, sql, arguments, None, False)
                cursor.execute(sql, arguments)
                if heard:
                    dispatch.after_cursor_execute(conn, cursor, sql, arguments, None, False)
                sent.append((cursor, one, sql, arguments))
        results: list[list[dict[str, Any]]] = []
        codes_of = _driver(dbapi).codes
        for sent_cursor, one, sent_sql, sent_arguments in sent:
            cursor, sql, arguments = sent_cursor, sent_sql, sent_arguments
            codes = codes_of(cursor) if one.columns else None
            if codes is None:
                results.append([])
            else:
                results.append(_rows(conn.dialect, one, codes, cursor.fetchall()))
            cursor.close()
    except BaseException as exc:
        dbapi_error = isinstance(exc, conn.dialect.loaded_dbapi.Error)
        conn._handle_dbapi_exception(exc, sql if dbapi_error else None, arguments, cursor, None)
    return results


def execute_count(conn: sa.Connection, stmt: sa.Executable, params: Mapping[str, Any]) -> int:
    """Run an UPDATE or DELETE without RETURNING; the number of rows it matched."""
    return _run(conn, stmt, params)[1]


def execute_driver_sql(conn: sa.Connection, sql: str) -> None:
    """Run ``sql`` (no parameters, no rows: ``BEGIN IMMEDIATE``) on the connection's cursor.

    For statements a dialect hook issues on every transaction; like ``exec_driver_sql``, but
    without the execution context around it.
    """
    dispatch = _fast(conn)
    if dispatch is None:
        conn.exec_driver_sql(sql)
        return
    _on_cursor(conn, dispatch, sql, (), many=False, fetch=False)


def _fast(conn: sa.Connection) -> Any:
    """The event dispatcher whose cursor listeners the cursor path calls, or None when some
    listener or option on ``conn`` needs ``Connection.execute``.

    Listeners usually live on the engine; the connection's own dispatcher (the engine's joined
    with its own) is looked at only when something listens on the connection itself, as
    SQLAlchemy does (its ``_has_events`` flags): reading the joined one costs several times
    more, on every statement.
    """
    dialect = conn.dialect
    if conn._echo or (not _checked.get(dialect.name, False) and not _internals_ok(dialect)):
        return None
    if dialect._has_events and (
        dialect.dispatch.do_execute
        or dialect.dispatch.do_executemany
        or dialect.dispatch.do_execute_no_params
        or dialect.dispatch.do_setinputsizes
    ):
        return None
    if not conn._has_events:
        dispatch = conn.engine.dispatch
        if _unheard(dispatch):
            return _UNHEARD
    else:
        dispatch = conn.dispatch
    if dispatch.before_execute or dispatch.after_execute:
        return None
    return dispatch


#: what :func:`_fast` returns when no statement-level listener is registered: the cursor path
#: then calls none (there are none to call)
_UNHEARD = object()


def _unheard(dispatch: Any) -> bool:
    """Whether an engine's dispatcher has no listener of the statement-level events, on the
    engine or on its class. Read off each collection's lists, as its ``__bool__`` does, but
    without a Python-level call per collection: on every statement, those calls cost more
    than the rest of this module's work around the cursor."""
    return not (
        dispatch.before_execute.parent_listeners
        or getattr(dispatch.before_execute, "listeners", None)
        or dispatch.after_execute.parent_listeners
        or getattr(dispatch.after_execute, "listeners", None)
        or dispatch.before_cursor_execute.parent_listeners
        or getattr(dispatch.before_cursor_execute, "listeners", None)
        or dispatch.after_cursor_execute.parent_listeners
        or getattr(dispatch.after_cursor_execute, "listeners", None)
    )


def _unheard_as_told(dispatch: Any) -> bool:
    """:func:`_unheard` as the listener collections tell it themselves."""
    return not (
        dispatch.before_execute
        or dispatch.after_execute
        or dispatch.before_cursor_execute
        or dispatch.after_cursor_execute
    )


class _Driver:
    """How the cursor path uses one DBAPI's connections (worked out once per connection class).

    psycopg's cursors are Python objects whose set-up and ``close`` cost more than a short
    statement's own client-side work, so each connection keeps one cursor for the cursor path's
    statements (one at a time: a connection serves one thread, and each statement's rows are
    read before the next is sent); its result's column types are read off the result itself,
    not off ``description``, whose column objects it builds afresh on every access. sqlite3's
    cursors are cheap and each is closed at once, so its statement is reset then, as before.
    """

    def __init__(self, dbapi: Any) -> None:
        psycopg = hasattr(dbapi, "pgconn") and hasattr(dbapi, "__dict__")
        #: the attribute of a connection holding its kept cursor; None where none is kept
        self.kept = _KEPT_CURSOR if psycopg else None
        #: the column type codes of a cursor's current result; None when it has no rows
        self.codes: Callable[[Any], tuple[Any, ...] | None] = (
            _result_codes if psycopg else _description_codes
        )


_KEPT_CURSOR = "_openseal_cursor"
_drivers: dict[type, _Driver] = {}


def _in_transaction(conn: sa.Connection) -> bool:
    """``conn.in_transaction()``, read off the connection's transaction as it reads it."""
    trans = conn._transaction
    return trans is not None and trans.is_active


def _dbapi(conn: sa.Connection) -> Any:
    """The DBAPI connection under ``conn`` (``conn.connection.dbapi_connection``; the property
    is used only when it has none, to revalidate it or raise as it does)."""
    fairy = conn._dbapi_connection
    return (conn.connection if fairy is None else fairy).dbapi_connection


def _driver(dbapi: Any) -> _Driver:
    kind = type(dbapi)
    driver = _drivers.get(kind)
    if driver is None:
        driver = _drivers[kind] = _Driver(dbapi)
    return driver


def _description_codes(cursor: Any) -> tuple[Any, ...] | None:
    description = cursor.description
    return None if description is None else tuple(map(_type_code, description))


def _result_codes(cursor: Any) -> tuple[Any, ...] | None:
    """psycopg: the type OIDs of the result's columns (what ``description``'s ``type_code``
    says), read off ``Cursor.pgresult``; ``description`` itself for a result without columns,
    which it tells apart by the result's status."""
    result = cursor.pgresult
    fields = 0 if result is None else result.nfields
    if not fields:
        return _description_codes(cursor)
    return tuple(map(result.ftype, range(fields)))


def _kept_cursor(dbapi: Any, kept: str) -> Any:
    """The cursor ``dbapi`` keeps (under the attribute ``kept``) for the cursor path's
    statements, made anew when it has none open."""
    cursor = dbapi.__dict__.get(kept)
    if cursor is None or cursor.closed:
        cursor = dbapi.cursor()
        setattr(dbapi, kept, cursor)
    return cursor


def _on_cursor(
    conn: sa.Connection, dispatch: Any, sql: str, parameters: Any, *, many: bool, fetch: bool
) -> tuple[tuple[Any, ...] | None, Sequence[Any], int]:
    """Execute on a DBAPI cursor, as ``Connection._exec_single_context`` does: the cursor
    events around it, SQLAlchemy's error handling on any failure. Returns the type codes of
    the result's columns (when ``fetch`` and it has rows; None otherwise), its rows and its
    row count."""
    fairy = conn._dbapi_connection  # Connection.connection, without its property
    dbapi = (conn.connection if fairy is None else fairy).dbapi_connection
    assert dbapi is not None
    driver = _drivers.get(type(dbapi)) or _driver(dbapi)
    cursor = dbapi.cursor() if driver.kept is None else _kept_cursor(dbapi, driver.kept)
    heard = dispatch is not _UNHEARD
    try:
        # Listeners registered without retval=True are wrapped by SQLAlchemy to hand the
        # statement and parameters back unchanged; those with it may replace them.
        if heard:
            for listener in dispatch.before_cursor_execute:
                sql, parameters = listener(conn, cursor, sql, parameters, None, many)
        if many:
            cursor.executemany(sql, parameters)
        else:
            cursor.execute(sql, parameters)
        if heard:
            # Called as SQLAlchemy calls it, without asking first whether anything listens.
            dispatch.after_cursor_execute(conn, cursor, sql, parameters, None, many)
        codes = driver.codes(cursor) if fetch else None
        fetched = cursor.fetchall() if codes is not None else ()
        rowcount = cursor.rowcount
    except BaseException as exc:
        # handle_error listeners, wrapping, disconnect detection and invalidation. A listener's
        # own exception is raised as it is (no statement given), as Connection.execute does.
        dbapi_error = isinstance(exc, conn.dialect.loaded_dbapi.Error)
        conn._handle_dbapi_exception(exc, sql if dbapi_error else None, parameters, cursor, None)
    if driver.kept is None:
        cursor.close()
    return codes, fetched, rowcount


def _run(
    conn: sa.Connection,
    stmt: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    fetch: bool = True,
) -> tuple[list[dict[str, Any]], int]:
    rows: Sequence[Mapping[str, Any]]
    if type(params) is dict or isinstance(params, Mapping):
        many, rows = False, (params,)
    elif params:
        many, rows = True, params
    else:
        return [], 0
    prepared = None
    trans = conn._transaction  # Connection.in_transaction(), without its call
    dispatch = _fast(conn) if trans is not None and trans.is_active else None
    if dispatch is not None:
        prepared = _prepare(stmt, conn.dialect, frozenset(rows[0]))  # type: ignore[arg-type]
    if prepared is None:
        result = conn.execute(stmt, list(rows) if many else rows[0])
        if result.returns_rows:
            return [dict(row) for row in result.mappings()], -1
        return [], result.rowcount
    try:
        arguments = (
            [prepared.arguments(row) for row in rows] if many else prepared.arguments(rows[0])
        )
    except BaseException as exc:  # as SQLAlchemy reports a failure to build the parameters
        conn._handle_dbapi_exception(exc, prepared.sql, list(rows), None, None)
    columns = prepared.columns
    codes, fetched, rowcount = _on_cursor(
        conn, dispatch, prepared.sql, arguments, many=many, fetch=fetch and bool(columns)
    )
    if codes is None:
        return [], rowcount
    return _rows(conn.dialect, prepared, codes, fetched), -1


def _rows(
    dialect: Dialect, prepared: _Prepared, codes: tuple[Any, ...], fetched: Sequence[Any]
) -> list[dict[str, Any]]:
    processors = prepared.results.get(codes)
    if processors is None:
        if len(codes) != len(prepared.columns):
            raise sa.exc.InvalidRequestError(
                f"{len(codes)} columns returned, {len(prepared.columns)} expected"
            )
        # A key named twice keeps its last column's value, so that column's processor.
        by_key = {
            key: type_._cached_result_processor(dialect, code)
            for (key, type_), code in zip(prepared.columns, codes, strict=True)
        }
        processors = prepared.results[codes] = tuple(
            (key, process) for key, process in by_key.items() if process is not None
        )
    # Every row has as many values as ``codes`` (checked above when they were first seen).
    rows = list(map(dict, map(zip, repeat(prepared.keys), fetched)))
    for row in rows:
        for key, process in processors:
            row[key] = process(row[key])
    return rows


_type_code = operator.itemgetter(1)


# -- the SQLAlchemy internals this module relies on ----------------------------------------

#: dialect name → whether the internals this module needs are there for it
_checked: dict[str, bool] = {}


def _internals_ok(dialect: Dialect) -> bool:
    """Checked once per process and dialect: a command on SQLite never loads psycopg."""
    if dialect.name not in _checked:
        problems = internals_problems([dialect])
        if problems:
            warnings.warn(
                "openseal.runtime.store.db.fastsql is off (every statement goes through "
                f"Connection.execute): SQLAlchemy {sa.__version__} moved {'; '.join(problems)}",
                RuntimeWarning,
                stacklevel=3,
            )
        _checked[dialect.name] = not problems
    return _checked[dialect.name]


def internals_problems(dialects: Sequence[Dialect] | None = None) -> list[str]:
    """What this module needs from SQLAlchemy's internals and does not find (empty: all there).

    Checks the compiler's bookkeeping on one statement for each of ``dialects`` (default:
    SQLite's and psycopg's, one per paramstyle), the type's cached result processor, the
    connection's error handler and echo flag, the lists an engine keeps its statement listeners
    in, and the wrapping of cursor listeners that lets them be called one by one.
    """
    if dialects is None:
        from sqlalchemy.dialects import postgresql, sqlite

        psycopg_dialect: Callable[[], Dialect] = postgresql.psycopg.dialect
        dialects = [sqlite.dialect(), psycopg_dialect()]
    problems: list[str] = []
    for dialect in dialects:
        problems += _compiler_problems(dialect)
    expected = ["self", "e", "statement", "parameters", "cursor", "context"]
    handler = getattr(sa.Connection, "_handle_dbapi_exception", None)
    if handler is None or list(inspect.signature(handler).parameters)[:6] != expected:
        problems.append("Connection._handle_dbapi_exception(e, statement, parameters, ...)")
    engine = sa.create_engine("sqlite://")
    try:
        problems += _connection_problems(engine)
        problems += _listener_problems(engine)
    finally:
        engine.dispose()
    return problems


def _compiler_problems(dialect: Dialect) -> list[str]:
    """What the compiler's bookkeeping on one probe statement lacks for ``dialect``."""
    table = sa.Table("probe", sa.MetaData(), sa.Column("id", sa.String), sa.Column("doc", sa.JSON))
    stmt = (
        sa.update(table)
        .where(table.c.id == sa.bindparam("p_id"))
        .values(doc=sa.bindparam("v_doc", type_=table.c.doc.type))
        .returning(table.c.id, table.c.doc)
    )
    try:
        compiled = stmt.compile(dialect=dialect, column_keys=["p_id", "v_doc"])
        prepared = _from_compiled(compiled)
        if prepared is None:
            return [f"{dialect.name}: a plain statement is no longer prepared"]
        if [name for name, _d, _p in prepared.binds] != ["v_doc", "p_id"]:
            return [f"{dialect.name}: bind order {prepared.binds!r}"]
        if prepared.binds[0][2] is None or [k for k, _t in prepared.columns] != ["id", "doc"]:
            return [f"{dialect.name}: JSON bind processor or result columns"]
        if (prepared.names is None) != compiled.positional:
            return [f"{dialect.name}: paramstyle"]
        sa.JSON()._cached_result_processor(dialect, None)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        return [f"{dialect.name} compiler: {exc.__class__.__name__}: {exc}"]
    return []


def _connection_problems(engine: sa.Engine) -> list[str]:
    """What a connection of ``engine`` lacks: its echo flag and its owners' event flags."""
    problems = []
    with engine.connect() as conn:
        if not isinstance(getattr(conn, "_echo", None), bool):
            problems.append("Connection._echo")
        for owner in (conn, conn.engine, conn.dialect):
            if not isinstance(getattr(owner, "_has_events", None), bool):
                problems.append(f"{type(owner).__name__}._has_events")
        with conn.begin():
            if _in_transaction(conn) is not True:
                problems.append("Connection._transaction.is_active")
        if _in_transaction(conn) is not False:
            problems.append("Connection._transaction after the transaction")
        if _dbapi(conn) is not conn.connection.dbapi_connection:
            problems.append("Connection._dbapi_connection")
    return problems


def _listener_problems(engine: sa.Engine) -> list[str]:
    """Whether ``engine``'s statement listeners are told by its lists, and are wrapped so that
    each can be called alone (listens on ``engine``: a probe's own)."""

    def unchanged(*_args: Any) -> None:
        return None

    problems = []
    try:
        # as the collections themselves tell, before and after one listens on this
        # engine (a listener on every engine, such as an instrumentation's, may be there)
        agrees = _unheard(engine.dispatch) == _unheard_as_told(engine.dispatch)
        sa.event.listen(engine, "before_cursor_execute", unchanged)
        if not agrees or _unheard(engine.dispatch):
            problems.append("an engine's statement listeners are not told by its lists")
    except AttributeError as exc:
        problems.append(f"an engine's statement listeners: {exc}")
    with engine.connect() as conn:
        listeners = list(conn.dispatch.before_cursor_execute)
        returned = listeners[0](conn, None, "SELECT 1", (), None, False) if listeners else None
        if returned != ("SELECT 1", ()):
            problems.append("before_cursor_execute listeners no longer return the statement")
    return problems


def one_or_none(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The single row, None when there is none; more than one is an error (as in SQLAlchemy)."""
    if len(rows) > 1:
        raise sa.exc.MultipleResultsFound("Multiple rows were found when one or none was required")
    return rows[0] if rows else None
