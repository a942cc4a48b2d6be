"""A store keeps a committed transaction's connection for its next transaction of the same kind
(idle_connections.py), out of the pool: on both backends, a failed transaction's connection is
never kept, a read's begin mode never reaches a write, ``Engine.dispose()`` and ``close()``
still end every idle connection, and a forked child never uses its parent's."""

from __future__ import annotations

import os
import threading
import time
from contextlib import ExitStack
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from openseal.runtime.store import GroupCommit, Store
from openseal.runtime.store.db import liveness
from tests.runtime.store.db.test_group_commit import GUARD
from tests.runtime.support import Backend, eventually, new_run


class Checkouts:
    """Counts the connections checked out of ``store``'s pool."""

    def __init__(self, store: Store) -> None:
        self.count = 0
        event.listen(store.engine, "checkout", self._checkout)

    def _checkout(self, *_args: Any) -> None:
        self.count += 1


class Boom(Exception):
    pass


def write_once(store: Store) -> sa.Connection:
    with store.write() as conn:
        conn.execute(sa.text("SELECT 1"))
        return conn


def test_the_store_s_transactions_share_one_connection(store: Store) -> None:
    new_run(store)
    checkouts = Checkouts(store)
    for n in range(5):
        store.runs.get(new_run(store, n=n).id)
    assert checkouts.count <= 1


def test_a_connection_whose_transaction_failed_is_not_kept(store: Store) -> None:
    kept = write_once(store)
    with pytest.raises(Boom), store.write() as conn:
        assert conn is kept
        raise Boom
    assert kept.closed
    again = write_once(store)
    assert again is not kept
    assert write_once(store) is again


def test_a_read_begins_as_a_read_and_a_write_as_a_write(store: Store) -> None:
    begins: list[str] = []

    def statement(_conn: Any, _cursor: Any, sql: str, *_rest: Any) -> None:
        if sql.startswith("BEGIN"):
            begins.append(sql)

    event.listen(store.engine, "before_cursor_execute", statement)
    for _ in range(2):
        with store.read() as conn:
            conn.execute(sa.text("SELECT 1"))
        write_once(store)
    if store.dialect == "sqlite":  # psycopg begins PostgreSQL's transactions on its own
        assert begins == ["BEGIN DEFERRED", "BEGIN IMMEDIATE"] * 2


def test_a_disposed_engine_keeps_no_connection(store: Store) -> None:
    kept = write_once(store)
    store.engine.dispose()
    assert write_once(store) is not kept
    assert kept.closed


def test_closing_the_store_leaves_no_connection_checked_out(store: Store) -> None:
    with store.read() as conn:
        conn.execute(sa.text("SELECT 1"))
    group = GroupCommit(store, size=1)
    with group.member():
        write_once(store)
    assert store.engine.pool.checkedout() >= 1  # type: ignore[attr-defined]
    store.close()
    assert store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_group_commit_keeps_its_connection_when_the_batch_committed(store: Store) -> None:
    group = GroupCommit(store, size=1)
    with group.member():
        kept = write_once(store)
        assert write_once(store) is kept
        with pytest.raises(Boom), store.write():
            raise Boom
        assert write_once(store) is kept  # the body rolled back alone; the batch committed
    assert write_once(store) is kept  # a transaction of its own takes the same


def test_no_more_connections_are_kept_than_the_pool_keeps(store: Store) -> None:
    limit = store.engine.pool.size()  # type: ignore[attr-defined]
    with ExitStack() as stack:
        held = [stack.enter_context(store.read()) for _ in range(limit + 3)]
    assert sum(not conn.closed for conn in held) == limit


def test_a_thread_waiting_for_a_pooled_connection_gets_one_given_back(store: Store) -> None:
    pool = store.engine.pool
    most = pool.size() + pool._max_overflow  # type: ignore[attr-defined]
    waited: list[float] = []

    def read() -> None:
        started = time.monotonic()
        with store.read() as conn:
            conn.execute(sa.text("SELECT 1"))
        waited.append(time.monotonic() - started)

    with ExitStack() as stack:
        for _ in range(most):  # every connection the pool may open is in a transaction
            stack.enter_context(store.read())
        waiter = threading.Thread(target=read)
        waiter.start()
        # the waiter waits on the pool's queue (SQLAlchemy's, a condition variable)
        eventually(lambda: pool._pool.not_empty._waiters)  # type: ignore[attr-defined]
        assert waited == []
        stack.close()  # the first connection given back goes to the pool, and to the waiter
        waiter.join(GUARD)
    assert waited and waited[0] < 10  # not the pool's 30 s timeout


def test_a_forked_child_never_uses_or_closes_its_parents_connections(store: Store) -> None:
    parents = write_once(store)
    pid = os.fork()
    if pid == 0:  # the child: SQLAlchemy's recipe for a child, then a transaction of its own
        status = 1
        try:
            store.engine.dispose(close=False)
            child = write_once(store)
            status = 0 if child is not parents and not parents.closed else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert write_once(store) is parents  # still the parent's, and its session still works


def test_a_kept_connection_is_checked_before_each_transaction(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend.name != "postgresql":
        pytest.skip("an embedded SQLite connection has nothing to check")
    store = backend.open()
    pings: list[object] = []
    original = store.engine.dialect.do_ping
    store.engine.dialect.do_ping = lambda dbapi: pings.append(dbapi) or original(dbapi)  # type: ignore[method-assign]
    kept = write_once(store)
    assert write_once(store) is kept and pings == []
    monkeypatch.setattr(liveness, "IDLE_PING_SECONDS", 0.0)
    assert write_once(store) is kept and len(pings) == 1  # idle past the bound: pinged
    kept.connection.dbapi_connection.close()  # type: ignore[union-attr]
    replaced = write_once(store)  # found closed before the transaction, not during it
    assert replaced is not kept and kept.closed
