"""A run woken by what it waited for — a delivered event, its timer, its child runs, its agent
request's answer, an approval's decision — that then finds its workflow's cap full waits in
``waiting_for_capacity`` keeping what woke it: when a slot frees, the turn it starts reads that
wake-up, as it would have without the wait. The event is consumed once, the timer does not
start over, the children are not spawned again, the agent and the approver are not asked again.
Both backends."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Run, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    PICK,
    Flow,
    definitions,
    simulator_fixture,
)
from tests.runtime.engine_support import (
    DEFS,
    assert_conforms,
    compile_files,
    engine,
    event_types,
    register,
)
from tests.runtime.engine_support import scripted as scripted_provider

DONE = {"output": {"done": True}}
QUORUM = 'join       = "quorum"\n      quorum     = 2'


@pytest.fixture
def awaited(store: Store) -> Store:
    register(store, compile_files(DEFS / "capacity_wakeups.hcl"))
    return store


def start(store: Store, workflow: str, inputs: dict[str, Any]) -> Run:
    created = service.create_objective(store, service.StartObjective(workflow, inputs), service.CLI)
    assert created.run is not None
    return created.run


def worker(store: Store, tmp_path: Path) -> Engine:
    return engine(store, scripted_provider(tmp_path, {"work": [DONE] * 10})[0])


def claim(worker: Engine, run: Run) -> Any:
    """Claim ``run``'s next turn without executing it (the claim holds its slots)."""
    found = worker._claim(run.id)
    assert found is not None
    return found


def status(store: Store, run: Run) -> RunStatus:
    return store.runs.get(run.id).status


def capped_kinds(store: Store, tmp_path: Path, workflow: str) -> None:
    """Deploy the engine tests' kinds with a cap of 1 on ``workflow``."""
    head = f'workflow "{workflow}" {{\n  owner = agent.clerk\n'
    text = (DEFS / "kinds.hcl").read_text(encoding="utf-8").replace(QUORUM, 'join       = "all"')
    assert head in text
    path = tmp_path / "kinds.hcl"
    path.write_text(text.replace(head, f"{head}  concurrency = 1\n"), encoding="utf-8")
    register(store, compile_files(path))


def freed(store: Store, w: Engine, run: Run, held: Any) -> Run:
    """``run`` waits for the slot ``held`` holds; the holder's turn ends, a worker runs what is
    runnable, and ``run`` completed: the run as it ended."""
    assert status(store, run) == RunStatus.WAITING_FOR_CAPACITY
    w._run_claim(*held)
    w.run_until_idle()
    done = store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    return done


def test_a_delivered_event_survives_a_wait_for_capacity(awaited: Store, tmp_path: Path) -> None:
    w = worker(awaited, tmp_path)
    b = start(awaited, "awaited", {"mode": "event", "key": "b"})
    w.run_until_idle()
    assert status(awaited, b) == RunStatus.WAITING_FOR_EVENT

    a = start(awaited, "awaited", {"mode": "work"})
    held = claim(w, a)  # a's turn holds the workflow's one slot
    event = awaited.inbound_events.deliver("go", {"key": "b"}, {"answer": 42})
    assert event.consumed_by_run_id == b.id
    claim(w, b)  # woken by the event, b is claimed to continue: the cap is full
    held_back = assert_conforms(awaited.runs.get(b.id))
    assert held_back.status == RunStatus.WAITING_FOR_CAPACITY
    assert service.show_run(awaited, b.id).reason.startswith("capacity: workflow:awaited")

    w._run_claim(*held)  # a ends: its slot frees and b is woken
    assert status(awaited, a) == RunStatus.COMPLETED
    assert status(awaited, b) == RunStatus.QUEUED
    w.run_until_idle()
    done = awaited.runs.get(b.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    assert done.context["states"]["listen"] == {"answer": 42}
    types = event_types(awaited, b)
    assert types.count("wait.event_delivered") == 1
    assert types.count("capacity.waiting") == 1
    consumed = awaited.inbound_events.get(event.id)
    assert consumed is not None and consumed.consumed_by_run_id == b.id


def test_a_run_paused_while_waiting_for_capacity_keeps_its_event(
    awaited: Store, tmp_path: Path
) -> None:
    """A pause ends the capacity wait without a wake-up: the run is queued again on resume,
    and the turn it starts still reads the event that woke it."""
    w = worker(awaited, tmp_path)
    b = start(awaited, "awaited", {"mode": "event", "key": "b"})
    w.run_until_idle()
    a = start(awaited, "awaited", {"mode": "work"})
    held = claim(w, a)
    awaited.inbound_events.deliver("go", {"key": "b"}, {"answer": 7})
    claim(w, b)
    assert status(awaited, b) == RunStatus.WAITING_FOR_CAPACITY
    awaited.runs.pause(b.id, "user:test")
    w._run_claim(*held)  # the slot frees while b is paused: nothing to wake
    awaited.runs.resume(b.id, "user:test")
    assert status(awaited, b) == RunStatus.QUEUED
    w.run_until_idle()
    done = awaited.runs.get(b.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    assert done.context["states"]["listen"] == {"answer": 7}


def test_a_timer_due_does_not_start_over_after_a_wait_for_capacity(
    awaited: Store, tmp_path: Path
) -> None:
    w = worker(awaited, tmp_path)
    b = start(awaited, "awaited", {"mode": "timer"})
    w.run_until_idle()
    assert status(awaited, b) == RunStatus.SLEEPING

    real_clock = awaited.clock
    awaited.clock = lambda: real_clock() + timedelta(hours=1, seconds=1)  # b's timer is due
    a = start(awaited, "awaited", {"mode": "work"})
    held = claim(w, a)
    claim(w, b)
    done = freed(awaited, w, b, held)
    assert done.context["states"]["nap"] == {"waited_seconds": 3600.0}
    assert event_types(awaited, b).count("wait.sleeping") == 1


def test_children_that_completed_are_not_spawned_again_after_a_wait_for_capacity(
    store: Store, tmp_path: Path
) -> None:
    capped_kinds(store, tmp_path, "gather")
    w = worker(store, tmp_path)
    modes = {"modes": ["done", "done", "done"]}

    parent = start(store, "gather", modes)
    w._run_claim(*claim(w, parent))  # it spawns its children and waits for them
    assert status(store, parent) == RunStatus.WAITING_FOR_DEPENDENCY
    other = start(store, "gather", modes)
    held = claim(w, other)  # the other parent's turn holds the one slot
    w.run_until_idle()  # the children complete and wake the parent: the cap is full
    done = freed(store, w, parent, held)
    assert done.context["states"]["fan"]["completed"] == 3
    (group,) = store.dependencies.of_run(parent.id)  # one group: spawned once
    assert len(group.members) == 3


def test_an_agent_requests_answer_survives_a_wait_for_capacity(
    store: Store, tmp_path: Path
) -> None:
    capped_kinds(store, tmp_path, "ask_reviewed")
    provider = scripted_provider(tmp_path, {"helper": [{"output": {"count": 9}}] * 4})[0]
    w = engine(store, provider)

    caller = start(store, "ask_reviewed", {})
    w.run_until_idle()  # the helper answered; the caller waits for the review
    (request,) = store.agent_requests.newest(caller_run_id=caller.id)
    assert status(store, caller) == RunStatus.WAITING_FOR_AGENT
    other = start(store, "ask_reviewed", {})
    held = claim(w, other)  # the other caller's turn holds the one slot
    who = service.Caller("user:ann", local=True)
    step = service.AgentRequestStep(request.id, "review", verdict="accept")
    service.step_agent_request(store, step, who)  # the answer is accepted: the caller wakes
    claim(w, caller)
    done = freed(store, w, caller, held)
    assert done.context["states"]["delegate"] == {"count": 9}
    assert len(store.agent_requests.newest(caller_run_id=caller.id)) == 1  # asked once


def test_an_approval_decided_survives_a_wait_for_capacity(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    folder = definitions(tmp_path)
    workflow = folder / "workflow.hcl"
    text = workflow.read_text(encoding="utf-8")
    capped = text.replace(
        "  start       = state.research\n", "  start       = state.research\n  concurrency = 1\n", 1
    )
    assert capped != text
    workflow.write_text(capped, encoding="utf-8")
    register(store, compile_files(*sorted(folder.glob("*.hcl"))))
    f = Flow(store, simulator, tmp_path, [PICK, PICK])
    w = f.engine()

    run = f.start()
    w.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    [approval] = service.list_approvals(store, run_id=run.id)
    other = f.start()
    held = claim(w, other)  # the other run's turn holds the one slot
    decision = service.ApprovalDecision(approval.id, "approve", approval.proposal_hash)
    service.decide_approval(store, LOCAL, decision, service.CLI)
    claim(w, run)  # woken by the decision: the cap is full
    freed(store, w, run, held)
    assert simulator.order_count() == 1  # the order of the approved run, placed once
    assert len(service.list_approvals(store, run_id=run.id)) == 1  # asked once
