"""Agent requests end to end in the engine: the callee side runs as a child run, its output
completes the request, and the caller continues — or leaves by ``declined``, ``failed`` or
``expired``; clarifications and reviews reopen the work. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from openseal.errors import OpenSealError
from openseal.runtime import service
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.engine.delegation import DelegationFailed, callee_agent
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import read_calls
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import AgentRequest, Store
from openseal.runtime.store.tables.records import Run
from tests.runtime.engine_support import (
    DEFS,
    REPO,
    assert_conforms,
    compile_files,
    engine,
    register,
    scripted,
)

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

BUDGET = REPO / "definitions" / "budget_check" / "hcl"
PICK = {"output": {"vendor": "northwind", "total": 11490}}
CHECK = {"output": {"approved": True, "remaining": 38510}}
REQUEST = {"request": {"item": "laptop", "quantity": 10, "cost_center": "CC-7"}}


@pytest.fixture
def budget(store: Store) -> Store:
    register(store, compile_files(BUDGET))
    return store


@pytest.fixture
def kinds(store: Store) -> Store:
    register(store, compile_files(DEFS / "kinds.hcl"))
    return store


def _start(store: Store, workflow: str, inputs: dict[str, object]) -> Run:
    return service.create_objective(
        store, service.StartObjective(workflow, inputs), service.CLI
    ).run


def _request_of(store: Store, run: Run) -> AgentRequest:
    (request,) = store.agent_requests.newest(caller_run_id=run.id)
    return request


def _step(store: Store, request: AgentRequest, step: str, **fields: object) -> AgentRequest:
    who = service.Caller("user:ann", local=True)
    return service.step_agent_request(
        store, service.AgentRequestStep(request.id, step, **fields), who
    )


def _until_delegated(store: Store, worker: Engine, run: Run) -> AgentRequest:
    """Step the engine until ``run`` waits for its agent request; the request."""
    for _ in range(20):
        if store.runs.get(run.id).status == RunStatus.WAITING_FOR_AGENT:
            return _request_of(store, run)
        assert worker.step() is not None
    raise AssertionError("the run never delegated")


def test_the_finance_child_run_confirms_the_budget_and_the_buyer_continues(
    budget: Store, tmp_path: Path
) -> None:
    provider, calls = scripted(tmp_path, {"pick": [PICK], "check": [CHECK]})
    run = _start(budget, "buy_with_budget", REQUEST)
    engine(budget, provider).run_until_idle()

    done = budget.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    assert done.current_state == "done"
    assert done.context["states"]["budget"] == {"approved": True, "remaining": 38510}
    request = _request_of(budget, run)
    assert request.status == S.COMPLETED
    assert request.callee == "agent.finance"
    assert request.request["input"] == {"amount": 11490, "cost_center": "CC-7"}
    child = budget.runs.get(str(request.child_run_id))
    assert (child.parent_run_id, child.status) == (run.id, RunStatus.COMPLETED)
    # pinned like any run: the version of confirm_budget active when the child started
    active = budget.definitions.active_version("confirm_budget")
    assert active is not None and child.workflow_digest == active.digest
    assert child.context["inputs"] == {"amount": 11490, "cost_center": "CC-7"}
    assert [c["state"] for c in read_calls(calls)] == ["pick", "check"]
    steps = [e.type for e in budget.runs.events(run.id) if e.type.startswith("agent_request.")]
    assert steps == [
        "agent_request.requested",
        "agent_request.accepted",
        "agent_request.completed",
    ]
    # the objective is settled by the caller, not by the child run
    assert budget.objectives.get(run.objective_id).status == "satisfied"


def test_a_declined_request_takes_the_declined_transition(budget: Store, tmp_path: Path) -> None:
    provider, _ = scripted(tmp_path, {"pick": [PICK], "check": [CHECK]})
    run = _start(budget, "buy_with_budget", REQUEST)
    worker = engine(budget, provider)
    request = _until_delegated(budget, worker, run)  # the child run has not run yet
    declined = _step(budget, request, "decline", reason="cost center CC-7 is frozen")
    assert declined.status == S.DECLINED
    worker.run_until_idle()
    stopped = budget.runs.get(run.id)
    assert (stopped.status, stopped.current_state) == (RunStatus.FAILED, "stopped")
    assert stopped.context["states"]["budget"] == {"declined": "cost center CC-7 is frozen"}
    assert budget.runs.get(str(request.child_run_id)).status == RunStatus.CANCELED
    declined_event = [e for e in budget.runs.events(run.id) if e.type == "agent_request.declined"]
    assert declined_event[0].actor == "user:ann"


def test_a_clarification_round_trip_restarts_the_work_with_the_answer(
    kinds: Store, tmp_path: Path
) -> None:
    provider, calls = scripted(tmp_path, {"helper": [{"output": {"count": 10}}]})
    run = _start(kinds, "ask_helper", {})
    worker = engine(kinds, provider)
    request = _until_delegated(kinds, worker, run)
    first_child = str(request.child_run_id)

    asked = _step(kinds, request, "ask", text="Which office?")
    assert (asked.status, asked.child_run_id) == (S.CLARIFICATION_REQUESTED, None)
    assert kinds.runs.get(first_child).status == RunStatus.CANCELED  # stopped until answered
    assert kinds.runs.get(run.id).wake_at is not None  # the caller is woken for the question
    woken = worker.run_until_idle()
    assert len(woken) == 1  # one look at the question, then it waits (no wake-up loop)
    assert assert_conforms(kinds.runs.get(run.id)).status == RunStatus.WAITING_FOR_AGENT

    answered = service.step_agent_request(
        kinds,
        service.AgentRequestStep(request.id, "clarify", value="O4"),
        service.Caller("user:bob", local=True),
    )
    assert answered.status == S.ACCEPTED
    assert answered.child_run_id not in (None, first_child)
    worker.run_until_idle()
    done = kinds.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    assert done.context["states"]["delegate"] == {"count": 10}
    (call,) = read_calls(calls)  # the first child never reached its model call
    second = kinds.runs.get(str(answered.child_run_id))
    assert 'Q: Which office?\nA: "O4"' in second.context["inputs"]["goal"]
    assert call["state"] == "work"
    rounds = kinds.agent_requests.get(request.id).clarification
    assert rounds[0]["asked_by"] == "user:ann" and rounds[0]["answered_by"] == "user:bob"


def test_a_review_sent_back_once_reopens_the_request(kinds: Store, tmp_path: Path) -> None:
    provider, _ = scripted(
        tmp_path, {"helper": [{"output": {"count": 9}}], "helper#2": [{"output": {"count": 10}}]}
    )
    run = _start(kinds, "ask_reviewed", {})
    worker = engine(kinds, provider)
    worker.run_until_idle()
    request = _request_of(kinds, run)
    assert (request.status, request.response) == (S.COMPLETED, {"count": 9})
    assert kinds.runs.get(run.id).status == RunStatus.WAITING_FOR_AGENT  # review = true

    back = _step(kinds, request, "review", verdict="send_back", reason="count the spares too")
    assert back.status == S.ACCEPTED
    second_child = str(back.child_run_id)
    assert second_child != request.child_run_id
    worker.run_until_idle()
    again = kinds.agent_requests.get(request.id)
    assert again.status == S.COMPLETED
    assert (
        "Sent back by the reviewer: count the spares too"
        in (kinds.runs.get(second_child).context["inputs"]["goal"])
    )
    assert kinds.runs.get(run.id).status == RunStatus.WAITING_FOR_AGENT

    _step(kinds, again, "review", verdict="accept")
    worker.run_until_idle()
    done = kinds.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    assert done.context["states"]["delegate"] == again.response


def test_an_unanswered_request_expires_at_its_deadline(kinds: Store, tmp_path: Path) -> None:
    provider, _ = scripted(tmp_path, {})
    run = _start(kinds, "ask_reviewed", {})
    worker = engine(kinds, provider)
    request = _until_delegated(kinds, worker, run)
    _step(kinds, request, "ask", text="Which office?")  # nobody answers
    waiting = kinds.runs.get(run.id)
    real_clock = kinds.clock
    kinds.clock = lambda: real_clock() + timedelta(hours=1, seconds=1)
    worker.run_until_idle()
    late = kinds.runs.get(run.id)
    assert (late.status, late.current_state) == (RunStatus.FAILED, "late")
    assert kinds.agent_requests.get(request.id).status == S.EXPIRED
    assert waiting.status == RunStatus.WAITING_FOR_AGENT


def test_canceling_the_caller_cancels_its_request_and_the_child_in_flight(
    budget: Store, tmp_path: Path
) -> None:
    provider, _ = scripted(tmp_path, {"pick": [PICK], "check": [CHECK]})
    run = _start(budget, "buy_with_budget", REQUEST)
    worker = engine(budget, provider)
    request = _until_delegated(budget, worker, run)
    child = str(request.child_run_id)
    assert budget.runs.get(child).status == RunStatus.QUEUED
    service.cancel_run(budget, service.RunCommand(run.id, reason="not needed"), service.CLI)
    assert budget.agent_requests.get(request.id).status == S.CANCELED
    assert budget.runs.get(child).status == RunStatus.CANCELED
    worker.run_until_idle()
    assert budget.runs.get(run.id).status == RunStatus.CANCELED


def test_a_completion_of_the_wrong_type_fails_the_request(kinds: Store, tmp_path: Path) -> None:
    provider, _ = scripted(tmp_path, {})
    run = _start(kinds, "ask_helper", {})
    worker = engine(kinds, provider)
    request = _until_delegated(kinds, worker, run)
    with pytest.raises(OpenSealError) as refused:
        _step(kinds, request, "complete", value={"count": "ten"})
    assert refused.value.code == "completion_mismatch"
    assert kinds.agent_requests.get(request.id).status == S.ACCEPTED
    _step(kinds, request, "complete", value={"count": 12})
    worker.run_until_idle()
    assert kinds.runs.get(run.id).context["states"]["delegate"] == {"count": 12}


def test_a_callee_whose_workflow_is_not_deployed_fails_the_request(
    store: Store, tmp_path: Path
) -> None:
    documents = [d for d in compile_files(BUDGET) if d.name != "confirm_budget"]
    register(store, documents)
    provider, _ = scripted(tmp_path, {"pick": [PICK]})
    run = _start(store, "buy_with_budget", REQUEST)
    engine(store, provider).run_until_idle()
    stopped = store.runs.get(run.id)
    assert (stopped.status, stopped.current_state) == (RunStatus.FAILED, "stopped")
    request = _request_of(store, run)
    assert request.status == S.FAILED and request.child_run_id is None
    assert "no workflow 'confirm_budget' is deployed" in request.response["error"]


def test_a_team_takes_requests_through_its_first_role(store: Store) -> None:
    documents = compile_files(*sorted((REPO / "definitions" / "procurement" / "hcl").glob("*.hcl")))
    register(store, documents)
    version = store.definitions.active_version("procure_laptops")
    assert version is not None
    workflow = WorkflowCatalog(store).workflow(version.digest)
    digests = {f"{d.kind}.{d.name}": d.digest for d in documents}
    assert callee_agent(workflow, "team.procurement") == ("agent.buyer", digests["agent.buyer"])
    assert callee_agent(workflow, "team.procurement.role.researcher") == (
        "agent.researcher", digests["agent.researcher"],
    )  # fmt: skip
    with pytest.raises(DelegationFailed, match="does not name an agent"):
        callee_agent(workflow, "skill.search_vendors")
