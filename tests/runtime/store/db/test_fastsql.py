"""fastsql runs hot statements on the DBAPI cursor: same SQL, same values, same errors as
``Connection.execute``, on both backends."""

from __future__ import annotations

import logging
import tomllib
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from packaging.requirements import Requirement
from sqlalchemy import event

from openseal.runtime.store.db import fastsql
from openseal.runtime.store.db.json_text import compact_json
from openseal.runtime.store.tables import schema
from tests.runtime.support import Backend

inbound = schema.inbound_events
INSERT = sa.insert(inbound)
BY_NAME = sa.select(inbound).where(inbound.c.name == sa.bindparam("p_name")).order_by(inbound.c.id)
CONSUME = (
    sa.update(inbound)
    .where(inbound.c.name == sa.bindparam("p_name"), inbound.c.consumed_at.is_(None))
    .values(consumed_at=sa.bindparam("v_at", type_=inbound.c.consumed_at.type))
)
# A list of literals becomes an expanding parameter, which fastsql hands back to SQLAlchemy.
EXPANDING = sa.select(inbound.c.id).where(inbound.c.name.in_(["a", "b"])).order_by(inbound.c.id)
AT = datetime(2026, 11, 30, 10, 30, 15, 250000, tzinfo=UTC)


def row(id: str, name: str, payload: Any) -> dict[str, Any]:
    return {
        "id": id, "name": name, "correlation": {"k": [1, "x"]}, "payload": payload,
        "received_at": AT, "consumed_at": None,
    }  # fmt: skip


def test_rows_round_trip_like_sqlalchemy(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        fastsql.execute(conn, INSERT, [row("e1", "a", {"n": 1.5}), row("e2", "a", None)])
        fast = fastsql.execute(conn, BY_NAME, {"p_name": "a"})
        slow = [dict(r) for r in conn.execute(BY_NAME, {"p_name": "a"}).mappings()]
    assert fast == slow
    assert fast[0]["received_at"] == AT and fast[0]["received_at"].tzinfo is not None
    assert fast[0]["correlation"] == {"k": [1, "x"]}
    assert fast[0]["consumed_at"] is None


def test_none_in_a_json_column_is_stored_as_sqlalchemy_stores_it(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        fastsql.execute(conn, INSERT, row("e1", "a", None))
        conn.execute(INSERT, row("e2", "a", None))
        stored = conn.execute(
            sa.select(inbound.c.id, inbound.c.payload.is_(None)).order_by(inbound.c.id)
        ).all()
    assert stored[0][1] == stored[1][1]


def test_updates_report_matched_rows(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        fastsql.execute(conn, INSERT, [row("e1", "a", 1), row("e2", "a", 2), row("e3", "b", 3)])
        assert fastsql.execute_count(conn, CONSUME, {"p_name": "a", "v_at": AT}) == 2
        assert fastsql.execute_count(conn, CONSUME, {"p_name": "a", "v_at": AT}) == 0


def test_statements_sent_together_each_see_the_ones_before(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        found = fastsql.execute_together(
            conn,
            [
                (INSERT, row("e1", "a", 1)),
                (CONSUME, {"p_name": "a", "v_at": AT}),
                (BY_NAME, {"p_name": "a"}),
            ],
        )
        assert found[:2] == [[], []]
        assert [(r["id"], r["consumed_at"]) for r in found[2]] == [("e1", AT)]


def test_a_failure_among_statements_sent_together_rolls_back(backend: Backend) -> None:
    store = backend.open()
    with pytest.raises(sa.exc.IntegrityError), store.write() as conn:
        fastsql.execute_together(
            conn,
            [(INSERT, row("e1", "a", 1)), (INSERT, row("e1", "a", 2)), (BY_NAME, {"p_name": "a"})],
        )
    with store.read() as conn:
        assert fastsql.execute(conn, BY_NAME, {"p_name": "a"}) == []


def test_expanding_parameters_fall_back_to_sqlalchemy(backend: Backend) -> None:
    store = backend.open()
    with store.write() as conn:
        fastsql.execute(conn, INSERT, [row("e1", "a", 1), row("e2", "c", 2)])
        assert fastsql.execute(conn, EXPANDING, {}) == [{"id": "e1"}]


def test_errors_are_sqlalchemy_errors_and_roll_back(backend: Backend) -> None:
    store = backend.open()
    with pytest.raises(sa.exc.IntegrityError), store.write() as conn:
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        fastsql.execute(conn, INSERT, row("e1", "a", 2))
    with store.read() as conn:
        assert fastsql.execute(conn, BY_NAME, {"p_name": "a"}) == []


def test_statements_after_a_failure_on_the_same_connection_run_and_return_rows(
    backend: Backend,
) -> None:
    # a failure closes the cursor it happened on; the next statement must not need it
    store = backend.open()
    with store.write() as conn:
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        fastsql.execute_driver_sql(conn, "SAVEPOINT before_duplicate")
        with pytest.raises(sa.exc.IntegrityError):
            fastsql.execute(conn, INSERT, row("e1", "a", 2))
        fastsql.execute_driver_sql(conn, "ROLLBACK TO SAVEPOINT before_duplicate")
        fastsql.execute(conn, INSERT, row("e2", "a", 3))
        found = fastsql.execute(conn, BY_NAME, {"p_name": "a"})
        assert [(r["id"], r["payload"]) for r in found] == [("e1", 1), ("e2", 3)]
        assert fastsql.execute_count(conn, CONSUME, {"p_name": "a", "v_at": AT}) == 2
        assert fastsql.execute(conn, BY_NAME, {"p_name": "b"}) == []


def test_a_missing_parameter_is_refused_as_sqlalchemy_refuses_it(backend: Backend) -> None:
    store = backend.open()
    with pytest.raises(sa.exc.StatementError) as slow, store.write() as conn:
        conn.execute(BY_NAME, {"other": "a"})
    with pytest.raises(sa.exc.StatementError) as fast, store.write() as conn:
        fastsql.execute(conn, BY_NAME, {"other": "a"})
    assert type(fast.value.orig) is type(slow.value.orig) is sa.exc.InvalidRequestError


def test_statement_listeners_still_see_each_statement(backend: Backend) -> None:
    store = backend.open()
    seen: list[str] = []

    def listen(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
        seen.append(sql.split()[0].upper())

    event.listen(store.engine, "before_cursor_execute", listen)
    with store.write() as conn:
        seen.clear()
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        fastsql.execute(conn, BY_NAME, {"p_name": "a"})
    assert seen == ["INSERT", "SELECT"]


def test_the_cursor_path_is_taken_on_a_plain_store(backend: Backend) -> None:
    # Without it every test here would pass with the fast path off (see the next test).
    store = backend.open()
    contexts: list[Any] = []

    def listen(_conn: Any, _cursor: Any, _sql: str, _params: Any, context: Any, _m: Any) -> None:
        contexts.append(context)

    event.listen(store.engine, "before_cursor_execute", listen)
    with store.write() as conn:
        contexts.clear()
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
    assert contexts == [None]


def test_a_store_nobody_listens_to_calls_no_listener(backend: Backend) -> None:
    # The cursor path then skips the listener collections (their calls cost more than the
    # rest of its work); one listener, here on every engine, brings them back.
    store = backend.open()
    seen: list[str] = []

    def listen(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
        seen.append(sql.split()[0].upper())

    with store.write() as conn:
        assert fastsql._fast(conn) is fastsql._UNHEARD
        event.listen(sa.Engine, "after_cursor_execute", listen)
        try:
            assert fastsql._fast(conn) is not fastsql._UNHEARD
            fastsql.execute(conn, INSERT, row("e1", "a", 1))
        finally:
            event.remove(sa.Engine, "after_cursor_execute", listen)
        assert fastsql._fast(conn) is fastsql._UNHEARD
    assert seen == ["INSERT"]


def test_the_sqlalchemy_internals_it_relies_on_are_where_it_expects() -> None:
    # A new SQLAlchemy release moved something: fix fastsql (or its checks), then widen the
    # SQLAlchemy pin in pyproject.toml to the release tested.
    assert fastsql.internals_problems() == []


def test_a_listener_on_every_engine_does_not_turn_the_cursor_path_off() -> None:
    # Instrumentation (a statement counter, a tracer) may listen on sa.Engine before the
    # first statement of the process, when the internals are checked: the check compares the
    # lists with what the collections tell, so such a listener is not taken for a problem.
    def listen(*_args: Any) -> None:
        return None

    event.listen(sa.Engine, "before_cursor_execute", listen)
    try:
        assert fastsql.internals_problems() == []
    finally:
        event.remove(sa.Engine, "before_cursor_execute", listen)


def test_the_installed_sqlalchemy_is_within_the_pinned_range() -> None:
    project = tomllib.loads((Path(__file__).parents[4] / "pyproject.toml").read_text())
    pins = [Requirement(d) for d in project["project"]["dependencies"]]
    (pin,) = [r for r in pins if r.name.lower() == "sqlalchemy"]
    assert pin.specifier.contains(metadata.version("SQLAlchemy"))
    # The pin names one minor release: the one whose internals were checked.
    assert any(s.operator == "<" for s in pin.specifier)
    (upper,) = [s.version for s in pin.specifier if s.operator == "<"]
    assert upper.split(".")[0] == sa.__version__.split(".")[0] and upper.count(".") == 1


def test_after_cursor_execute_sees_each_statement(backend: Backend) -> None:
    store = backend.open()
    seen: list[tuple[str, bool]] = []

    def listen(_conn: Any, cursor: Any, sql: str, _params: Any, _ctx: Any, many: bool) -> None:
        seen.append((sql.split()[0].upper(), many))

    event.listen(store.engine, "after_cursor_execute", listen)
    with store.write() as conn:
        seen.clear()
        fastsql.execute(conn, INSERT, [row("e1", "a", 1), row("e2", "a", 2)])
        fastsql.execute(conn, BY_NAME, {"p_name": "a"})
        assert fastsql.execute_count(conn, CONSUME, {"p_name": "a", "v_at": AT}) == 2
    assert seen == [("INSERT", True), ("SELECT", False), ("UPDATE", False)]


def test_a_retval_cursor_listener_may_rewrite_the_statement(backend: Backend) -> None:
    store = backend.open()
    executed: list[str] = []

    def tag(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> tuple[str, Any]:
        return "/* tagged */ " + sql, params

    def after(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
        executed.append(sql)

    event.listen(store.engine, "before_cursor_execute", tag, retval=True)
    event.listen(store.engine, "after_cursor_execute", after)
    with store.write() as conn:
        executed.clear()
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        assert [r["id"] for r in fastsql.execute(conn, BY_NAME, {"p_name": "a"})] == ["e1"]
    assert len(executed) == 2 and all(sql.startswith("/* tagged */ ") for sql in executed)


def test_handle_error_sees_failures_and_may_replace_the_exception(backend: Backend) -> None:
    store = backend.open()
    seen: list[tuple[type[BaseException], str | None]] = []

    class Duplicate(Exception):
        pass

    def handle(context: Any) -> BaseException | None:
        seen.append((type(context.sqlalchemy_exception), context.statement))
        return Duplicate("stored twice") if context.statement.startswith("INSERT") else None

    event.listen(store.engine, "handle_error", handle)
    with pytest.raises(Duplicate), store.write() as conn:
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        fastsql.execute(conn, INSERT, row("e1", "a", 2))
    assert [(kind, sql.split()[0]) for kind, sql in seen if sql] == [
        (sa.exc.IntegrityError, "INSERT")
    ]


def test_errors_hide_parameters_when_the_engine_says_so(backend: Backend) -> None:
    store = backend.open()
    store.engine.hide_parameters = True
    with pytest.raises(sa.exc.IntegrityError) as raised, store.write() as conn:
        fastsql.execute(conn, INSERT, row("e1", "a", "secret-canary-value"))
        fastsql.execute(conn, INSERT, row("e1", "a", "secret-canary-value"))
    assert "secret-canary-value" not in str(raised.value)
    assert raised.value.hide_parameters


def test_listeners_it_cannot_serve_send_statements_through_sqlalchemy(backend: Backend) -> None:
    # before_execute/after_execute need the statement object and the result.
    store = backend.open()
    seen: list[Any] = []

    def before(_conn: Any, clause: Any, *_rest: Any) -> None:
        seen.append(clause)

    event.listen(store.engine, "before_execute", before)
    with store.write() as conn:
        seen.clear()
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        assert fastsql.execute(conn, BY_NAME, {"p_name": "a"})[0]["payload"] == 1
    assert seen == [INSERT, BY_NAME]


def test_statement_logging_still_logs(backend: Backend, caplog: pytest.LogCaptureFixture) -> None:
    store = backend.open()
    store.engine.echo = True
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine"), store.write() as conn:
        caplog.clear()
        fastsql.execute(conn, BY_NAME, {"p_name": "a"})
    assert any(r.getMessage().startswith("SELECT inbound_events.id") for r in caplog.records)


def test_a_lost_connection_is_invalidated_not_pooled(backend: Backend, request: Any) -> None:
    if backend.name != "postgresql":
        pytest.skip("an embedded SQLite database has no connection to lose")
    admin: sa.Engine = request.getfixturevalue("pg_admin")
    store = backend.open()
    with store.engine.connect() as conn:
        conn.begin()
        pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        with admin.begin() as other:
            other.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(sa.exc.OperationalError) as raised:
            fastsql.execute(conn, BY_NAME, {"p_name": "a"})
        # SQLAlchemy recognised the disconnect: the connection is discarded, not pooled.
        assert raised.value.connection_invalidated
        assert conn.invalidated
        conn.rollback()
    with store.read() as conn:
        assert conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one() != pid


def test_listeners_on_one_connection_are_honoured_too(backend: Backend) -> None:
    store = backend.open()
    seen: list[str] = []
    with store.write() as conn:

        def cursor(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
            seen.append("cursor " + sql.split()[0].upper())

        def before(_conn: Any, clause: Any, *_rest: Any) -> None:
            seen.append("execute")

        event.listen(conn, "before_cursor_execute", cursor)
        fastsql.execute(conn, INSERT, row("e1", "a", 1))
        event.listen(conn, "before_execute", before)
        fastsql.execute(conn, BY_NAME, {"p_name": "a"})
    assert seen == ["cursor INSERT", "execute", "cursor SELECT"]


JSON_VALUES: list[Any] = [
    None, sa.JSON.NULL, sa.null(), True, 0, 2.5, float("nan"), "plain", 'é "q" \\', [], {},
    {"inputs": {"n": 1}, "trail": ["a", None]}, [{"at": "x", "n": [1, 2.0]}], {1: "key"},
]  # fmt: skip


@pytest.mark.parametrize("none_as_null", [False, True])
def test_json_columns_are_written_as_sqlalchemy_writes_them(none_as_null: bool) -> None:
    # The stored bytes must not change: SQLite's JSON processor, with the store's serialiser.
    dialect = sa.create_engine("sqlite://", json_serializer=compact_json).dialect  # as the store's
    column = sa.JSON(none_as_null=none_as_null)
    ours = fastsql._json_writer(column, dialect)
    theirs: Any = column._cached_bind_processor(dialect)
    assert ours is not None and theirs is not None
    for value in JSON_VALUES:
        assert repr(ours(value)) == repr(theirs(value)), value
    cycle: list[Any] = []
    cycle.append(cycle)
    for bad, error in (({"at": AT}, TypeError), (cycle, ValueError)):
        with pytest.raises(error) as expected:
            theirs(bad)
        with pytest.raises(error) as got:
            ours(bad)
        assert str(got.value) == str(expected.value)


def test_json_columns_keep_sqlalchemy_s_processor_where_it_is_not_plain_text() -> None:
    from sqlalchemy.dialects import postgresql

    psycopg_dialect: Any = postgresql.psycopg.dialect
    assert fastsql._json_writer(sa.JSON(), psycopg_dialect()) is None
    assert fastsql._json_writer(sa.JSON(), sa.create_engine("sqlite://").dialect) is None
    assert fastsql._json_writer(sa.String(), sa.create_engine("sqlite://").dialect) is None
