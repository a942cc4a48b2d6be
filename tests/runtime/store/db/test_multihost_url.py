"""``OPENSEAL_DATABASE_URL`` naming several PostgreSQL servers, as libpq writes it."""

from __future__ import annotations

import socket
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from openseal.runtime.store.db.multihost import hosts_as_query
from tests.runtime.support import Backend, new_run


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            "postgresql+psycopg://u:p%40ss@db1:5432,db2:5433/app?target_session_attrs=read-write",
            "postgresql+psycopg://u:p%40ss@/app?target_session_attrs=read-write"
            "&host=db1:5432&host=db2:5433",
        ),
        ("postgresql+psycopg://db1,db2/app", "postgresql+psycopg:///app?host=db1&host=db2"),
        ("postgresql+psycopg://u@db1:5432/app?x=1", "postgresql+psycopg://u@db1:5432/app?x=1"),
        ("sqlite:///home/openseal.db", "sqlite:///home/openseal.db"),
    ],
)
def test_a_list_of_servers_becomes_host_parameters(given: str, expected: str) -> None:
    assert hosts_as_query(given) == expected


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_store_connects_to_the_first_server_that_takes_writes(backend: Backend) -> None:
    """The first server listed is down: libpq goes on to the next, for the pool's connections
    and the listener's alike; the deadlines still apply to each."""
    if backend.url is None:
        pytest.skip("a list of servers is PostgreSQL's")
    from openseal.runtime.store import open_store

    url = sa.make_url(backend.url)
    port = url.port or 5432
    user = quote(url.username or "", safe="") + (
        f":{quote(url.password, safe='')}" if url.password else ""
    )
    servers = f"127.0.0.1:{_closed_port()},{url.host}:{port}"
    options = quote(f"-csearch_path={backend.pg_schema}")
    store = open_store(
        f"{url.drivername}://{user}@{servers}/{url.database}"
        f"?target_session_attrs=read-write&connect_timeout=5&options={options}",
        home=backend.home, auto_migrate=True,
    )  # fmt: skip
    try:
        assert store.health.readiness().ok
        run = new_run(store)
        assert store.runs.get(run.id).id == run.id
        with store.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw.info.port == port  # type: ignore[union-attr]
            assert raw.reply_timeout == 30.0  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_list_of_servers_reads_plainly_in_messages(tmp_path: object) -> None:
    from openseal.errors import StoreError
    from openseal.runtime.store import open_store

    closed = [_closed_port(), _closed_port()]
    url = f"postgresql+psycopg://u:secret@127.0.0.1:{closed[0]},127.0.0.1:{closed[1]}/db"
    with pytest.raises(StoreError) as raised:
        open_store(f"{url}?connect_timeout=2")
    message = str(raised.value)
    assert raised.value.code == "unavailable"
    assert f"host=127.0.0.1:{closed[0]}&host=127.0.0.1:{closed[1]}" in message
    assert "secret" not in message
