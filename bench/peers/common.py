"""What every peer script shares: arguments, scratch databases, SQLite pragma probing, the
configurations it is driven in and the JSON it prints.

Runs inside the peers' own virtual environment, so it imports nothing from openseal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

#: how many workflows run at once in the concurrent configurations (openseal's figure uses 8)
CONCURRENCY = 8


def arguments(description: str, configurations: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--runs", type=int, default=1000, help="workflow runs per repetition")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions")
    parser.add_argument("--warmup", type=int, default=20, help="untimed runs before timing")
    parser.add_argument("--dir", type=Path, required=True, help="where the databases go")
    parser.add_argument(
        "--configurations",
        default=configurations[0],
        help=f"comma-separated, each timed in turn: {', '.join(configurations)}",
    )
    parser.add_argument(
        "--postgres",
        default=None,
        help="a PostgreSQL server URL (postgresql://user@host:port/db): each configuration "
        "gets a scratch database on it, dropped afterwards; without it, SQLite files in --dir",
    )
    args = parser.parse_args()
    args.configurations = args.configurations.split(",")
    unknown = [c for c in args.configurations if c not in configurations]
    if unknown:
        parser.error(f"unknown configuration {', '.join(unknown)}")
    return args


@contextmanager
def scratch_database(server: str) -> Iterator[str]:
    """A fresh database on ``server`` for one configuration, dropped afterwards: its URL."""
    import psycopg

    name = f"peer_{uuid.uuid4().hex[:12]}"
    base, _, _ = server.rpartition("/")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_version(server: str) -> str:
    import psycopg

    with psycopg.connect(server) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return str(row[0]) if row else "?"


def pragmas(path: Path) -> dict[str, object]:
    """The journal mode and synchronous level a fresh connection sees (what durability means)."""
    with sqlite3.connect(path) as conn:
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
    levels = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": journal, "synchronous_default": levels.get(synchronous, synchronous)}


def timed(runs: int, one: Callable[[int], object]) -> float:
    """Seconds for ``runs`` calls of ``one``, one after the other."""
    started = time.perf_counter()
    for i in range(runs):
        one(i)
    return time.perf_counter() - started


def timed_threads(runs: int, one: Callable[[int], object], start: int = 0) -> float:
    """Seconds for ``runs`` calls of ``one`` from :data:`CONCURRENCY` threads, each taking the
    next as it finishes one (the pool is started before the clock)."""
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(lambda i: None, range(CONCURRENCY)))  # the threads exist
        started = time.perf_counter()
        for result in pool.map(one, range(start, start + runs)):
            del result
        return time.perf_counter() - started


async def timed_async(runs: int, one: Callable[[int], Awaitable[object]], start: int = 0) -> float:
    """Seconds for ``runs`` awaits of ``one`` on one event loop, :data:`CONCURRENCY` at once."""
    numbers = iter(range(start, start + runs))

    async def lane() -> None:
        for i in numbers:
            await one(i)

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(CONCURRENCY)))
    return time.perf_counter() - started


def emit(report: dict[str, object]) -> None:
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
