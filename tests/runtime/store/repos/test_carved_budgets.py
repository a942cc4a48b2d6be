"""A ``delegate`` with a ``budget`` carves it out of the caller run's: held when the request
is made, the child run's limit, charged to the caller at what the child used and the rest
released when the request closes, released on the caller's cancellation; a caller that
cannot afford it stops for its budget. Pure functions, then on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.engine.cascade import cancel_run
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import AgentRequest, InvalidStatus, Store
from openseal.runtime.store.repos.carved_budgets import (
    carve,
    carved_child_budget,
    charge,
    release_carved,
)
from openseal.runtime.store.tables.records import Run
from tests.runtime.engine_support import DEFS, compile_files, engine, register, scripted

COUNT = [{"output": {"count": 10}}]
OK = [{"output": {"ok": True}}]
RESPONSES = {"plan": OK, "first": COUNT, "second": COUNT, "check": OK}


def test_a_hold_is_charged_what_the_child_used_and_released_once() -> None:
    used = carve({"model_calls": 1}, "r1", {"model_calls": 3, "tokens": 100})
    held = {"model_calls": 3, "tokens": 100}
    assert used == {"model_calls": 4, "tokens": 100, "delegated": {"r1": held}}
    assert carved_child_budget(used, "r1") == {
        "carved": {"agent_request_id": "r1", "limit": {"model_calls": 3, "tokens": 100}}
    }
    assert carved_child_budget(used, "r2") == {}
    # a child used 2 calls and, its tokens known only afterwards, 130 tokens
    used = charge(used, "r1", {"model_calls": 2, "tokens": 130})
    assert used["delegated"] == {"r1": {"model_calls": 1, "tokens": 0}}
    assert (used["model_calls"], used["tokens"]) == (4, 130)
    used, released = release_carved(used, "r1")
    assert (used, released) == ({"model_calls": 3, "tokens": 130}, {"model_calls": 1})
    assert release_carved(used, "r1") == (used, None)  # nothing held any more
    # a child that ends after its request closed is charged in full
    assert charge(used, "r1", {"model_calls": 1}) == {"model_calls": 4, "tokens": 130}


@pytest.fixture
def carved(store: Store, tmp_path: Path) -> Store:
    return _deployed(store, tmp_path, carved=3)


def _deployed(store: Store, tmp_path: Path, *, carved: int) -> Store:
    text = (DEFS / "carved.hcl.in").read_text(encoding="utf-8").replace("CARVED", str(carved))
    path = tmp_path / "carved.hcl"
    path.write_text(text, encoding="utf-8")
    register(store, compile_files(path))
    return store


def _start(store: Store) -> Run:
    return service.create_objective(store, service.StartObjective("carve", {}), service.CLI).run


def _until_delegated(store: Store, worker: Engine, run: Run) -> AgentRequest:
    for _ in range(20):
        if store.runs.get(run.id).status == RunStatus.WAITING_FOR_AGENT:
            (request,) = store.agent_requests.newest(caller_run_id=run.id)
            return request
        assert worker.step() is not None
    raise AssertionError("the run never delegated")


def _events(store: Store, run_id: str, kind: str) -> list[dict[str, object]]:
    return [e.payload for e in store.runs.events(run_id, 0, 10_000) if e.type == kind]


def _charged(store: Store, run_id: str) -> list[dict[str, object]]:
    """The caller's ``budget.spent`` events for what a child run used."""
    return [e for e in _events(store, run_id, "budget.spent") if "child_run_id" in e]


def test_the_request_holds_its_budget_and_the_child_gets_it_as_its_limit(
    carved: Store, tmp_path: Path
) -> None:
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(carved)
    request = _until_delegated(carved, engine(carved, provider), run)
    caller = carved.runs.get(run.id)
    # the plan's model call, and the three held for the request
    assert caller.budget_used["model_calls"] == 4
    assert caller.budget_used["delegated"] == {request.id: {"model_calls": 3}}
    (asked,) = _events(carved, run.id, "agent_request.requested")
    assert asked["budget"] == {"model_calls": 3}
    assert request.request["budget"] == {"model_calls": 3}
    child = carved.runs.get(str(request.child_run_id))
    assert child.budget_used == {
        "carved": {"agent_request_id": request.id, "limit": {"model_calls": 3}}
    }
    assert _events(carved, child.id, "run.created")[0]["budget"] == {"model_calls": 3}


def test_the_caller_is_charged_what_the_child_used_and_the_rest_is_released(
    carved: Store, tmp_path: Path
) -> None:
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(carved)
    engine(carved, provider).run_until_idle()
    done = carved.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    (request,) = carved.agent_requests.newest(caller_run_id=run.id)
    child = carved.runs.get(str(request.child_run_id))
    assert child.budget_used["model_calls"] == 2
    (spent,) = _charged(carved, run.id)
    assert spent == {"agent_request_id": request.id, "child_run_id": child.id,
                     "spent": {"model_calls": 2}}  # fmt: skip
    (completed,) = _events(carved, run.id, "agent_request.completed")
    assert completed["budget_released"] == {"model_calls": 1}
    # plan 1 + the child's 2 + check 1; nothing is held any more
    assert done.budget_used["model_calls"] == 4
    assert "delegated" not in done.budget_used
    # the child's end settled it once: ending it again is refused and changes nothing
    with pytest.raises(InvalidStatus):
        cancel_run(carved, child.id, "user:ann", "again")
    assert carved.runs.get(run.id).budget_used == done.budget_used


def test_a_child_over_its_carved_budget_stops_and_its_use_is_charged_when_it_ends(
    store: Store, tmp_path: Path
) -> None:
    _deployed(store, tmp_path, carved=1)
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(store)
    worker = engine(store, provider)
    request = _until_delegated(store, worker, run)
    worker.run_until_idle()
    child = store.runs.get(str(request.child_run_id))
    assert child.status == RunStatus.NEEDS_ATTENTION
    assert child.waiting is not None and child.waiting["kind"] == "attention"
    assert child.waiting["reason"] == "budget exhausted: model_calls would reach 2 of 1"
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_AGENT
    # an operator gives the child up: the request fails, the caller pays the call it made
    service.cancel_run(store, service.RunCommand(child.id, reason="over budget"), service.CLI)
    worker.run_until_idle()
    stopped = store.runs.get(run.id)
    assert (stopped.status, stopped.current_state) == (RunStatus.FAILED, "stopped")
    assert store.agent_requests.get(request.id).status == S.FAILED
    assert stopped.budget_used["model_calls"] == 2  # plan 1 + the child's 1
    assert "delegated" not in stopped.budget_used


def test_canceling_the_caller_releases_what_it_holds_for_its_request(
    carved: Store, tmp_path: Path
) -> None:
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(carved)
    worker = engine(carved, provider)
    request = _until_delegated(carved, worker, run)
    service.cancel_run(carved, service.RunCommand(run.id, reason="not needed"), service.CLI)
    canceled = carved.runs.get(run.id)
    assert canceled.budget_used == {"model_calls": 1, "turns": 2}
    (event,) = _events(carved, run.id, "run.canceled")
    assert event["budgets_released"] == {request.id: {"model_calls": 3}}
    # its child, canceled before it called anything, charges nothing
    assert carved.runs.get(str(request.child_run_id)).status == RunStatus.CANCELED
    assert _charged(carved, run.id) == []
    worker.run_until_idle()
    assert carved.runs.get(run.id).budget_used == canceled.budget_used


def test_a_caller_that_cannot_afford_the_budget_stops_without_asking(
    store: Store, tmp_path: Path
) -> None:
    _deployed(store, tmp_path, carved=5)  # fits the workflow's 5, but the plan used one
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(store)
    engine(store, provider).run_until_idle()
    stopped = store.runs.get(run.id)
    assert (stopped.status, stopped.current_state) == (RunStatus.NEEDS_ATTENTION, "ask")
    reason = "budget exhausted: model_calls would reach 6 of 5 (the budget of the request in ask)"
    assert stopped.waiting is not None and stopped.waiting["reason"] == reason
    assert [e["reason"] for e in _events(store, run.id, "run.budget_exhausted")] == [reason]
    assert store.agent_requests.newest(caller_run_id=run.id) == []
    assert stopped.budget_used == {"model_calls": 1, "turns": 2}


def test_a_reopened_request_starts_its_new_child_with_what_is_still_held(
    carved: Store, tmp_path: Path
) -> None:
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(carved)
    worker = engine(carved, provider, max_turns_per_claim=1)
    request = _until_delegated(carved, worker, run)
    first = str(request.child_run_id)
    assert worker.step(first) is not None  # its first turn: one model call
    assert carved.runs.get(first).budget_used["model_calls"] == 1
    who = service.Caller("user:ann", local=True)
    step = service.AgentRequestStep
    service.step_agent_request(carved, step(request.id, "ask", text="Which office?"), who)
    assert carved.runs.get(first).status == RunStatus.CANCELED
    assert carved.runs.get(run.id).budget_used["delegated"] == {request.id: {"model_calls": 2}}
    answered = service.step_agent_request(carved, step(request.id, "clarify", value="O4"), who)
    second = carved.runs.get(str(answered.child_run_id))
    assert second.budget_used["carved"]["limit"] == {"model_calls": 2}
    worker.run_until_idle()
    done = carved.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    # plan 1 + the first child's 1 + the second's 2 + check 1
    assert done.budget_used["model_calls"] == 5
    assert "delegated" not in done.budget_used
    charged = [e["spent"] for e in _charged(carved, run.id)]
    assert charged == [{"model_calls": 1}, {"model_calls": 2}]


def test_a_declined_request_releases_its_hold_and_its_child_is_charged_after(
    store: Store, tmp_path: Path
) -> None:
    _deployed(store, tmp_path, carved=2)
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(store)
    worker = engine(store, provider, max_turns_per_claim=1)
    request = _until_delegated(store, worker, run)
    assert worker.step(str(request.child_run_id)) is not None  # one model call
    who = service.Caller("user:ann", local=True)
    service.step_agent_request(
        store, service.AgentRequestStep(request.id, "decline", reason="no time"), who
    )
    (declined,) = _events(store, run.id, "agent_request.declined")
    assert declined["budget_released"] == {"model_calls": 2}
    # the child, stopped after the decline, is charged the call it made
    assert store.runs.get(str(request.child_run_id)).status == RunStatus.CANCELED
    assert [e["spent"] for e in _charged(store, run.id)] == [{"model_calls": 1}]
    assert store.runs.get(run.id).budget_used == {"model_calls": 2, "turns": 2}


def test_a_request_that_fails_at_once_gives_its_hold_back_in_the_same_transaction(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "carved.hcl"
    path.write_text((DEFS / "carved.hcl.in").read_text(encoding="utf-8").replace("CARVED", "3"))
    register(store, [d for d in compile_files(path) if d.name != "count_twice"])
    provider, _ = scripted(tmp_path, RESPONSES)
    run = _start(store)
    engine(store, provider).run_until_idle()
    stopped = store.runs.get(run.id)
    assert (stopped.status, stopped.current_state) == (RunStatus.FAILED, "stopped")
    (failed,) = _events(store, run.id, "agent_request.failed")
    assert failed["budget_released"] == {"model_calls": 3}
    assert "no workflow 'count_twice' is deployed" in str(failed["reason"])
    assert stopped.budget_used == {"model_calls": 1, "turns": 2}
