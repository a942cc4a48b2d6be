"""``approval``: wait, holding no lease, for a decision bound to a proposal's hash.

First visit: an approval request is opened for the hash of the run's current draft of the
proposal, in the same transaction that moves the run to ``waiting_for_approval`` with
``wake_at`` at the expiry (invariant 5). The run wakes when a decision is made (the decision
sets ``wake_at`` to now) or when the approval expires; it then leaves by ``approved``,
``rejected``, ``changes_requested`` or ``expired`` (``on_timeout = "reject"`` leaves by
``rejected``). Expiry never approves.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from openseal.contract import ApprovalSettings, ApprovalWait
from openseal.runtime.actions import proposals
from openseal.runtime.clock import iso
from openseal.runtime.compiled import DefinitionError
from openseal.runtime.engine.states.base import Advance, Attention, Outcome, StepContext, Suspend
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Approval, FencedTx, Store, approval_summary

#: approval status → the event the state leaves by
LEAVE_BY = {
    ApprovalStatus.APPROVED: "approved",
    ApprovalStatus.REJECTED: "rejected",
    ApprovalStatus.CHANGES_REQUESTED: "changes_requested",
    ApprovalStatus.EXPIRED: "expired",
}


def execute(ctx: StepContext) -> Outcome:
    waiting = ctx.run.waiting
    if waiting is not None and waiting["kind"] == "approval" and waiting["state"] == ctx.state.name:
        return _resume(ctx, waiting["approval_id"])
    config = ctx.state.settings(ApprovalSettings)
    name, digest = proposals.current_hash(
        ctx.workflow, ctx.run.context["states"], config["proposal"]
    )
    with ctx.store.read() as conn:
        proposal = ctx.store.proposals.by_hash(conn, ctx.run.id, digest)
    if proposal is None:
        raise DefinitionError(f"proposal {name} ({digest}) is not stored for this run")
    expires_in = config["expires_in"]
    approvers = config["approvers"]
    on_timeout = config["on_timeout"]

    def ask(tx: FencedTx) -> None:
        expires_at = tx.now + timedelta(seconds=float(expires_in)) if expires_in else None
        approval = ctx.store.approvals.open_request(
            tx.conn, run_id=ctx.run.id, proposal_id=proposal.id, proposal_hash=proposal.hash,
            proposal_name=name, state=ctx.state.name, approvers=approvers,
            on_timeout=on_timeout, expires_at=expires_at, now=tx.now, actor=tx.actor,
        )  # fmt: skip
        ctx.store.actions.follow_approval(
            tx.conn, approval, ActionStatus.WAITING_FOR_APPROVAL, tx.now, tx.actor
        )
        _wait(tx, ctx.state.name, approval, now=False)

    return Suspend(ask, f"waiting for approval of {name} {proposal.hash[:12]}")


def _resume(ctx: StepContext, approval_id: str) -> Outcome:
    with ctx.store.read() as conn:
        approval = ctx.store.approvals.get(conn, approval_id)
    if approval.status == ApprovalStatus.PENDING and approval.expired_at(ctx.now()):
        approval = _expire(ctx, approval)
    if approval.status in LEAVE_BY:
        return Advance(LEAVE_BY[approval.status], approval_summary(approval))
    if approval.status == ApprovalStatus.CANCELED:
        return Attention(f"approval {approval.id} was canceled")

    def wait_again(tx: FencedTx) -> None:
        _wait(tx, ctx.state.name, approval, now=_decided_now(ctx.store, tx, approval.id))

    return Suspend(wait_again, f"waiting for approval {approval.id}")


def _expire(ctx: StepContext, approval: Approval) -> Approval:
    status = ApprovalStatus.REJECTED if approval.on_timeout == "reject" else ApprovalStatus.EXPIRED
    with ctx.store.leases.fenced(ctx.claim) as tx:
        closed = ctx.store.approvals.close(
            tx.conn, approval, status, now=tx.now, actor="system", reason="expired",
            decision="expired",
        )  # fmt: skip
        if closed is None:  # a decision landed just before the expiry: it stands
            return ctx.store.approvals.get(tx.conn, approval.id)
        tx.append_event("approval.expired", approval_summary(closed), actor="system")
        ctx.store.actions.settle_for_approval(tx.conn, closed, tx.now, "system")
    return closed


def _decided_now(store: Store, tx: FencedTx, approval_id: str) -> bool:
    # A decision committed while this worker held the run did not wake it (the run was not
    # waiting then): wake at once instead of waiting for a wake-up that will not come.
    return store.approvals.get(tx.conn, approval_id).status != ApprovalStatus.PENDING


def _wait(tx: FencedTx, state: str, approval: Approval, *, now: bool) -> None:
    waiting: ApprovalWait = {
        "kind": "approval",
        "state": state,
        "approval_id": approval.id,
        "proposal": approval.proposal_name,
        "hash": approval.proposal_hash,
        "expires_at": iso(approval.expires_at),
    }
    wake: datetime | None = tx.now if now else approval.expires_at
    tx.update_run(
        status=RunStatus.WAITING_FOR_APPROVAL, waiting=waiting, wake_at=wake, event="wait.approval"
    )
