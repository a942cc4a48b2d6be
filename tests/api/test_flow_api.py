"""Flow control over real HTTP on both backends: an agent paused through the API makes its
turns wait while other work goes on, shows them, and its resume wakes them; scopes' caps are
set, listed, and only narrowed by an operator."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.access import Forbidden, Grant
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime import capacity_skills
from tests.runtime.engine.test_skill_capacity import dies
from tests.runtime.engine.test_skill_capacity import start as start_orders
from tests.runtime.engine_support import DEFS, compile_files, engine, register
from tests.runtime.engine_support import scripted as scripted_provider

DONE = {"output": {"done": True}}


def start(store: Store, workflow: str) -> str:
    created = service.create_objective(store, service.StartObjective(workflow, {}), service.CLI)
    assert created.run is not None
    return created.run.id


def test_an_agent_paused_and_resumed_over_http(serve: Serve, store: Store, tmp_path: Path) -> None:
    register(store, compile_files(DEFS / "capacity.hcl"))
    worker = engine(store, scripted_provider(tmp_path, {"work": [DONE] * 10})[0])
    with serve(external_workers=True).client() as client:
        assert client.get("/agents/clerk").json()["agent"]["paused"] is False
        paused = client.post("/agents/clerk/pause")
        assert paused.status_code == 200, paused.text
        assert paused.json()["agent"]["paused"] is True
        waits, goes = start(store, "capped"), start(store, "carried")
        worker.run_until_idle()
        assert store.runs.get(goes).status == RunStatus.COMPLETED  # agent.porter's run
        assert store.runs.get(waits).status == RunStatus.WAITING_FOR_CAPACITY
        shown = client.get("/agents/clerk").json()["agent"]
        assert [r["run_id"] for r in shown["runs"]] == [waits]
        assert shown["runs"][0]["waiting"] == "capacity: agent:clerk is paused"
        assert shown["waiting_for_capacity"] == [waits]
        run = client.get(f"/runs/{waits}").json()
        assert run["run"]["status"] == "waiting_for_capacity"
        resumed = client.post("/agents/clerk/resume").json()["agent"]
        assert resumed["paused"] is False and resumed["waiting_for_capacity"] == []
        assert store.runs.get(waits).status == RunStatus.QUEUED
        worker.run_until_idle()
        assert store.runs.get(waits).status == RunStatus.COMPLETED
        assert client.get("/teams/nobody").status_code == 404
        assert_error(client.post("/agents/nobody/pause"), 404, "not_found")

        set_to = client.put("/scopes/default/limit", json={"max": 2})
        assert set_to.status_code == 200, set_to.text
        assert set_to.json()["limit"]["max_slots"] == 2
        listed = client.get("/scopes/limits").json()["limits"]
        assert [(s["scope"], s["max_slots"]) for s in listed] == [("default", 2)]
        assert_error(client.put("/scopes/default/limit", json={"max": -1}), 422, "invalid_request")
        removed = client.put("/scopes/default/limit", json={"max": None}).json()["limit"]
        assert removed["max_slots"] is None


def test_only_an_admin_widens_a_scopes_cap(store: Store) -> None:
    operator = service.Caller("user:olga", False, Grant.of(["operator"], ["default"]))
    admin = service.Caller("user:ada", False, Grant.of(["admin"], ["*"]))
    assert service.set_scope_limit(store, "default", 3, operator).max_slots == 3
    assert service.set_scope_limit(store, "default", 2, operator).max_slots == 2  # narrowing
    for widening in (5, None):
        with pytest.raises(Forbidden):
            service.set_scope_limit(store, "default", widening, operator)
    assert service.set_scope_limit(store, "default", None, admin).max_slots is None
    with pytest.raises(Forbidden):  # pausing reaches every scope
        register(store, compile_files(DEFS / "capacity.hcl"))
        service.set_actor_paused(store, "agent", "clerk", True, operator)


def test_an_agents_calls_in_flight_over_http(
    serve: Serve, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GET /agents/{agent}`` lists the calls its runs have in flight to capped skills, each
    holding a slot of ``skill:<name>``, with the action and the run."""
    monkeypatch.setenv(capacity_skills.LOG_ENV, str(tmp_path / "destination.jsonl"))
    register(store, compile_files(DEFS / "skill_capacity.hcl"))
    run = start_orders(store, "orders", 1)
    dies(store, run)
    with store.read() as conn:
        action = store.actions.of_run(conn, run.id)[0]
    with serve(external_workers=True).client() as client:
        shown = client.get("/agents/clerk")
        assert shown.status_code == 200, shown.text
        calls = shown.json()["agent"]["calls"]
    assert [(c["key"], c["action_id"], c["run_id"], c["scope"]) for c in calls] == [
        ("skill:submit", action.id, run.id, "default")
    ]
