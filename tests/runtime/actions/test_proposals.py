"""Proposals: canonical, content-addressed, stored before the run moves on (invariant 6)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from openseal.canonical import canonical_bytes
from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalError
from openseal.runtime.actions.proposals import MEDIA_TYPE
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import LOCAL, PICK, flow, simulator_fixture  # noqa: F401
from tests.runtime.engine_support import event_types
from tests.runtime.support import new_run

OTHER_PICK = {"vendor": "fabrikam", "unit_price": 1185.0, "currency": "EUR"}


def test_a_proposal_is_stored_as_an_artefact_before_the_run_leaves_the_state(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    view = service.show_approval(store, approval.id).proposal
    proposal, document = view.proposal, view.document
    data = store.artifacts.read(proposal.artifact_digest)
    assert data == canonical_bytes(document)
    assert proposal.hash == hashlib.sha256(data).hexdigest() == approval.proposal_hash
    assert view.verified
    assert document["args"] == {
        "vendor": "northwind", "quantity": 10, "total": 11490, "currency": "EUR",
        "destination": "O4",
    }  # fmt: skip
    assert document["spend"] == {"amount": 11490, "currency": "EUR"}
    assert document["actor"] == "team.procurement.role.buyer"
    assert document["run"] == run.id
    skill = store.definitions.get(proposal.skill_digest.removeprefix("sha256:"))
    assert (document["skill"]["name"], skill.name) == ("submit_purchase_order", proposal.skill)
    # Recorded, with its event, before the run advanced out of `draft`.
    events = [(e.type, e.payload) for e in store.runs.events(run.id, 0, 1000)]
    drafted = next(i for i, (t, _) in enumerate(events) if t == "proposal.drafted")
    left = next(
        i for i, (t, p) in enumerate(events) if t == "state.advanced" and p["from"] == "draft"
    )
    assert drafted < left
    assert events[drafted][1]["hash"] == proposal.hash
    output = store.runs.get(run.id).context["states"]["draft"]["order"]
    assert (output["id"], output["hash"]) == (proposal.id, proposal.hash)
    [action] = service.list_actions(store, run_id=run.id)
    assert action.key == f"{run.id}:{proposal.hash}"


def test_requested_changes_draft_a_new_proposal_with_a_new_hash(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    f.picks = [PICK, OTHER_PICK]
    run = f.start()
    f.run_until_idle()
    [first] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(
            first.id, "request_changes", first.proposal_hash, "prefer the faster vendor"
        ),
        service.CLI,
    )
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    second, old = service.list_approvals(store, run_id=run.id)
    assert old.id == first.id and old.status == ApprovalStatus.CHANGES_REQUESTED
    assert second.proposal_hash != first.proposal_hash
    assert second.status == ApprovalStatus.PENDING
    args = service.show_approval(store, second.id).proposal.document["args"]
    assert (args["vendor"], args["total"]) == ("fabrikam", 11850)
    # What the approver saw the first time does not approve the new content.
    with pytest.raises(ApprovalError) as raised:
        service.decide_approval(
            store,
            LOCAL,
            service.ApprovalDecision(second.id, "approve", first.proposal_hash),
            service.CLI,
        )
    assert raised.value.code == "hash_mismatch"
    statuses = {a.proposal_hash: a.status for a in service.list_actions(store)}
    assert statuses == {
        first.proposal_hash: ActionStatus.DENIED,
        second.proposal_hash: ActionStatus.WAITING_FOR_APPROVAL,
    }
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(second.id, "approve", second.proposal_hash),
        service.CLI,
    )
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    [order] = simulator.orders()
    assert order["vendor"] == "fabrikam"
    assert order["idempotency_key"] == f"{run.id}:{second.proposal_hash}"


def test_an_altered_proposal_after_approval_needs_a_new_approval(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    f.picks = [PICK, OTHER_PICK]
    run = f.start()
    f.run_until_idle()
    [approved] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approved.id, "approve", approved.proposal_hash),
        service.CLI,
    )
    # Before the approved order is sent, an operator sends the run back to research, which
    # drafts different content; then skips the review to the submit state.
    service.pause_run(store, service.RunCommand(run.id), service.CLI)
    service.intervene(
        store, service.Intervention(run.id, "research again", state="research"), service.CLI
    )
    service.resume_run(store, service.RunCommand(run.id), service.CLI)
    engine = f.engine()
    while f.status(run) == RunStatus.QUEUED or f.status(run) == RunStatus.RUNNING:
        engine.step()
        if store.runs.get(run.id).current_state == "review":
            break
    assert store.runs.get(run.id).current_state == "review"
    new_hash = store.runs.get(run.id).context["states"]["draft"]["order"]["hash"]
    assert new_hash != approved.proposal_hash
    service.pause_run(store, service.RunCommand(run.id), service.CLI)
    service.intervene(
        store, service.Intervention(run.id, "skip the review", state="submit"), service.CLI
    )
    service.resume_run(store, service.RunCommand(run.id), service.CLI)
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    assert "has no approval" in str((current.waiting or {}).get("reason"))
    assert simulator.order_count() == 0
    denied = [a for a in service.list_actions(store) if a.proposal_hash == new_hash]
    assert [a.status for a in denied] == [ActionStatus.DENIED]
    assert "action.denied" in event_types(store, run)


def test_an_artefact_and_its_proposal_are_inserted_together_once(store: Store) -> None:
    """``store.insert_new_rows`` inserts the artefact and the proposal (on PostgreSQL by one
    statement) and says which it inserted: the same draft again inserts neither and the
    stored rows are returned, the artefact's bytes checked against the stored ones."""
    run = new_run(store)
    data = canonical_bytes({"args": {"n": 1}})
    digest = hashlib.sha256(data).hexdigest()
    draft = SimpleNamespace(
        name="pick", state="propose", hash=digest, skill="noop", skill_digest="d" * 64,
        actor="agent:test", document={"args": {"n": 1}},
    )  # fmt: skip
    sent: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        sent.append(sql)

    recorded = []
    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        for _ in range(2):
            with store.write() as conn:
                artifact = store.artifacts.new_row(digest, len(data), MEDIA_TYPE, data)
                proposal = store.proposals.new(run.id, draft, digest, store.now())
                rows = [artifact, store.proposals.new_row(proposal)]
                inserted = store.insert_new_rows(conn, rows)
                info = store.artifacts.recorded(conn, artifact, inserted[0])
                recorded.append(
                    (inserted, info, store.proposals.recorded(conn, proposal, inserted[1]))
                )
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    (first, info, (proposal, created)), (again, info_again, (stored, created_again)) = recorded
    assert (first, created, again, created_again) == ([True, True], True, [False, False], False)
    assert stored == proposal and info_again == info
    assert store.artifacts.read(digest) == data
    if store.dialect == "postgresql":
        assert len([s for s in sent if "INSERT" in s]) == 2, sent  # one per draft
