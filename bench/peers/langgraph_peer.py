"""LangGraph with a checkpointer: a graph of three nodes, run N times, one process, in each
configuration asked for:

* ``c1``: one ``invoke`` at a time;
* ``threads``: ``invoke`` from 8 threads at once;
* ``batch``: ``batch`` of all N inputs with ``max_concurrency`` 8 (LangGraph's own way of
  running many inputs at once);
* ``async``: ``ainvoke`` with the asynchronous checkpointer, 8 awaited at once on one event
  loop.

On SQLite (``SqliteSaver``, ``AsyncSqliteSaver``), a fresh file in ``--dir`` per
configuration; with ``--postgres``, ``PostgresSaver`` (``AsyncPostgresSaver``) on a pool of 8
connections to a scratch database on that server, dropped afterwards.

``durability="sync"`` makes LangGraph persist each step's checkpoint before the next step
starts, which is the guarantee openseal gives; the default ("async") overlaps them.
Prints one JSON object like the other peers.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypedDict

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
from langgraph.graph import END, START, StateGraph

CONFIGURATIONS = ["c1", "threads", "batch", "async"]


class State(TypedDict):
    x: int


def transform(state: State) -> State:
    return {"x": state["x"] + 1}


def act(state: State) -> State:
    return {"x": state["x"] * 2}  # the no-op skill call


def finish(state: State) -> State:
    return {"x": state["x"]}


def graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("transform", transform)
    builder.add_node("act", act)
    builder.add_node("finish", finish)
    builder.add_edge(START, "transform")
    builder.add_edge("transform", "act")
    builder.add_edge("act", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


def config(i: int) -> dict[str, Any]:
    return {"configurable": {"thread_id": str(i)}}


@contextmanager
def sync_saver(path: Path, url: str | None) -> Iterator[Any]:
    if url is None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with ConnectionPool(url, min_size=1, max_size=CONCURRENCY, kwargs=kwargs) as pool:
        saver = PostgresSaver(pool)  # type: ignore[arg-type]
        saver.setup()
        yield saver


def measure_sync(configuration: str, app: Any, runs: int, warmup: int) -> float:
    def one(i: int) -> object:
        return app.invoke({"x": i}, config(i), durability="sync")

    if configuration == "c1":
        timed(warmup, lambda i: one(-1 - i))
        return timed(runs, one)
    if configuration == "threads":
        timed_threads(warmup, one, start=-warmup)
        return timed_threads(runs, one)

    def batch(numbers: range) -> float:
        import time

        inputs = [{"x": i} for i in numbers]
        configs = [{**config(i), "max_concurrency": CONCURRENCY} for i in numbers]
        started = time.perf_counter()
        app.batch(inputs, configs, durability="sync")
        return time.perf_counter() - started

    batch(range(-warmup, 0))
    return batch(range(runs))


async def measure_async(path: Path, url: str | None, runs: int, warmup: int) -> float:
    async def timed_with(saver: Any) -> float:
        app = graph(saver)

        async def one(i: int) -> object:
            return await app.ainvoke({"x": i}, config(i), durability="sync")

        await timed_async(warmup, one, start=-warmup)
        return await timed_async(runs, one)

    if url is None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            return await timed_with(saver)
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(
        url, min_size=1, max_size=CONCURRENCY, kwargs=kwargs, open=False
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()
        return await timed_with(saver)


def measure(configuration: str, path: Path, url: str | None, runs: int, warmup: int) -> float:
    if configuration == "async":
        return asyncio.run(measure_async(path, url, runs, warmup))
    with sync_saver(path, url) as saver:
        return measure_sync(configuration, graph(saver), runs, warmup)


def main() -> None:
    args = arguments(__doc__ or "", CONFIGURATIONS)
    seconds: dict[str, list[float]] = {c: [] for c in args.configurations}
    seen: dict[str, object] = {}
    for rep in range(args.repeat):
        for configuration in args.configurations:
            path = args.dir / f"langgraph-{configuration}-{rep}.sqlite"
            if args.postgres:
                with scratch_database(args.postgres) as url:
                    seconds[configuration].append(
                        measure(configuration, path, url, args.runs, args.warmup)
                    )
            else:
                seconds[configuration].append(
                    measure(configuration, path, None, args.runs, args.warmup)
                )
                seen = pragmas(path)
    if args.postgres:
        database: dict[str, object] = {
            "postgresql": server_version(args.postgres),
            "checkpointer": version("langgraph-checkpoint-postgres"),
        }
    else:
        database = {"sqlite": seen, "checkpointer": version("langgraph-checkpoint-sqlite")}
    emit(
        {
            "peer": "langgraph",
            "version": version("langgraph"),
            "durability": "sync",
            "runs": args.runs,
            "steps_per_run": 3,
            "concurrency": CONCURRENCY,
            "seconds": seconds,
            **database,
        }
    )


if __name__ == "__main__":
    main()
