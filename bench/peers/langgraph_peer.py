"""LangGraph with the SQLite checkpointer: a graph of three nodes, run N times, one process.

``durability="sync"`` makes LangGraph persist each step's checkpoint before the next step
starts, which is the guarantee openseal gives; the default ("async") overlaps them.
Prints one JSON object like the other peers.
"""

from __future__ import annotations

import sqlite3
from importlib.metadata import version
from typing import TypedDict

from common import arguments, emit, pragmas, timed
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    x: int


def transform(state: State) -> State:
    return {"x": state["x"] + 1}


def act(state: State) -> State:
    return {"x": state["x"] * 2}  # the no-op skill call


def finish(state: State) -> State:
    return {"x": state["x"]}


def graph(saver: SqliteSaver):  # type: ignore[no-untyped-def]
    builder = StateGraph(State)
    builder.add_node("transform", transform)
    builder.add_node("act", act)
    builder.add_node("finish", finish)
    builder.add_edge(START, "transform")
    builder.add_edge("transform", "act")
    builder.add_edge("act", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


def main() -> None:
    args = arguments(__doc__ or "")
    seconds: list[float] = []
    seen: dict[str, object] = {}
    for rep in range(args.repeat):
        path = args.dir / f"langgraph-{rep}.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        app = graph(SqliteSaver(conn))

        def one(i: int, app=app, rep=rep) -> object:  # type: ignore[no-untyped-def]
            config = {"configurable": {"thread_id": f"{rep}-{i}"}}
            return app.invoke({"x": i}, config, durability="sync")

        timed(args.warmup, lambda i, one=one: one(-1 - i))
        seconds.append(timed(args.runs, one))
        conn.close()
        seen = pragmas(path)
    emit(
        {
            "peer": "langgraph",
            "version": version("langgraph"),
            "checkpointer": version("langgraph-checkpoint-sqlite"),
            "durability": "sync",
            "runs": args.runs,
            "steps_per_run": 3,
            "seconds": seconds,
            "sqlite": seen,
        }
    )


if __name__ == "__main__":
    main()
