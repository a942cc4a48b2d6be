"""Ordinary database faults drop the turn and retry it; they never park a run (invariant 13).

The fault is real: another connection holds the lock the turn's commit needs (SQLite's write
lock; the run's row lock on PostgreSQL) for longer than the worker's busy or lock timeout.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Claim
from tests.runtime.engine_support import (
    PICK_7,
    assert_gap_free,
    event_types,
    register,
    scripted,
    small_workflow,
)
from tests.runtime.support import Backend, eventually


class Blocker:
    """Holds the lock a run's next commit needs, from another connection, until released."""

    def __init__(self, backend: Backend, store: Store) -> None:
        self.backend = backend
        self.store = store
        self._release: Callable[[], None] | None = None
        self.times = 0

    def hold(self, run_id: str) -> None:
        self.times += 1
        if self.backend.name == "sqlite":
            conn = sqlite3.connect(self.backend.home / "openseal.db", isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            self._release = lambda: (conn.rollback(), conn.close())  # type: ignore[func-returns-value]
            return
        raw = self.store.engine.connect()
        tx = raw.begin()
        raw.execute(sa.text("SELECT id FROM runs WHERE id = :id FOR UPDATE"), {"id": run_id})
        self._release = lambda: (tx.rollback(), raw.close())  # type: ignore[func-returns-value]

    def release(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


def _worker_store(backend: Backend) -> Store:
    """The worker's store gives up on a held lock quickly: the fault happens at once."""
    if backend.name == "sqlite":
        return backend.open(busy_timeout_ms=100)
    options = f"-csearch_path={backend.pg_schema} -clock_timeout=200"
    return backend.open(connect_args={"options": options})


def test_a_lock_timeout_drops_the_turn_and_retries_it_without_an_operator(
    backend: Backend, tmp_path: Path
) -> None:
    store = backend.open()
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    blocker = Blocker(backend, store)

    def hook(point: str, claim: Claim) -> None:
        if point == "turn.before_advance" and blocker.times == 0:
            blocker.hold(claim.run_id)  # the turn's commit will time out
        if point == "turn.faulted":
            blocker.release()

    worker_store = _worker_store(backend)
    worker = Engine(
        worker_store, fixed(provider), worker_id="w1", hook=hook, retry_delay=lambda n: 0.05
    )
    try:

        def waiting() -> Any:
            worker.run_until_idle()
            found = store.runs.get(run.id)
            return found if found.status == RunStatus.WAITING_FOR_EVENT else None

        waited = eventually(waiting)
    finally:
        blocker.release()
    assert blocker.times == 1
    types = event_types(store, run.id)
    assert "run.needs_attention" not in types
    assert "turn.retry_scheduled" in types
    retry = next(
        e for e in store.runs.events(run.id, 0, 10_000) if e.type == "turn.retry_scheduled"
    )
    # The reason names the fault in one line, with no SQL text or parameters.
    assert "SELECT" not in retry.payload["fault"] and "UPDATE" not in retry.payload["fault"]
    assert "[parameters" not in retry.payload["fault"]
    assert waited.budget_used["model_calls"] == 1  # the model result was replayed, not re-asked
    assert waited.waiting is not None and waited.waiting["kind"] == "event"
    assert_gap_free(store, run.id)


def test_a_run_retried_after_a_fault_keeps_what_woke_it(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    Engine(store, fixed(provider), worker_id="w0").run_until_idle()
    store.inbound_events.deliver("ok", {"n": 5}, {"by": "tester"})
    blocker = Blocker(backend, store)

    def hook(point: str, claim: Claim) -> None:
        if point == "turn.before_advance" and blocker.times == 0:
            blocker.hold(claim.run_id)
        if point == "turn.faulted":
            blocker.release()

    worker = Engine(
        _worker_store(backend), fixed(provider), worker_id="w1", hook=hook,
        retry_delay=lambda n: 0.05,
    )  # fmt: skip

    def completed() -> Any:
        worker.run_until_idle()
        found = store.runs.get(run.id)
        return found if found.status == RunStatus.COMPLETED else None

    try:
        done = eventually(completed)
    finally:
        blocker.release()
    assert done.context["states"]["await_ok"] == {"by": "tester"}
    assert "run.needs_attention" not in event_types(store, run.id)
    assert_gap_free(store, run.id)
