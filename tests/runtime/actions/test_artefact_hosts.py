"""Proposals on several hosts, and the content that is approved and sent (invariants 6, 7, 16).

With PostgreSQL, "another host" is a second store on the same database with its own home
directory: nothing it needs may be on the first host's disk. SQLite has one host, so there
both stores share the home. Against the procurement simulator over real HTTP.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalError
from openseal.runtime.actions.dispatch import dispatch, target_for
from openseal.runtime.actions.proposal_check import ProposalUnverified
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Approval, Store
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    PICK,
    Flow,
    context_file,
    flow,
    simulator_fixture,
)
from tests.runtime.store.repos.test_artifacts import corrupt
from tests.runtime.support import Backend


def other_host(backend: Backend, tmp: Path) -> Store:
    """A store as a second host sees it: same database, its own home (PostgreSQL)."""
    if backend.name == "sqlite":
        return backend.open()
    return backend.open(home=tmp / "host-b")


def waiting_for_approval(f: Flow) -> tuple[Run, Approval]:
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    [approval] = service.list_approvals(f.store, run_id=run.id)
    return run, approval


def files_under(home: Path) -> list[Path]:
    return [p for p in (home / "artifacts").rglob("*") if p.is_file()]


def make_unverifiable(store: Store, digest: str) -> None:
    """The artefact's stored bytes no longer hash to its digest."""
    corrupt(store, digest, b'{"tampered": true}')


def change_row(store: Store, proposal_id: str, **args: Any) -> None:
    """Change the proposal's database row after approval (its artefact is untouched)."""
    table = schema.proposals
    with store.engine.begin() as conn:
        document = conn.execute(
            sa.select(table.c.document).where(table.c.id == proposal_id)
        ).scalar_one()
        document = {**document, "args": {**document["args"], **args}}
        if "total" in args:
            document["spend"] = {**document["spend"], "amount": args["total"]}
        conn.execute(sa.update(table).where(table.c.id == proposal_id).values(document=document))


def test_a_proposal_drafted_on_one_host_is_verified_approved_and_sent_from_another(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    host_a = backend.open()
    f = flow(host_a, simulator, tmp_path)
    run, approval = waiting_for_approval(f)
    host_b = other_host(backend, tmp_path)
    if backend.name == "postgresql":
        assert host_b.home != host_a.home
    assert files_under(host_a.home) == []  # the bytes are in the database, on no disk
    view = service.show_approval(host_b, approval.id).proposal
    assert view.verified and view.problem is None
    assert view.document["args"]["total"] == 11490
    decided = service.decide_approval(
        host_b,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    assert decided.approval.status == ApprovalStatus.APPROVED
    Flow(host_b, simulator, tmp_path, [PICK]).run_until_idle()  # a worker on host B
    assert host_b.runs.get(run.id).status == RunStatus.COMPLETED
    [order] = simulator.orders()
    assert order["total"] == 11490


def test_an_unverifiable_proposal_says_why_and_cannot_be_approved(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    host_a = backend.open()
    f = flow(host_a, simulator, tmp_path)
    run, approval = waiting_for_approval(f)
    make_unverifiable(host_a, approval.proposal_hash)
    host_b = other_host(backend, tmp_path)
    view = service.show_approval(host_b, approval.id).proposal
    assert not view.verified
    assert view.problem is not None and "corrupt" in view.problem
    with pytest.raises(ApprovalError) as refused:
        service.decide_approval(
            host_b,
            LOCAL,
            service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
            service.CLI,
        )
    assert refused.value.code == "proposal_unverified"
    assert "cannot be approved" in refused.value.message and "corrupt" in refused.value.message
    still = service.show_approval(host_b, approval.id).approval
    assert still.status == ApprovalStatus.PENDING
    # Rejecting what cannot be verified is allowed.
    service.decide_approval(
        host_b,
        LOCAL,
        service.ApprovalDecision(
            approval.id, "reject", approval.proposal_hash, "the proposal cannot be verified"
        ),
        service.CLI,
    )
    Flow(host_b, simulator, tmp_path, [PICK]).run_until_idle()
    assert host_b.runs.get(run.id).status == RunStatus.CANCELED
    assert simulator.order_count() == 0


def test_a_proposal_row_changed_after_approval_is_not_sent(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, approval = waiting_for_approval(f)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    change_row(store, approval.proposal_id, quantity=17, total=19533)
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    reason = str((current.waiting or {}).get("reason"))
    assert "is not verified: its stored content was changed after it was drafted" in reason
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.DENIED
    assert simulator.order_count() == 0
    assert simulator.stats()["requests"].get("POST /orders", 0) == 0  # type: ignore[attr-defined]
    view = service.show_approval(store, approval.id).proposal
    assert not view.verified and "changed after it was drafted" in str(view.problem)
    assert view.document["args"]["quantity"] == 10  # the view shows the approved content


def test_a_row_changed_after_admission_is_not_sent_either(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, approval = waiting_for_approval(f)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    with store.read() as conn:
        proposal = store.proposals.get(conn, approval.proposal_id)
    workflow = WorkflowCatalog(store).workflow(store.runs.get(run.id).workflow_digest)
    changed = {**proposal.document, "args": {**proposal.document["args"], "quantity": 17}}
    target = target_for(workflow, dataclasses.replace(proposal, document=changed))
    context = RuntimeContext.load(context_file(tmp_path, simulator))
    with pytest.raises(ProposalUnverified) as refused:
        dispatch(target, context)
    assert refused.value.code == "proposal_unverified"
    assert f"not to the approved {proposal.hash}" in refused.value.message
    assert simulator.stats()["requests"].get("POST /orders", 0) == 0  # type: ignore[attr-defined]
    dispatch(target_for(workflow, proposal), context)  # the approved content is sent
    assert simulator.order_count() == 1
