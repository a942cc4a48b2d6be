"""A PostgreSQL transaction's BEGIN goes in one round trip with its first statement
(pg_begin.py), and the transaction is the same as with psycopg's own BEGIN."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from openseal.runtime.store import Store
from openseal.runtime.store.db import fastsql
from tests.runtime.support import Backend

PROBE = sa.text("INSERT INTO probe (n) VALUES (:n)")
COUNT = sa.text("SELECT count(*) FROM probe")


class Boom(Exception):
    pass


@pytest.fixture
def pg(backend: Backend) -> Store:
    if backend.name != "postgresql":
        pytest.skip("SQLite's BEGIN is a function call, not a round trip")
    store = backend.open()
    with store.write() as conn:
        conn.execute(sa.text("CREATE TABLE probe (n integer PRIMARY KEY)"))
    return store


@contextmanager
def traced(conn: sa.Connection, path: Path) -> Iterator[list[str]]:
    """The frontend messages libpq sends on ``conn``'s connection during the block."""
    pgconn = conn.connection.driver_connection.pgconn  # type: ignore[union-attr]
    sent: list[str] = []
    with path.open("w") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield sent
        finally:
            pgconn.untrace()
    lines = [line.split("\t") for line in path.read_text().splitlines()]
    sent.extend(fields[2].split(" ")[0] for fields in lines if fields[0] == "F")


def test_begin_goes_in_the_first_statement_s_round_trip(pg: Store, tmp_path: Path) -> None:
    with pg.write() as kept:  # the connection the next transaction is given
        pass
    with traced(kept, tmp_path / "trace") as sent, pg.write() as conn:
        assert conn is kept
        conn.execute(PROBE, {"n": 1})
        conn.execute(PROBE, {"n": 2})
    # Each Sync or Query is a round trip: BEGIN with the first INSERT, the second, COMMIT.
    round_trips = [message for message in sent if message in ("Sync", "Query")]
    assert round_trips == ["Sync", "Sync", "Query"], sent
    with pg.read() as conn:
        assert conn.execute(COUNT).scalar() == 2


def test_the_first_statement_s_lock_is_held_to_commit(pg: Store, backend: Backend) -> None:
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 1})
    other = backend.open()
    lock = sa.text("SELECT n FROM probe WHERE n = 1 FOR UPDATE NOWAIT")
    with pg.write() as conn:
        conn.execute(sa.text("SELECT n FROM probe WHERE n = 1 FOR UPDATE"))
        refused = pytest.raises(sa.exc.OperationalError, match="could not obtain lock")
        with refused, other.write() as elsewhere:
            elsewhere.execute(lock)
    with other.write() as elsewhere:
        assert elsewhere.execute(lock).scalar() == 1


def test_a_failed_transaction_leaves_nothing(pg: Store) -> None:
    with pytest.raises(sa.exc.IntegrityError), pg.write() as conn:
        conn.execute(PROBE, {"n": 1})
        conn.execute(PROBE, {"n": 1})
    with pytest.raises(Boom), pg.write() as conn:
        conn.execute(PROBE, {"n": 2})
        raise Boom
    with pytest.raises(sa.exc.IntegrityError), pg.write() as conn:
        conn.execute(PROBE, {"n": None})  # the first statement fails
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 3})
    with pg.read() as conn:
        assert conn.execute(sa.text("SELECT array_agg(n) FROM probe")).scalar() == [3]


def test_a_connection_asked_for_autocommit_opens_no_block(pg: Store, tmp_path: Path) -> None:
    with pg.engine.connect() as conn:
        auto = conn.execution_options(isolation_level="AUTOCOMMIT")
        auto.exec_driver_sql("VACUUM ANALYZE probe")  # refused inside a transaction block
        auto.execute(PROBE, {"n": 1})
    # the connection, back in the pool, begins its next transaction as the store's others do
    with pg.write() as kept:
        pass
    with traced(kept, tmp_path / "trace") as sent, pg.write() as conn:
        assert conn is kept
        conn.execute(PROBE, {"n": 2})
    assert [m for m in sent if m in ("Sync", "Query")] == ["Sync", "Query"], sent
    with pg.read() as conn:
        assert conn.execute(COUNT).scalar() == 2


def test_a_statement_of_many_parameters_is_parsed_once(pg: Store) -> None:
    # The statement writing a run with its first turn and events has about 80 parameters;
    # psycopg would parse such a statement's placeholders again on every execution.
    names = [f"p{i}" for i in range(120)]
    wide = sa.text(f"SELECT {' + '.join(f'CAST(:{n} AS integer)' for n in names)}")
    values = dict.fromkeys(names, 1)
    parsed = psycopg._queries._query2pg  # the cached parse
    with pg.read() as conn:
        assert conn.execute(wide, values).scalar() == len(names)
        before = parsed.cache_info()
        assert conn.execute(wide, values).scalar() == len(names)
        after = parsed.cache_info()
    assert after.hits == before.hits + 1
    assert after.misses == before.misses


def savepoint(conn: sa.Connection, name: str) -> None:
    """A bare savepoint, as group commit and fenced writes open theirs."""
    conn.exec_driver_sql(f"SAVEPOINT {name}")


def test_a_savepoint_goes_in_the_next_statement_s_round_trip(pg: Store, tmp_path: Path) -> None:
    with pg.write() as kept:
        pass
    with traced(kept, tmp_path / "trace") as sent, pg.write() as conn:
        assert conn is kept
        savepoint(conn, "first")
        conn.execute(PROBE, {"n": 1})
        savepoint(conn, "second")
        savepoint(conn, "third")
        conn.execute(PROBE, {"n": 2})
    # BEGIN and the first savepoint with the first INSERT, two savepoints with the second
    round_trips = [message for message in sent if message in ("Sync", "Query")]
    assert round_trips == ["Sync", "Sync", "Query"], sent
    with pg.read() as conn:
        assert conn.execute(COUNT).scalar() == 2


def test_rolling_back_to_a_savepoint_owed_undoes_what_came_after_it(pg: Store) -> None:
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 1})
        savepoint(conn, "member")
        conn.execute(PROBE, {"n": 2})
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT member")
        savepoint(conn, "later")  # owed when the rollback to it comes: sent with it
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT later")
        conn.execute(PROBE, {"n": 3})
    with pg.read() as conn:
        assert conn.execute(sa.text("SELECT array_agg(n ORDER BY n) FROM probe")).scalar() == [1, 3]


def test_a_failed_statement_after_a_savepoint_owed_is_undone_alone(pg: Store) -> None:
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 1})
        savepoint(conn, "member")
        with pytest.raises(sa.exc.IntegrityError):
            conn.execute(PROBE, {"n": 1})
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT member")
        conn.execute(PROBE, {"n": 2})
    with pg.read() as conn:
        assert conn.execute(sa.text("SELECT array_agg(n ORDER BY n) FROM probe")).scalar() == [1, 2]


def test_a_savepoint_owed_at_commit_is_forgotten(pg: Store) -> None:
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 1})
        savepoint(conn, "unused")
    refused = pytest.raises(sa.exc.DBAPIError, match='savepoint "unused" does not exist')
    with refused, pg.write() as conn:  # the next transaction owes nothing of it
        conn.execute(PROBE, {"n": 2})
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT unused")
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 3})
    with pg.read() as conn:
        assert conn.execute(sa.text("SELECT array_agg(n ORDER BY n) FROM probe")).scalar() == [1, 3]


def test_a_savepoint_outside_a_block_is_refused_at_once(pg: Store) -> None:
    with pg.engine.connect() as conn:
        auto = conn.execution_options(isolation_level="AUTOCOMMIT")
        with pytest.raises(sa.exc.DBAPIError, match="transaction blocks"):
            savepoint(auto, "nowhere")


def deferred(conn: sa.Connection, n: int | None) -> None:
    """An INSERT nobody reads the result of, sent with the next statement."""
    fastsql.execute_with_next(conn, PROBE, {"n": n})


def test_a_write_asked_to_wait_goes_in_the_next_statement_s_round_trip(
    pg: Store, tmp_path: Path
) -> None:
    with pg.write() as kept:
        pass
    with traced(kept, tmp_path / "trace") as sent, pg.write() as conn:
        assert conn is kept
        deferred(conn, 1)
        savepoint(conn, "member")
        assert conn.execute(COUNT).scalar() == 1  # BEGIN, the INSERT, the savepoint with it
        deferred(conn, 2)
    # the second INSERT has nothing after it: sent on its own before the commit
    round_trips = [message for message in sent if message in ("Sync", "Query")]
    assert round_trips == ["Sync", "Sync", "Query"], sent
    with pg.read() as conn:
        assert conn.execute(COUNT).scalar() == 2


def test_a_write_that_waited_and_failed_fails_the_statement_it_went_with(pg: Store) -> None:
    with pytest.raises(sa.exc.IntegrityError), pg.write() as conn:
        deferred(conn, None)  # refused by the server, once it is sent
        conn.execute(PROBE, {"n": 1})
    with pytest.raises(sa.exc.IntegrityError), pg.write() as conn:
        conn.execute(PROBE, {"n": 2})
        deferred(conn, 2)  # the commit sends it: the commit fails
    with pg.read() as conn:
        assert conn.execute(COUNT).scalar() == 0


def test_a_write_that_waited_is_undone_by_a_rollback_to_a_savepoint_before_it(pg: Store) -> None:
    with pg.write() as conn:
        savepoint(conn, "member")
        deferred(conn, 1)
        conn.exec_driver_sql("ROLLBACK TO SAVEPOINT member")  # sent with it, after it
        deferred(conn, 2)
    with pytest.raises(Boom), pg.write() as conn:
        deferred(conn, 3)
        raise Boom  # rolled back: never sent
    with pg.write() as conn:
        conn.execute(PROBE, {"n": 3})
    with pg.read() as conn:
        assert conn.execute(sa.text("SELECT array_agg(n ORDER BY n) FROM probe")).scalar() == [2, 3]


def test_a_write_asked_to_wait_outside_a_block_is_sent_at_once(pg: Store) -> None:
    with pg.engine.connect() as conn:
        auto = conn.execution_options(isolation_level="AUTOCOMMIT")
        deferred(auto, 1)
        assert auto.execute(COUNT).scalar() == 1
