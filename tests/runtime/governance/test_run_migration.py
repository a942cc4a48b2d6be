"""Migrating waiting runs as a governed change (invariant 17), on SQLite and PostgreSQL: a run
waiting for approval moves to version 2 when the proposal carrying the migration is
activated; its approval stands when the new version would ask for the same thing, and is
withdrawn and asked again when a tighter constraint changes what it would be asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.governance import flow as gov
from openseal.runtime.governance.migration import Selection
from openseal.runtime.governance.moves import migrate
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import InvalidStatus, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    Flow,
    definitions,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import assert_gap_free
from tests.runtime.migration_support import (
    ALICE,
    BOB,
    CAROL,
    WORKFLOW,
    approve_and_activate,
    compiled,
    migrated_events,
    version_two,
)


def _waiting_run(store: Store, sim: ProcurementSimulator, tmp: Path) -> tuple[Flow, str, str]:
    f = flow(store, sim, tmp)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    return f, run.id, store.runs.get(run.id).workflow_digest


def _approve_and_finish(f: Flow, run_id: str) -> None:
    [pending] = [
        a
        for a in service.list_approvals(f.store, run_id=run_id)
        if a.status == ApprovalStatus.PENDING
    ]
    decision = service.ApprovalDecision(pending.id, "approve", pending.proposal_hash)
    service.decide_approval(f.store, LOCAL, decision, service.CLI)
    f.run_until_idle()
    assert f.store.runs.get(run_id).status == RunStatus.COMPLETED


def test_an_approval_stands_when_the_new_version_asks_for_the_same_order(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run_id, v1 = _waiting_run(store, simulator, tmp_path)
    before = store.runs.get(run_id)
    docs = compiled(version_two(definitions(tmp_path), tmp_path, v1))
    v2 = docs[f"workflow.{WORKFLOW}"].digest.removeprefix("sha256:")

    plan = migrate(store, approve_and_activate_filed(store, docs), ALICE, dry_run=True)
    assert [(m.run_id, m.outcome, m.approval) for m in plan.moves] == [
        (run_id, "would_move", "kept")
    ]
    assert store.runs.get(run_id).workflow_digest == v1  # a dry run moves nothing

    proposal = activate_filed(store)
    moved = store.runs.get(run_id)
    assert moved.workflow_digest == v2 and moved.current_state == "review"
    assert moved.epoch == before.epoch + 1  # fenced: a worker that read it before cannot write
    assert moved.budget_used == before.budget_used  # budgets carry over
    assert moved.waiting == before.waiting  # the same approval, the same hash
    [event] = migrated_events(store, run_id)
    assert event.payload["from"] == {"version": v1, "state": "review"}
    assert event.payload["to"] == {"version": v2, "state": "review"}
    assert event.payload["proposal"] == proposal.id
    assert event.payload["approval"]["outcome"] == "kept"
    events = [e.type for e in gov.proposal_events(store, proposal.id)]
    assert events[-1] == "change_proposal.migrated"
    assert_gap_free(store, run_id)

    again = migrate(store, proposal.id, CAROL)  # applying it again moves nothing twice
    assert [m.outcome for m in again.moves] == []
    assert len(migrated_events(store, run_id)) == 1
    _approve_and_finish(f, run_id)
    [order] = simulator.orders()
    assert order["total"] == 11490.0


def test_a_tighter_constraint_withdraws_the_approval_and_asks_again(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run_id, v1 = _waiting_run(store, simulator, tmp_path)
    [old] = service.list_approvals(store, run_id=run_id)
    folder = version_two(definitions(tmp_path), tmp_path, v1, constraint="args.total <= 12000")
    approve_and_activate(store, compiled(folder))

    moved = store.runs.get(run_id)
    assert moved.status == RunStatus.WAITING_FOR_APPROVAL
    withdrawn = service.show_approval(store, old.id).approval
    assert withdrawn.status == ApprovalStatus.CANCELED
    assert withdrawn.reason is not None and "withdrawn" in withdrawn.reason
    [asked] = [
        a
        for a in service.list_approvals(store, run_id=run_id)
        if a.status == ApprovalStatus.PENDING
    ]
    assert asked.id != old.id and asked.proposal_hash != old.proposal_hash
    assert moved.waiting is not None and moved.waiting["approval_id"] == asked.id
    by_hash = {a.proposal_hash: a.status for a in service.list_actions(store, run_id=run_id)}
    assert by_hash == {
        old.proposal_hash: ActionStatus.CANCELED,
        asked.proposal_hash: ActionStatus.WAITING_FOR_APPROVAL,
    }
    [event] = migrated_events(store, run_id)
    assert event.payload["approval"]["outcome"] == "withdrawn"
    assert event.payload["approval"]["new_approval_id"] == asked.id
    types = [e.type for e in store.runs.events(run_id, limit=1000)]
    assert types.index("approval.withdrawn") < types.index("run.migrated")
    assert_gap_free(store, run_id)
    _approve_and_finish(f, run_id)
    assert len(simulator.orders()) == 1


def test_an_unsettled_action_blocks_the_move_until_it_settles(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run_id, v1 = _waiting_run(store, simulator, tmp_path)
    [action] = service.list_actions(store, run_id=run_id)
    with store.write() as conn:  # as if an earlier attempt had been admitted for dispatch
        store.runs.load(conn, run_id, lock=True)
        store.actions.move(conn, action, ActionStatus.ADMITTED, now=store.now(), actor="system")
    proposal = approve_and_activate_filed(
        store, compiled(version_two(definitions(tmp_path), tmp_path, v1))
    )
    activated = activate_filed(store)
    assert activated.id == proposal
    [move] = migrate(store, proposal, CAROL).moves
    assert move.outcome == "blocked" and "is admitted" in (move.reason or "")
    assert store.runs.get(run_id).workflow_digest == v1
    assert migrated_events(store, run_id) == []


def test_runs_move_only_once_activated_and_only_those_selected(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run_id, v1 = _waiting_run(store, simulator, tmp_path)
    docs = compiled(version_two(definitions(tmp_path), tmp_path, v1))
    proposal = approve_and_activate_filed(store, docs)
    with pytest.raises(InvalidStatus, match="once it is activated"):
        migrate(store, proposal, CAROL)
    elsewhere = migrate(store, proposal, CAROL, dry_run=True, selection=Selection(state="draft"))
    assert [m.outcome for m in elsewhere.moves] == ["stays"]
    other = migrate(store, proposal, CAROL, dry_run=True, selection=Selection(workflow="x"))
    assert other.moves == ()
    [move] = migrate(
        store, proposal, CAROL, dry_run=True, selection=Selection(version=v1[:8])
    ).moves
    assert (move.outcome, move.from_state, move.to_state) == ("would_move", "review", "review")
    assert store.runs.get(run_id).workflow_digest == v1


def test_the_replay_of_a_migrating_proposal_shows_where_each_waiting_run_would_move(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    _, run_id, v1 = _waiting_run(store, simulator, tmp_path)
    folder = version_two(definitions(tmp_path), tmp_path, v1, constraint="args.total <= 12000")
    proposal = approve_and_activate_filed(store, compiled(folder))
    report = service.replay.replay_proposal(store, proposal, service.replay.selection(runs=10))
    [move] = report.to_json()["migration"]
    assert (move["run_id"], move["from_state"], move["to_state"]) == (run_id, "review", "review")
    assert (move["outcome"], move["approval"]) == ("would_move", "withdrawn")
    assert f"{run_id}  review -> " in report.render()
    again = service.replay.replay_proposal(store, proposal, service.replay.selection(runs=10))
    assert again.dumps() == report.dumps()  # deterministic, like the rest of the report
    assert store.runs.get(run_id).workflow_digest == v1  # the review moved nothing


# -- filing and activating in two steps -----------------------------------------------------

_FILED: dict[int, str] = {}


def approve_and_activate_filed(store: Store, documents: dict[str, object]) -> str:
    """File and approve (not activate) ``documents``; the proposal's id."""
    filed = gov.deploy(store, documents, ALICE)  # type: ignore[arg-type]
    assert filed.proposal is not None
    gov.review(store, filed.proposal.id, BOB, "approve")
    gov.decide(store, filed.proposal.id, CAROL, "approve")
    _FILED[id(store)] = filed.proposal.id
    return filed.proposal.id


def activate_filed(store: Store) -> gov.ChangeProposal:
    return gov.activate(store, _FILED[id(store)], CAROL)


def test_a_narrowing_change_that_migrates_runs_is_never_auto_approved(
    store: Store, tmp_path: Path
) -> None:
    from tests.runtime.governance_support import compile_set, governance_yaml, key

    policy = governance_yaml(auto_approve_narrowing=True)
    v1 = compile_set(tmp_path / "v1", max_risk="write", governance=policy)
    first = gov.deploy(store, v1, ALICE).proposal
    assert first is not None
    gov.review(store, first.id, BOB, "approve")
    gov.decide(store, first.id, "user:carol", "approve")
    gov.activate(store, first.id, "user:carol")
    narrowing = compile_set(tmp_path / "v2", max_risk="read", governance=policy)
    assert gov.deploy(store, narrowing, ALICE).proposal.status.value == "approved"  # type: ignore[union-attr]
    # the same narrowing, carrying a migration (the answer workflow has no waiting state)
    folder = tmp_path / "v3"
    compile_set(folder, max_risk="read", governance=policy)
    text = (folder / "defs.hcl").read_text("utf-8")
    block = f'  migrate {{\n    version = "{key(v1, "workflow.answer")[:12]}"\n  }}\n'
    (folder / "defs.hcl").write_text(text.replace('  state "done" {', block + '  state "done" {'))
    migrating = gov.deploy(store, compiled(folder), ALICE).proposal
    assert migrating is not None and not migrating.risk_widening
    assert migrating.status.value == "proposed" and migrating.decision is None
