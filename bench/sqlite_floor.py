"""sqlite_floor: the physical floor — committed transactions per second.

Each transaction inserts one event (a 200-byte JSON payload, keyed by run and sequence
like the store's ``events`` table) and updates one state row, through SQLAlchemy on an
engine made by :func:`openseal.runtime.store.open_store`, so the SQLite settings are exactly
the store's (WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE``, ``busy_timeout``, foreign
keys). Baseline: the same transaction through the bare ``sqlite3`` module with the same
pragmas, which shows what SQLAlchemy costs. PostgreSQL is measured the same way when a
server is reachable.

:func:`measure_floor` is reused by the durable-throughput benchmark, so its ceiling is
measured in the same run as the engine.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bench.harness import Figure, Options, Report, compare, rates, repeat_timed, unavailable
from bench.postgres import scratch_schema
from openseal.runtime.store import Store, open_store

NAME = "sqlite_floor"
PAYLOAD = json.dumps({"type": "state_entered", "detail": "x" * 160}).ljust(200)[:200]

metadata = sa.MetaData()
floor_events = sa.Table(
    "bench_floor_events",
    metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("payload", sa.Text, nullable=False),
)
floor_states = sa.Table(
    "bench_floor_states",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
)


def transactions(options: Options) -> int:
    return options.pick(quick=20, default=500)


def store_transaction(store: Store, run_id: str) -> Callable[[], None]:
    """One commit: append the next event and bump the state row, as a turn would."""
    sequence = itertools.count(1)

    def one() -> None:
        seq = next(sequence)
        with store.write() as conn:
            conn.execute(floor_events.insert().values(run_id=run_id, seq=seq, payload=PAYLOAD))
            conn.execute(floor_states.update().where(floor_states.c.id == run_id).values(seq=seq))

    return one


def measure_store(name: str, store: Store, options: Options, run_id: str = "r") -> Figure:
    metadata.create_all(store.engine)
    with store.write() as conn:
        conn.execute(floor_states.insert().values(id=run_id, seq=0))
    one = store_transaction(store, run_id)
    count = transactions(options)

    def batch() -> None:
        for _ in range(count):
            one()

    return compare(name, "tx/s", rates(count, repeat_timed(batch, repeat=options.repeat)))


@contextlib.contextmanager
def sqlite_store(directory: Path) -> Iterator[Store]:
    directory.mkdir(parents=True, exist_ok=True)
    store = open_store(f"sqlite:///{directory / 'openseal.db'}", home=directory)
    try:
        yield store
    finally:
        store.close()


def measure_floor(options: Options, name: str = "SQLite floor (SQLAlchemy)") -> Figure:
    """Committed event+state transactions per second on the store's SQLite settings."""
    with sqlite_store(options.workdir / "floor") as store:
        return measure_store(name, store, options)


def measure_raw(options: Options) -> Figure:
    """The same transaction through ``sqlite3`` alone, with the store's pragmas."""
    path = options.workdir / "raw.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute(
            "CREATE TABLE e (run_id TEXT, seq INTEGER, payload TEXT, PRIMARY KEY (run_id, seq))"
        )
        conn.execute("CREATE TABLE s (id TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
        conn.execute("INSERT INTO s VALUES ('r', 0)")
        sequence = itertools.count(1)
        count = transactions(options)

        def batch() -> None:
            for _ in range(count):
                seq = next(sequence)
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO e VALUES ('r', ?, ?)", (seq, PAYLOAD))
                conn.execute("UPDATE s SET seq = ? WHERE id = 'r'", (seq,))
                conn.execute("COMMIT")

        stats = rates(count, repeat_timed(batch, repeat=options.repeat))
    finally:
        conn.close()
    return compare("SQLite floor (bare sqlite3)", "tx/s", stats)


def measure_postgres(options: Options, sqlite: Figure) -> Figure:
    name = "PostgreSQL floor (SQLAlchemy)"
    if options.postgres_url is None:
        return unavailable(name, "no PostgreSQL server reachable", "tx/s")
    with scratch_schema(options.postgres_url) as connect_args:
        store = open_store(
            options.postgres_url,
            home=options.workdir / "pg",
            auto_migrate=True,
            connect_args=connect_args,
        )
        try:
            figure = measure_store(name, store, options)
        finally:
            store.close()
    assert figure.stats is not None
    return compare(name, "tx/s", figure.stats, sqlite)


def run(options: Options) -> Report:
    report = Report(NAME)
    report.parameters.update(transactions=transactions(options), payload_bytes=len(PAYLOAD))
    raw = report.add(measure_raw(options))
    floor = measure_floor(options)
    assert floor.stats is not None
    floor = report.add(
        compare(floor.name, "tx/s", floor.stats, raw, note="WAL, synchronous=FULL, BEGIN IMMEDIATE")
    )
    report.add(measure_postgres(options, floor))
    report.parameters["sqlite_settings"] = sqlite_settings(options.workdir / "floor")
    return report


def sqlite_settings(directory: Path) -> dict[str, Any]:
    """What a connection made by the store really runs with (read back, not assumed)."""
    with sqlite_store(directory) as store, store.read() as conn:
        journal = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
        synchronous = conn.exec_driver_sql("PRAGMA synchronous").scalar()
    return {
        "journal_mode": journal,
        "synchronous": {2: "FULL"}.get(int(synchronous or 0), synchronous),
    }
