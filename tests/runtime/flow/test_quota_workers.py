"""Quotas counted exactly by real ``openseal worker`` processes racing on both backends: of 60
objectives in a scope with a quota of 25 runs a day, exactly 25 start — whichever of three
worker processes of two threads claims them — and the rest wait, the quota named; the tokens
the started runs used are the quota's usage to the token."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.support import Backend

pytestmark = pytest.mark.slow

OBJECTIVES = 60
QUOTA = 25
DONE = {"output": {"done": True}, "usage": {"input_tokens": 70, "output_tokens": 7}}


def _used(store: Store, key: str) -> int:
    """A quota's usage over every window (a test that runs over midnight counts both days)."""
    table = schema.quota_usage
    with store.read() as conn:
        total = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(table.c.used), 0)).where(table.c.key == key)
        ).scalar_one()
    return int(total)


def test_worker_processes_start_exactly_the_quota(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    register(store, compile_files(DEFS / "capacity.hcl"))
    (tmp_path / "responses.yaml").write_text(yaml.safe_dump({"work": [DONE]}), encoding="utf-8")
    service.set_scope_quota(store, "acme", "runs", "day", QUOTA)
    service.set_scope_quota(store, "acme", "tokens", "month", 10**9)
    ids = []
    for _ in range(OBJECTIVES):
        request = service.StartObjective("free", {}, scope="acme")
        created = service.create_objective(store, request, service.CLI)
        assert created.run is not None
        ids.append(created.run.id)
    options = ("--until-idle", "--concurrency", "2", "--poll-interval", "0.05")
    workers = [spawn(backend, tmp_path, *options, log=f"w{i}") for i in range(3)]
    assert [finish(worker) for worker in workers] == [0, 0, 0]

    runs = [store.runs.get(run_id) for run_id in ids]
    completed = [r for r in runs if r.status == RunStatus.COMPLETED]
    waiting = [r for r in runs if r.status == RunStatus.WAITING_FOR_CAPACITY]
    assert (len(completed), len(waiting)) == (QUOTA, OBJECTIVES - QUOTA)
    assert all(r.current_state is None for r in waiting)  # none of them started
    assert {r.waiting["waits_for"]["limit"] for r in waiting} == {"quota:acme:runs:day"}
    assert _used(store, "quota:acme:runs:day") == QUOTA
    tokens = sum(int(r.budget_used.get("tokens", 0)) for r in completed)
    assert tokens == QUOTA * 77
    assert _used(store, "quota:acme:tokens:month") == tokens
