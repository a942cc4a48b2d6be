"""Objectives' terms: priority orders claims, a success criterion is judged when a run ends,
a failed or unsatisfied run is retried after a backoff (bounded), and operators pause, resume
and retire objectives with their runs. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.errors import OpenSealError
from openseal.runtime import service
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.engine.turns import unmet_success
from openseal.runtime.statuses import ObjectiveStatus, RunStatus
from openseal.runtime.store import InvalidStatus, NewObjective, Objective, Run, Store
from tests.runtime.engine_support import DEFS, compile_files, engine, event_types, register
from tests.runtime.engine_support import scripted as scripted_provider


@pytest.fixture
def terms(store: Store) -> Store:
    register(store, compile_files(DEFS / "objectives.hcl"))
    return store


def start(store: Store, workflow: str, **options: object) -> NewObjective:
    inputs = options.pop("inputs", {})
    assert isinstance(inputs, dict)
    request = service.StartObjective(workflow, inputs, **options)  # type: ignore[arg-type]
    return service.create_objective(store, request, service.CLI)


def drain(store: Store, tmp_path: Path) -> None:
    engine(store, scripted_provider(tmp_path, {})[0]).run_until_idle()


def at(store: Store, moment: datetime) -> None:
    store.clock = lambda: moment


def root_runs(store: Store, objective_id: str) -> list[Run]:
    runs = service.show_objective(store, objective_id)[1]
    return sorted((r for r in runs if r.parent_run_id is None), key=lambda r: r.attempt)


# -- priority --------------------------------------------------------------------------


def test_claims_take_higher_priority_first_then_the_oldest(terms: Store) -> None:
    low = start(terms, "plain", priority=-3).run
    first = start(terms, "plain").run
    high = start(terms, "plain", priority=7).run
    second = start(terms, "plain").run
    scored = start(terms, "scored", inputs={"n": 1}).run  # the workflow's priority: 5
    assert (scored.priority, high.priority, low.priority) == (5, 7, -3)

    order = []
    while (claim := terms.leases.claim("w")) is not None:
        order.append(claim.run_id)
    assert order == [high.id, scored.id, first.id, second.id, low.id]


def test_objectives_record_their_terms(terms: Store) -> None:
    created = start(terms, "scored", inputs={"n": 1}, goal="count past ten")
    objective = created.objective
    assert (objective.goal, objective.owner, objective.priority) == (
        "count past ten",
        "agent.clerk",
        5,
    )
    assert objective.retry == {"max_attempts": 3, "backoff": 30, "max_backoff": 45}
    assert (objective.attempts, created.run.attempt) == (1, 1)
    plain = start(terms, "plain").objective
    assert (plain.priority, plain.retry, plain.goal) == (0, None, None)
    assert terms.objectives.get(objective.id) == objective


def test_the_claim_query_can_use_the_queued_index(terms: Store) -> None:
    """The index made for claiming queued runs exists on both backends."""
    with terms.engine.connect() as conn:
        indexes = {i["name"]: i["column_names"] for i in sa.inspect(conn).get_indexes("runs")}
    assert indexes["ix_runs_claim_queued"] == ["status", "priority", "updated_at"]


# -- success criteria ------------------------------------------------------------------


def test_a_run_whose_output_meets_the_criterion_satisfies_its_objective(
    terms: Store, tmp_path: Path
) -> None:
    created = start(terms, "scored", inputs={"n": 6})
    drain(terms, tmp_path)
    run = terms.runs.get(created.run.id)
    assert run.status == RunStatus.COMPLETED
    assert run.context["outputs"] == {"total": 12}
    assert terms.objectives.get(created.objective.id).status == ObjectiveStatus.SATISFIED
    ended = terms.runs.events(run.id)[-1]  # the run's end says what it did to the objective
    assert (ended.type, ended.payload["objective"]) == ("run.completed", {"status": "satisfied"})
    assert len(root_runs(terms, created.objective.id)) == 1


def test_a_completed_run_can_leave_its_objective_unsatisfied_and_is_retried_after_backoff(
    terms: Store, tmp_path: Path
) -> None:
    now = terms.now()
    at(terms, now)
    created = start(terms, "scored", inputs={"n": 1})
    drain(terms, tmp_path)

    first = terms.runs.get(created.run.id)
    assert first.status == RunStatus.COMPLETED  # the run completed...
    objective = terms.objectives.get(created.objective.id)
    assert (objective.status, objective.attempts) == (ObjectiveStatus.ACTIVE, 2)  # ...unsatisfied
    ended = terms.runs.events(first.id)[-1]
    assert ended.type == "run.completed"
    settled = ended.payload["objective"]
    assert settled["unsatisfied"] == "the success criterion does not hold"
    assert first.context["unsatisfied"] == settled["unsatisfied"]
    assert (settled["status"], settled["retry"]["attempt"]) == ("active", 2)
    second = terms.runs.get(settled["retry"]["run_id"])
    assert (second.status, second.attempt, second.priority) == (RunStatus.SLEEPING, 2, 5)
    assert second.wake_at == now + timedelta(seconds=30)
    [created_event] = terms.runs.events(second.id)
    assert created_event.type == "run.created"
    assert created_event.payload["retry_of"] == first.id

    drain(terms, tmp_path)  # not due yet: nothing runs
    assert terms.runs.get(second.id).status == RunStatus.SLEEPING

    at(terms, now + timedelta(seconds=30))
    drain(terms, tmp_path)
    assert terms.runs.get(second.id).status == RunStatus.COMPLETED
    third = root_runs(terms, created.objective.id)[2]
    # the backoff doubles (60 s) but is capped by max_backoff (45 s)
    assert third.wake_at == now + timedelta(seconds=30 + 45)

    at(terms, now + timedelta(seconds=75))
    drain(terms, tmp_path)
    objective = terms.objectives.get(created.objective.id)
    assert (objective.status, objective.attempts) == (ObjectiveStatus.FAILED, 3)
    assert [r.status for r in root_runs(terms, objective.id)] == [RunStatus.COMPLETED] * 3
    ended = terms.runs.events(third.id)[-1]
    assert ended.type == "run.completed"
    assert ended.payload["objective"]["status"] == "failed"

    at(terms, now + timedelta(days=1))
    drain(terms, tmp_path)  # bounded: no fourth run, ever
    assert len(root_runs(terms, objective.id)) == 3


def test_a_criterion_that_cannot_be_evaluated_is_not_satisfied(terms: Store) -> None:
    active = terms.definitions.active_version("scored")
    assert active is not None
    workflow = WorkflowCatalog(terms).workflow(active.digest)
    # an end that skipped the state computing ``total`` leaves no output to judge
    reason = unmet_success(workflow, {"inputs": {"n": 1}, "outputs": {}})
    assert reason is not None and reason.startswith("the success criterion could not be")
    assert unmet_success(workflow, {"inputs": {"n": 1}, "outputs": {"total": 11}}) is None
    assert unmet_success(workflow, {"inputs": {"n": 1}, "outputs": {"total": 10}}) == (
        "the success criterion does not hold"
    )


# -- retries ---------------------------------------------------------------------------


def test_a_failed_run_is_retried_on_the_version_active_when_the_retry_starts(
    terms: Store, tmp_path: Path
) -> None:
    now = terms.now()
    at(terms, now)
    created = start(terms, "broken")
    drain(terms, tmp_path)
    assert terms.runs.get(created.run.id).status == RunStatus.FAILED
    retry = root_runs(terms, created.objective.id)[1]
    assert retry.wake_at == now + timedelta(seconds=10)
    assert retry.workflow_digest == created.run.workflow_digest

    # a fix is deployed during the backoff: the retry runs it
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    text = (DEFS / "objectives.hcl").read_text(encoding="utf-8")
    (fixed / "objectives.hcl").write_text(
        text.replace('end = "failed"', 'end = "completed"'), encoding="utf-8"
    )
    register(terms, compile_files(fixed / "objectives.hcl"))
    active = terms.definitions.active_version("broken")
    assert active is not None and active.digest != created.run.workflow_digest

    at(terms, now + timedelta(seconds=10))
    drain(terms, tmp_path)
    retried = terms.runs.get(retry.id)
    assert (retried.status, retried.workflow_digest) == (RunStatus.COMPLETED, active.digest)
    assert "run.pinned" in event_types(terms, retried)
    objective = terms.objectives.get(created.objective.id)
    assert (objective.status, objective.attempts) == (ObjectiveStatus.SATISFIED, 2)
    # the first run keeps the version it ran
    assert terms.runs.get(created.run.id).workflow_digest == created.run.workflow_digest


def test_a_retry_is_created_in_the_transaction_that_ends_the_run(terms: Store) -> None:
    """A crash after the retry row is written and before the run's end commits loses both:
    the next claim ends the run again and makes the one retry."""
    created = start(terms, "broken")
    run = terms.runs.get(created.run.id)

    class Crash(Exception):
        pass

    with pytest.raises(Crash), terms.write() as conn:
        settled = terms.objectives.settle(conn, run, RunStatus.FAILED, terms.now())
        assert settled is not None and settled["retry"]["attempt"] == 2
        raise Crash
    assert len(root_runs(terms, created.objective.id)) == 1
    assert terms.objectives.get(created.objective.id).attempts == 1

    with terms.write() as conn:
        terms.objectives.settle(conn, run, RunStatus.FAILED, terms.now())
    with terms.write() as conn:  # the same end settled twice starts no second retry
        assert terms.objectives.settle(conn, run, RunStatus.FAILED, terms.now()) is None
    assert len(root_runs(terms, created.objective.id)) == 2


def test_canceling_the_run_retires_the_objective_without_a_retry(terms: Store) -> None:
    created = start(terms, "broken")
    service.cancel_run(terms, service.RunCommand(created.run.id, "not needed"), service.CLI)
    assert terms.objectives.get(created.objective.id).status == ObjectiveStatus.RETIRED
    ended = terms.runs.events(created.run.id)[-1]
    assert ended.type == "run.canceled"
    assert ended.payload["objective"] == {"status": "retired", "reason": "its run was canceled"}
    assert len(root_runs(terms, created.objective.id)) == 1


# -- pause, resume, retire -------------------------------------------------------------


def steer(store: Store, objective_id: str, status: str) -> Objective:
    request = service.ObjectiveCommand(objective_id, status, "testing")
    return service.steer_objective(store, request, service.CLI)


def activate(store: Store, objective_id: str) -> Objective:
    request = service.ActivateObjective(objective_id, "testing")
    return service.activate_objective(store, request, service.CLI)


def test_pausing_an_objective_pauses_its_runs_and_its_retries(terms: Store, tmp_path: Path) -> None:
    created = start(terms, "broken")
    paused = steer(terms, created.objective.id, "paused")
    assert paused.status == ObjectiveStatus.PAUSED
    assert terms.runs.get(created.run.id).status == RunStatus.PAUSED
    assert event_types(terms, created.run.id)[-2:] == ["objective.paused", "run.paused"]
    drain(terms, tmp_path)
    assert terms.runs.get(created.run.id).status == RunStatus.PAUSED

    resumed = steer(terms, created.objective.id, "active")
    assert resumed.status == ObjectiveStatus.ACTIVE
    assert terms.runs.get(created.run.id).status == RunStatus.QUEUED

    # a run that fails while its objective is paused gets a retry that is paused too
    claim = terms.leases.claim("w")
    assert claim is not None and claim.run_id == created.run.id
    steer(terms, created.objective.id, "paused")
    with terms.write() as conn:
        run = terms.runs.load(conn, created.run.id, lock=True)
        terms.objectives.settle(conn, run, RunStatus.FAILED, terms.now())
    retry = root_runs(terms, created.objective.id)[1]
    assert (retry.status, retry.paused_from_status) == (RunStatus.PAUSED, RunStatus.SLEEPING)
    steer(terms, created.objective.id, "active")
    assert terms.runs.get(retry.id).status == RunStatus.SLEEPING


def test_retiring_an_objective_cancels_its_runs(terms: Store) -> None:
    created = start(terms, "broken")
    retired = steer(terms, created.objective.id, "retired")
    assert retired.status == ObjectiveStatus.RETIRED
    run = terms.runs.get(created.run.id)
    assert run.status == RunStatus.CANCELED
    *_, steered, ended = terms.runs.events(run.id)
    # the operator's change is recorded on the run, then the run is canceled
    assert (steered.type, steered.actor, steered.payload["reason"]) == (
        "objective.retired",
        service.CLI.actor,
        "testing",
    )
    assert ended.type == "run.canceled" and "objective" not in ended.payload  # retired already
    assert steer(terms, created.objective.id, "retired").status == ObjectiveStatus.RETIRED
    for status in ("paused", "active"):
        with pytest.raises(InvalidStatus):
            steer(terms, created.objective.id, status)


def test_steering_checks_the_revision_and_the_status_name(terms: Store) -> None:
    created = start(terms, "plain")
    stale = service.ObjectiveCommand(created.objective.id, "paused", None, expected_revision=7)
    with pytest.raises(OpenSealError) as raised:
        service.steer_objective(terms, stale, service.CLI)
    assert raised.value.code == "stale_revision"
    with pytest.raises(OpenSealError) as raised:
        steer(terms, created.objective.id, "satisfied")
    assert raised.value.code in ("invalid_input", "usage_error")
    with pytest.raises(InvalidStatus):
        steer(terms, created.objective.id, "active")  # it is active already


def test_a_retry_whose_inputs_do_not_fit_the_version_it_starts_on_needs_attention(
    terms: Store, tmp_path: Path
) -> None:
    created = start(terms, "broken")
    drain(terms, tmp_path)
    retry = root_runs(terms, created.objective.id)[1]

    # the version deployed during the backoff wants an input the objective never had
    stricter = tmp_path / "stricter"
    stricter.mkdir()
    text = (DEFS / "objectives.hcl").read_text(encoding="utf-8")
    head = 'workflow "broken" {\n  owner = agent.clerk\n'
    assert head in text
    text = text.replace(head, head + '  input "n" {\n    type = number\n  }\n')
    (stricter / "objectives.hcl").write_text(text, encoding="utf-8")
    register(terms, compile_files(stricter / "objectives.hcl"))

    at(terms, terms.now() + timedelta(seconds=10))
    drain(terms, tmp_path)
    stopped = terms.runs.get(retry.id)
    assert stopped.status == RunStatus.NEEDS_ATTENTION
    assert stopped.waiting is not None
    assert "the objective's inputs do not fit this version" in str(stopped.waiting["reason"])


# -- drafts ----------------------------------------------------------------------------


def test_a_draft_starts_no_run_until_activated_then_its_first_in_that_transaction(
    terms: Store, tmp_path: Path
) -> None:
    created = start(terms, "scored", inputs={"n": 6}, goal="later", draft=True)
    draft = created.objective
    assert created.run is None
    assert (draft.status, draft.attempts, draft.priority) == (ObjectiveStatus.DRAFT, 0, 5)
    drain(terms, tmp_path)
    assert root_runs(terms, draft.id) == [] and terms.leases.claim("w") is None
    drafts = service.list_objectives(terms, status="draft")
    assert [o.id for o in drafts] == [draft.id]
    assert service.list_objectives(terms, status="active") == []
    with pytest.raises(InvalidStatus):
        steer(terms, draft.id, "paused")
    with pytest.raises(InvalidStatus) as resumed:
        steer(terms, draft.id, "active")  # resuming is not activating
    assert resumed.value.code == "objective_draft"
    assert f"activate it with `openseal objectives activate {draft.id}`" in str(resumed.value)
    assert terms.objectives.get(draft.id) == draft and root_runs(terms, draft.id) == []

    activated = activate(terms, draft.id)
    assert (activated.status, activated.attempts) == (ObjectiveStatus.ACTIVE, 1)
    assert activated.revision == draft.revision + 1
    [run] = root_runs(terms, draft.id)
    assert (run.status, run.attempt, run.priority) == (RunStatus.QUEUED, 1, 5)
    [created_event] = terms.runs.events(run.id)
    assert (created_event.type, created_event.actor) == ("run.created", service.CLI.actor)
    assert created_event.payload["activated"] is True
    assert created_event.payload["reason"] == "testing"
    with pytest.raises(InvalidStatus) as again:
        activate(terms, draft.id)  # active already: no second first run
    assert again.value.code == "invalid_status" and "it is active, not a draft" in str(again.value)
    steer(terms, draft.id, "paused")
    with pytest.raises(InvalidStatus) as paused:
        activate(terms, draft.id)  # a paused objective is resumed, never activated
    assert f"resume it with `openseal objectives resume {draft.id}`" in str(paused.value)
    assert [r.status for r in root_runs(terms, draft.id)] == [RunStatus.PAUSED]
    steer(terms, draft.id, "active")
    drain(terms, tmp_path)
    assert terms.objectives.get(draft.id).status == ObjectiveStatus.SATISFIED


def test_a_draft_runs_the_version_active_when_activated_with_its_inputs_checked(
    terms: Store, tmp_path: Path
) -> None:
    draft = start(terms, "broken", draft=True).objective
    text = (DEFS / "objectives.hcl").read_text(encoding="utf-8")
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "objectives.hcl").write_text(
        text.replace('end = "failed"', 'end = "completed"'), encoding="utf-8"
    )
    register(terms, compile_files(fixed / "objectives.hcl"))
    active = terms.definitions.active_version("broken")
    assert active is not None and active.digest != draft.workflow_digest

    # a version that wants an input the draft does not have refuses the activation
    stricter = tmp_path / "stricter"
    stricter.mkdir()
    head = 'workflow "broken" {\n  owner = agent.clerk\n'
    strict = text.replace(head, head + '  input "n" {\n    type = number\n  }\n')
    (stricter / "objectives.hcl").write_text(strict, encoding="utf-8")
    register(terms, compile_files(stricter / "objectives.hcl"))
    with pytest.raises(OpenSealError) as raised:
        activate(terms, draft.id)
    assert raised.value.code == "invalid_input"
    assert terms.objectives.get(draft.id) == draft and root_runs(terms, draft.id) == []

    terms.definitions.activate("broken", active.digest, "user:ops")
    activate(terms, draft.id)
    [run] = root_runs(terms, draft.id)
    assert run.workflow_digest == active.digest
    drain(terms, tmp_path)
    assert terms.objectives.get(draft.id).status == ObjectiveStatus.SATISFIED


def test_a_draft_can_be_retired_and_its_request_key_replayed(terms: Store) -> None:
    created = start(terms, "plain", request_key="k", draft=True)
    again = start(terms, "plain", request_key="k", draft=True)
    assert (again.objective.id, again.run, again.created) == (created.objective.id, None, False)
    with pytest.raises(OpenSealError) as raised:
        start(terms, "plain", request_key="k")  # the same key, not a draft: another request
    assert raised.value.code == "idempotency_conflict"
    activate(terms, created.objective.id)
    replayed = start(terms, "plain", request_key="k", draft=True).run
    assert replayed is not None and replayed.objective_id == created.objective.id

    other = start(terms, "plain", draft=True).objective
    assert steer(terms, other.id, "retired").status == ObjectiveStatus.RETIRED
    with pytest.raises(InvalidStatus):
        activate(terms, other.id)
    assert root_runs(terms, other.id) == []
