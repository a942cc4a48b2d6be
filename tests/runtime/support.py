"""Helpers shared by the store tests."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa

from openseal.runtime.statuses import TERMINAL_RUN_STATUSES
from openseal.runtime.store import Store, open_store
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run

T = TypeVar("T")


WORKFLOW = "procure_laptops"


def graph(*states: str) -> dict[str, Any]:
    """A compiled graph (the shape schemas/compiled-graph.schema.json checks) through
    ``states`` in order: a turn each, the last one the completed end."""
    *turns, end = states
    goal = {"node": "literal", "value": "work"}
    turn = {"agent": "agent.worker", "goal": goal, "skills": [], "output": None,
            "max_model_calls": 5}  # fmt: skip
    return {
        "initial": states[0],
        "states": {
            **{name: {"kind": "turn", "config": dict(turn), "description": None} for name in turns},
            end: {"kind": "end", "config": {"outcome": "completed"}, "description": None},
        },
        "transitions": [
            {"from": source, "to": target, "event": "done", "guard": None, "order": 0}
            for source, target in pairwise(states)
        ],
        "ends": {end: "completed"},
    }


#: a workflow version for tests that need runs, not turns: nothing it pins is deployed
DOCUMENT: dict[str, Any] = {
    "kind": "workflow",
    "name": WORKFLOW,
    "graph": graph("research", "draft", "done"),
}


@dataclass
class Backend:
    """One test database; ``open()`` gives independent Store instances on it."""

    name: str
    url: str | None
    home: Path
    pg_schema: str | None
    stores: list[Store] = field(default_factory=list)

    def open(self, home: Path | None = None, **options: Any) -> Store:
        """A store on this database; ``home`` stands for another host's (PostgreSQL only:
        a SQLite store's database is in its home)."""
        if self.url is None:
            assert home is None or home == self.home, "SQLite has one home per database"
            store = open_store(home=self.home, **options)
        else:
            options.setdefault("auto_migrate", True)
            options.setdefault("connect_args", {"options": f"-csearch_path={self.pg_schema}"})
            store = open_store(self.url, home=home or self.home, **options)
        self.stores.append(store)
        return store

    def close_all(self) -> None:
        for store in self.stores:
            store.close()


def digest_of(document: dict[str, Any]) -> str:
    return hashlib.sha256(repr(sorted(document.items())).encode()).hexdigest()


def deploy(store: Store, document: dict[str, Any] = DOCUMENT) -> str:
    digest = digest_of(document)
    store.definitions.put(digest, "workflow", document["name"], document)
    store.definitions.activate(document["name"], digest, actor="user:test")
    return digest


def new_run(store: Store, **inputs: Any) -> Run:
    if store.definitions.active_version(WORKFLOW) is None:
        deploy(store)
    return store.objectives.create("acme", WORKFLOW, inputs or {"n": 1}, actor="user:test").run


@contextmanager
def statements_sent(store: Store) -> Iterator[list[str]]:
    """The SQL of every statement sent on ``store`` during the block, in order."""
    sent: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        sent.append(sql)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        yield sent
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)


def eventually(check: Callable[[], T | None], *, timeout: float = 20.0) -> T:
    """Poll ``check`` until it returns a truthy value; fail after a generous timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the timeout")
        time.sleep(0.02)


def every_run_ended(store: Store) -> bool:
    """Whether no run of ``store`` is left in a status that is not terminal."""
    runs = schema.runs
    ended = [str(s) for s in TERMINAL_RUN_STATUSES]
    with store.read() as conn:
        live = conn.execute(
            sa.select(sa.func.count()).select_from(runs).where(runs.c.status.not_in(ended))
        ).scalar_one()
    return int(live) == 0
