"""Spawned children with real ``openseal worker`` processes sharing the store (both
backends): whichever worker claims a child runs it, the join wakes the parent once, and a
parent canceled with children in flight stops them."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import DEFS, assert_gap_free, compile_files, register
from tests.runtime.support import Backend

pytestmark = pytest.mark.slow


@pytest.fixture
def kinds(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    register(store, compile_files(DEFS / "kinds.hcl"))
    (tmp_path / "responses.yaml").write_text("{}", encoding="utf-8")
    return store


def _workers(backend: Backend, tmp_path: Path, round_: str) -> list[int]:
    workers = [
        spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log=f"{round_}{i}")
        for i in range(2)
    ]
    return [finish(w) for w in workers]


def test_two_workers_run_the_children_and_the_quorum_wakes_the_parent_once(
    kinds: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        kinds, service.StartObjective("gather", {"modes": ["done", "hang", "done"]}), service.CLI
    ).run
    assert _workers(backend, tmp_path, "w") == [0, 0]
    parent = kinds.runs.get(run.id)
    assert (parent.status, parent.current_state) == (RunStatus.COMPLETED, "done")
    assert parent.context["states"]["sum"] == 2
    (group,) = kinds.dependencies.of_run(run.id)
    assert group.status == "done"
    assert [m.status for m in group.members] == ["completed", "canceled", "completed"]
    settled = [e for e in kinds.runs.events(run.id, 0, 1000) if "settled" in e.payload]
    assert len(settled) == 1
    assert_gap_free(kinds, run.id)


def test_a_parent_canceled_with_children_in_flight_stops_them(
    kinds: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        kinds, service.StartObjective("gather", {"modes": ["slow", "hang", "done"]}), service.CLI
    ).run
    assert _workers(backend, tmp_path, "a") == [0, 0]
    assert kinds.runs.get(run.id).status == RunStatus.WAITING_FOR_DEPENDENCY
    service.cancel_run(kinds, service.RunCommand(run.id, reason="not needed"), service.CLI)
    assert _workers(backend, tmp_path, "b") == [0, 0]
    assert kinds.runs.get(run.id).status == RunStatus.CANCELED
    children = {c.id: c.status for c in kinds.dependencies.children_of(run.id)}
    assert sorted(children.values()) == ["canceled", "canceled", "completed"]
    for child_id, status in children.items():
        if status == RunStatus.CANCELED:
            (event,) = [e for e in kinds.runs.events(child_id) if e.type == "run.canceled"]
            assert event.payload["reason"] == f"caller run {run.id} was canceled"
