"""Silent partitions: a connection that answers nothing and closes nothing (invariant 13).

The fault proxy's blackhole keeps every connection open and forwards nothing either way, on
established connections (mid-stream) and on new ones: what a NAT that forgot a connection or a
vanished primary looks like. Every wait for the server must end by a deadline with an ordinary
fault, and the store must work again once the partition ends.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.store import Claim, GroupCommit, Store, open_store, transient
from openseal.runtime.store.db import listener
from tests.faultproxy import TcpProxy
from tests.runtime.conftest import postgres_url
from tests.runtime.store.db.test_group_commit import together
from tests.runtime.support import eventually, new_run

#: what the stores under test are opened with: short deadlines, so a partition shows in seconds
SHORT = "openseal_reply_timeout=1&connect_timeout=2"
#: generous bound on anything that must end by a deadline of a second or two (a loaded machine)
GUARD = 60.0

Opener = Callable[[str], tuple[TcpProxy, Store]]


@pytest.fixture
def through_proxy(pg_admin: sa.Engine, tmp_path: Path) -> Iterator[tuple[Opener, Store]]:
    """Opens stores whose connections go through a proxy (with the given URL query), and one
    that connects directly, all on one fresh schema."""
    schema_name = f"t_{uuid.uuid4().hex[:16]}"
    with pg_admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema_name}"'))
    search_path = quote(f"-csearch_path={schema_name}")
    direct = open_store(f"{postgres_url()}?options={search_path}", home=tmp_path, auto_migrate=True)
    opened: list[tuple[TcpProxy, Store]] = []

    def open_proxied(query: str) -> tuple[TcpProxy, Store]:
        proxy, url = TcpProxy.for_url(postgres_url())
        store = open_store(f"{url}?options={search_path}&{query}", home=tmp_path)
        opened.append((proxy, store))
        return proxy, store

    try:
        yield open_proxied, direct
    finally:
        for proxy, store in opened:
            proxy.close()
            store.close()
        direct.close()
        with pg_admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema_name}" CASCADE'))


def _failure(call: Callable[[], object]) -> BaseException:
    """What ``call`` raised (it must raise), within the guard (on a thread: without a deadline
    it would wait forever)."""
    raised: list[BaseException] = []

    def attempt() -> None:
        try:
            call()
        except Exception as exc:
            raised.append(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert not thread.is_alive(), "still waiting for the server"
    assert raised, "it did not fail"
    return raised[0]


def test_a_statement_on_a_blackholed_connection_fails_by_the_deadline_and_the_store_recovers(
    through_proxy: tuple[Opener, Store],
) -> None:
    open_proxied, direct = through_proxy
    proxy, store = open_proxied(SHORT)
    new_run(store)  # a connection is open and kept
    proxy.blackhole()
    # mid-stream: the kept connection sends and hears nothing back
    fault = _failure(lambda: new_run(store, n=2))
    assert transient(fault), fault
    assert "no reply from the database server within 1s" in str(fault)
    # a new connection is accepted and never answered: connecting ends by connect_timeout
    fault = _failure(lambda: new_run(store, n=3))
    assert transient(fault), fault
    proxy.blackhole(False)
    run = new_run(store, n=4)
    assert direct.runs.get(run.id).status == "queued"


def test_a_busy_batch_blackholed_mid_stream_lets_every_member_go_with_an_ordinary_fault(
    through_proxy: tuple[Opener, Store],
) -> None:
    open_proxied, direct = through_proxy
    proxy, store = open_proxied(SHORT)
    held = [new_run(store, n=n) for n in range(4)]
    claims = [store.leases.claim("w1") for _ in held]

    def cut(point: str, members: int) -> None:
        if point == "batch.before_commit":
            proxy.blackhole()  # the leader's COMMIT goes nowhere

    group = GroupCommit(store, size=len(held), window=GUARD, hook=cut)

    def member(claim: Claim | None) -> Callable[[], None]:
        def write() -> None:
            assert claim is not None
            with store.leases.fenced(claim) as tx:
                tx.update_run(context={"batched": True})

        return write

    # every member returns (none waits for a commit that will never be answered)
    raised = together(group, [member(claim) for claim in claims])
    assert all(exc is not None and transient(exc) for exc in raised), raised
    proxy.blackhole(False)
    # whether the unanswered COMMIT took effect is unknown to the members (the fenced writes
    # are retried under the same epoch); the store itself works again at once
    assert direct.runs.get(new_run(store, n=9).id).status == "queued"


def test_the_listening_session_is_pinged_and_replaced_when_it_goes_silent(
    through_proxy: tuple[Opener, Store],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(listener, "PING_SECONDS", 0.2)
    open_proxied, direct = through_proxy
    proxy, store = open_proxied(SHORT)
    store.wait_for_work(0)  # listening
    sessions = store._listener.sessions
    proxy.blackhole()
    # the listener's next ping goes unanswered: the session is given up (once the partition
    # ends, the old session would otherwise go on as if nothing happened)
    eventually(lambda: "no reply from the database server" in caplog.text, timeout=GUARD)
    assert store._listener.sessions == sessions
    proxy.blackhole(False)
    eventually(lambda: store._listener.sessions > sessions, timeout=GUARD)
    # and a notification reaches the new session
    mark = store.work_mark()
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(store.wait_for_work(GUARD).woken))
    waiter.start()
    for n in range(100):
        new_run(direct, n=n)
        waiter.join(timeout=0.5)
        if not waiter.is_alive():
            break
    assert waited == [True] and store.work_mark() != mark


def _driver_connections(store: Store) -> list[Any]:
    """The psycopg connections of a pooled transaction's and of the listening session."""
    store.wait_for_work(0)
    pooled = store.engine.raw_connection()
    try:
        listening = eventually(lambda: store._listener.connection, timeout=GUARD)
        return [pooled.driver_connection, listening]
    finally:
        pooled.close()


def _socket_option(conn: Any, level: int, option: int) -> int:
    with socket.socket(fileno=socket.dup(conn.fileno())) as sock:
        return sock.getsockopt(level, option)


def test_every_connection_gets_keepalives_and_user_timeouts_unless_the_url_sets_them(
    through_proxy: tuple[Opener, Store],
) -> None:
    open_proxied, _ = through_proxy
    _, defaults = open_proxied("")
    _, chosen = open_proxied("keepalives_idle=42&tcp_user_timeout=5000&openseal_reply_timeout=7")
    for conn in _driver_connections(defaults):
        assert _socket_option(conn, socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 10
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 5
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 30_000
        assert conn.reply_timeout == 30.0
        assert conn.info.get_parameters()["connect_timeout"] == "10"
    for conn in _driver_connections(chosen):
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 42  # the URL's
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 5  # a default
        assert _socket_option(conn, socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 5000
        assert conn.reply_timeout == 7.0
        # the URL's other parameters are kept too: the search path reached the session
        assert conn.execute("SHOW search_path").fetchone()[0].startswith("t_")


def test_a_reply_timeout_of_zero_means_none_and_a_malformed_one_is_refused(
    through_proxy: tuple[Opener, Store],
) -> None:
    open_proxied, _ = through_proxy
    _, unbounded = open_proxied("openseal_reply_timeout=0")
    pooled = unbounded.engine.raw_connection()
    try:
        assert pooled.driver_connection.reply_timeout is None  # type: ignore[union-attr]
    finally:
        pooled.close()
    with pytest.raises(StoreError) as refused:
        open_proxied("openseal_reply_timeout=soon")
    assert refused.value.code == "database_url"
    assert "openseal_reply_timeout must be a number of seconds" in refused.value.message
