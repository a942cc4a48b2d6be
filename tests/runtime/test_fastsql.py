"""fastsql runs hot statements on the DBAPI cursor: same SQL, same values, same errors as
``Connection.execute``, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from openseal.runtime import fastsql, schema
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


def test_a_missing_parameter_is_refused(backend: Backend) -> None:
    store = backend.open()
    with pytest.raises(sa.exc.ArgumentError), store.write() as conn:
        fastsql.execute(conn, BY_NAME, {"other": "a"})


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
