"""Agent requests with real ``openseal worker`` processes sharing the store (both backends):
the buyer's run and finance's child run are executed by whichever worker claims them, and a
caller canceled while its child run is mid-turn stops both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.providers import read_calls
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import REPO, compile_files, engine, register, scripted
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

BUDGET = REPO / "definitions" / "budget_check"
REQUEST = {"request": {"item": "laptop", "quantity": 10, "cost_center": "CC-7"}}


@pytest.fixture
def budget(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    register(store, compile_files(BUDGET / "hcl"))
    script = json.loads((BUDGET / "scripts" / "budget_check.json").read_text(encoding="utf-8"))
    (tmp_path / "responses.yaml").write_text(json.dumps(script), encoding="utf-8")
    return store


def test_two_workers_run_the_buyer_and_the_finance_child_once_each(
    budget: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        budget, service.StartObjective("buy_with_budget", REQUEST), service.CLI
    ).run
    workers = [
        spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log=f"w{i}")
        for i in range(2)
    ]
    assert [finish(w) for w in workers] == [0, 0]
    done = budget.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED, done
    assert done.context["states"]["budget"] == {"approved": True, "remaining": 38510}
    (request,) = budget.agent_requests.newest(caller_run_id=run.id)
    child = budget.runs.get(str(request.child_run_id))
    assert (request.status, child.status) == (S.COMPLETED, RunStatus.COMPLETED)
    assert child.parent_run_id == run.id
    calls = sorted(c["state"] for c in read_calls(tmp_path / "calls.jsonl"))
    assert calls == ["check", "pick"]  # each model call made once, across both workers


def test_canceling_the_caller_stops_the_child_run_mid_turn(
    budget: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        budget, service.StartObjective("buy_with_budget", REQUEST), service.CLI
    ).run
    (tmp_path / "in-process").mkdir()
    provider, _ = scripted(tmp_path / "in-process", {"pick": [{"output": {"vendor": "n",
                                                               "total": 900}}]})  # fmt: skip
    local = engine(budget, provider)
    while budget.runs.get(run.id).status != RunStatus.WAITING_FOR_AGENT:
        assert local.step() is not None
    (request,) = budget.agent_requests.newest(caller_run_id=run.id)
    child_id = str(request.child_run_id)

    # The worker process takes the child run and stops right after recording its model call.
    fault = {POINT_ENV: "activity.recorded", DIR_ENV: str(tmp_path)}
    worker = spawn(
        backend, tmp_path, "--until-idle", "--poll-interval", "0.05", env=fault, log="child"
    )
    try:
        eventually(lambda: (tmp_path / "activity.recorded.reached").exists(), timeout=60)
        assert budget.runs.get(child_id).status == RunStatus.RUNNING  # in flight, leased
        service.cancel_run(budget, service.RunCommand(run.id, reason="not needed"), service.CLI)
    finally:
        (tmp_path / "activity.recorded.release").write_text("", encoding="utf-8")
        assert finish(worker) == 0
    assert budget.runs.get(run.id).status == RunStatus.CANCELED
    assert budget.agent_requests.get(request.id).status == S.CANCELED
    child = budget.runs.get(child_id)
    assert child.status == RunStatus.CANCELED  # the worker's late write was fenced off
    assert child.context.get("outputs") is None
    canceled = [e for e in budget.runs.events(child_id) if e.type == "run.canceled"]
    assert canceled and canceled[0].payload["reason"] == f"caller run {run.id} was canceled"
