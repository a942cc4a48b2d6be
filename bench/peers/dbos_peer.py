"""DBOS Transact 3.x: a workflow of three steps, run N times, one process, in each
configuration asked for:

* ``c1``: one workflow at a time, each called and finished before the next;
* ``threads``: the workflow called from 8 threads at once;
* ``queue``: N workflows enqueued on a DBOS queue (``worker_concurrency`` 8), then their
  results awaited — the way DBOS's documentation runs many workflows at once;
* ``async``: the same workflow written with ``async def`` (DBOS's asyncio API), 8 awaited at
  once on one event loop.

Each configuration gets a fresh system database: a SQLite file in ``--dir``, or with
``--postgres`` a scratch database on that server (dropped afterwards). Prints one JSON
object: seconds per repetition of N runs by configuration, the version and the pragmas.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version

from common import (
    CONCURRENCY,
    arguments,
    emit,
    pragmas,
    scratch_database,
    server_version,
    timed,
    timed_async,
    timed_threads,
)
from dbos import DBOS

CONFIGURATIONS = ["c1", "threads", "queue", "async"]
QUEUE_POLL_SECONDS = 0.01


@DBOS.step()
def transform(x: int) -> int:
    return x + 1


@DBOS.step()
def act(x: int) -> int:
    return x * 2  # the no-op skill call


@DBOS.step()
def finish(x: int) -> int:
    return x


@DBOS.workflow()
def three_steps(x: int) -> int:
    return finish(act(transform(x)))


@DBOS.step()
async def transform_async(x: int) -> int:
    return x + 1


@DBOS.step()
async def act_async(x: int) -> int:
    return x * 2


@DBOS.step()
async def finish_async(x: int) -> int:
    return x


@DBOS.workflow()
async def three_steps_async(x: int) -> int:
    return await finish_async(await act_async(await transform_async(x)))


@contextmanager
def launched(url: str) -> Iterator[None]:
    DBOS(config={"name": "bench", "system_database_url": url})
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy(destroy_registry=False)


def enqueued(runs: int, start: int) -> float:
    """Seconds for ``runs`` workflows enqueued at once and their results awaited."""
    import time

    queue = DBOS.register_queue(
        "bench", worker_concurrency=CONCURRENCY, polling_interval_sec=QUEUE_POLL_SECONDS
    )
    started = time.perf_counter()
    handles = [queue.enqueue(three_steps, i) for i in range(start, start + runs)]
    for handle in handles:
        handle.get_result()
    return time.perf_counter() - started


def measure(configuration: str, runs: int, warmup: int) -> float:
    """Seconds for ``runs`` workflows in ``configuration`` after ``warmup`` untimed ones."""
    if configuration == "c1":
        timed(warmup, lambda i: three_steps(-1 - i))
        return timed(runs, three_steps)
    if configuration == "threads":
        timed_threads(warmup, three_steps, start=-warmup)
        return timed_threads(runs, three_steps)
    if configuration == "queue":
        enqueued(warmup, -warmup)
        return enqueued(runs, 0)

    async def both() -> float:
        await timed_async(warmup, three_steps_async, start=-warmup)
        return await timed_async(runs, three_steps_async)

    return asyncio.run(both())


def main() -> None:
    args = arguments(__doc__ or "", CONFIGURATIONS)
    logging.disable(logging.WARNING)  # DBOS logs every launch; the JSON must stay alone
    seconds: dict[str, list[float]] = {c: [] for c in args.configurations}
    seen: dict[str, object] = {}
    for rep in range(args.repeat):
        for configuration in args.configurations:
            if args.postgres:
                with scratch_database(args.postgres) as url, launched(url):
                    seconds[configuration].append(measure(configuration, args.runs, args.warmup))
            else:
                path = args.dir / f"dbos-{configuration}-{rep}.sqlite"
                with launched(f"sqlite:///{path}"):
                    seconds[configuration].append(measure(configuration, args.runs, args.warmup))
                seen = pragmas(path)
    database: dict[str, object] = (
        {"postgresql": server_version(args.postgres)} if args.postgres else {"sqlite": seen}
    )
    emit(
        {
            "peer": "dbos",
            "version": version("dbos"),
            "runs": args.runs,
            "steps_per_run": 3,
            "concurrency": CONCURRENCY,
            "queue_polling_interval_sec": QUEUE_POLL_SECONDS,
            "seconds": seconds,
            **database,
        }
    )


if __name__ == "__main__":
    main()
