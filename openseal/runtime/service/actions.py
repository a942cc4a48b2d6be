"""Approvals and actions as the API and the CLI show them, and an operator's reconciling and
resolving of an action whose outcome is open. Deciding an approval is
:func:`openseal.runtime.actions.approvals.decide_approval` (``service.decide_approval``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypedDict, Unpack

from openseal.errors import RuntimeFailure, UsageError
from openseal.runtime.access import visible_run
from openseal.runtime.actions import spend
from openseal.runtime.actions.approvals import separated_creator
from openseal.runtime.actions.dispatch import target_for
from openseal.runtime.actions.proposal_check import verify_in
from openseal.runtime.actions.reconcile import mark_unknown, reconcile, resend_unclaimed
from openseal.runtime.caller import CLI, LOCAL_OPERATOR, Caller
from openseal.runtime.clock import iso
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.listing import list_query
from openseal.runtime.requests import Reconciliation, Resolution
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import (
    OPEN_OUTCOME,
    Action,
    Approval,
    Connection,
    ListQuery,
    NotFound,
    Proposal,
    Store,
)
from openseal.skills.credentials import RuntimeContext

LOCAL_ACTOR = LOCAL_OPERATOR


@dataclass(frozen=True)
class ProposalView:
    """A stored proposal with its document read back from the artefact (digest verified)."""

    proposal: Proposal
    document: dict[str, Any]
    verified: bool
    #: why it is not verified (None when it is)
    problem: str | None = None


@dataclass(frozen=True)
class ApprovalView:
    approval: Approval
    proposal: ProposalView
    #: who may not approve it: its run's creator, when its state separates duties
    excluded: str | None = None


@dataclass(frozen=True)
class ActionView:
    action: Action
    proposal: ProposalView
    spend: list[dict[str, Any]]


class RunRecordsPage(TypedDict, total=False):
    """Which page of a run's records (approvals, actions) to list: the list flags
    (:mod:`openseal.runtime.listing`; ``limit`` 100 unless given), ``run_id`` for those of one
    run, and the ``caller`` whose scopes bound it (the CLI's unless given)."""

    status: str | None
    run_id: str | None
    limit: int
    after: str | None
    since: str | None
    workflow: str | None
    caller: Caller


def _page(statuses: type[Enum], page: RunRecordsPage) -> ListQuery:
    return list_query(
        limit=page.get("limit", 100), after=page.get("after"), since=page.get("since"),
        workflow=page.get("workflow"), status=page.get("status"), statuses=statuses,
        scopes=page.get("caller", CLI).grant.visible(),
    )  # fmt: skip


# -- approvals -------------------------------------------------------------------------


def list_approvals(store: Store, **page: Unpack[RunRecordsPage]) -> list[Approval]:
    """One page of approvals, newest first, only those of runs in the caller's scopes."""
    return store.approvals.newest(_page(ApprovalStatus, page), run_id=page.get("run_id"))


def show_approval(store: Store, ref: str, caller: Caller = CLI) -> ApprovalView:
    """An approval (by id or proposal hash) and every field of the exact proposal."""
    with store.read() as conn:
        approval = store.approvals.find(conn, ref)
        proposal = store.proposals.get(conn, approval.proposal_id)
        shown = _proposal_view(store, conn, proposal)
    _in_scope(store, approval.run_id, f"approval {ref}", caller)
    return ApprovalView(approval, shown, separated_creator(store, approval.id))


def _in_scope(store: Store, run_id: str, what: str, caller: Caller) -> None:
    """Answer a record of a run in a scope the caller does not reach as not found."""
    if not caller.grant.everywhere:
        try:
            visible_run(store, run_id, caller.grant)
        except NotFound:
            raise NotFound(f"{what} not found") from None


# -- actions ---------------------------------------------------------------------------


def list_actions(store: Store, **page: Unpack[RunRecordsPage]) -> list[Action]:
    """One page of actions, newest first, only those of runs in the caller's scopes."""
    return store.actions.newest(_page(ActionStatus, page), run_id=page.get("run_id"))


def show_action(store: Store, action_id: str, caller: Caller = CLI) -> ActionView:
    """An action (by id or key), its proposal and its spend reservations."""
    with store.read() as conn:
        action = store.actions.get(conn, action_id)
        proposal = store.proposals.get(conn, action.proposal_id)
        spend = store.actions.spend_of(conn, action.id)
        view = ActionView(action, _proposal_view(store, conn, proposal), spend)
    _in_scope(store, action.run_id, f"action {action_id}", caller)
    return view


def reconcile_action(
    store: Store,
    request: Reconciliation,
    caller: Caller,
    *,
    context: RuntimeContext | None = None,
) -> tuple[Action, str | None]:
    """Reconcile an action whose outcome is open, from outside any worker.

    A ``dispatched`` action is only taken over when no worker holds its run. Same-key retry is
    used only while the run is alive and unclaimed; a canceled run's action is looked up, never
    re-sent. Returns the action and, if it is still open, why. ``context`` is the runtime
    configuration the skill adapters are called with.
    """
    actor = caller.actor
    with store.read() as conn:
        action = store.actions.get(conn, request.action_id)
        proposal = store.proposals.get(conn, action.proposal_id)
        run = store.runs.load(conn, action.run_id)
    _in_scope(store, action.run_id, f"action {request.action_id}", caller)
    if action.status not in OPEN_OUTCOME:
        raise RuntimeFailure(
            f"action {action.id} is {action.status}; only dispatched, unknown or "
            "needs_attention actions are reconciled",
            code="invalid_status",
        )
    if action.status == ActionStatus.DISPATCHED and run.status == RunStatus.RUNNING:
        raise RuntimeFailure(
            f"action {action.id} is being dispatched by {run.lease_owner}; try again later",
            code="action_in_flight",
        )
    workflow = WorkflowCatalog(store).workflow(run.workflow_digest)
    target = target_for(workflow, proposal)
    if action.status == ActionStatus.DISPATCHED:
        action = mark_unknown(store, action, "taken over by an operator's reconcile", actor)
    if action.status == ActionStatus.NEEDS_ATTENTION:
        action = _reopen(store, action, actor)
    # In recovery mode only a lookup may settle it: nothing is sent (invariant 18).
    resend = None if store.recoveries.active() else resend_unclaimed(store, target, context, actor)
    step = reconcile(store, target, action, context, resend, actor)
    settled = step.action
    if settled.status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED):
        _requeue(store, settled, actor, "action.reconciled")
    return settled, step.pending


def _reopen(store: Store, action: Action, actor: str) -> Action:
    with store.write() as conn:
        moved = store.actions.move(
            conn, action, ActionStatus.UNKNOWN, now=store.now(), actor=actor,
            note="reconcile requested by an operator",
        )  # fmt: skip
        return moved or store.actions.get(conn, action.id)


def resolve_action(store: Store, request: Resolution, caller: Caller) -> Action:
    """An operator settles an action whose outcome is open, with the evidence they checked.

    ``succeeded`` commits its spend reservation (``result``, if given, becomes the action's
    result, e.g. ``{"order_id": "PO-000001", "status": "confirmed"}``); ``failed`` releases it.
    A run waiting on the action is queued again and continues from it.
    """
    actor, outcome, evidence, result = (
        caller.actor,
        request.outcome,
        request.evidence,
        request.result,
    )
    if outcome not in ("succeeded", "failed"):
        raise UsageError(f"--outcome must be succeeded or failed, not {outcome!r}")
    if not evidence.strip():
        raise UsageError("--evidence is required: say what you checked")
    now = store.now()
    with store.write() as conn:
        action = store.actions.get(conn, request.action_id)
        run = store.runs.load(conn, action.run_id, lock=True)
        if not caller.grant.sees(run.scope):
            raise NotFound(f"action {request.action_id} not found")
        if action.status not in OPEN_OUTCOME:
            raise RuntimeFailure(
                f"action {action.id} is {action.status}; only dispatched, unknown or "
                "needs_attention actions are resolved",
                code="invalid_status",
            )
        if action.status == ActionStatus.DISPATCHED and run.status == RunStatus.RUNNING:
            raise RuntimeFailure(
                f"action {action.id} is being dispatched by {run.lease_owner}",
                code="action_in_flight",
            )
        resolution = {"actor": actor, "outcome": outcome, "evidence": evidence, "at": iso(now)}
        status = ActionStatus.SUCCEEDED if outcome == "succeeded" else ActionStatus.FAILED
        moved = store.actions.move(
            conn, action, status, now=now, actor=actor, note=f"resolved: {evidence}",
            resolution=resolution, finished_at=now,
            result=result if status == ActionStatus.SUCCEEDED else action.result,
            error=None if status == ActionStatus.SUCCEEDED else f"resolved as failed: {evidence}",
            event={"resolution": resolution},
        )  # fmt: skip
        if moved is None:
            raise RuntimeFailure(
                f"action {action.id} changed meanwhile; look again", code="conflict"
            )
        spend.settle(
            store, conn, action.id, "committed" if outcome == "succeeded" else "released", now
        )
        store.runs.wake_for_action(conn, moved, actor, "action.resolved", now)
    return moved


def _requeue(store: Store, action: Action, actor: str, event: str) -> None:
    with store.write() as conn:
        store.runs.wake_for_action(conn, action, actor, event, store.now())


# -- helpers ---------------------------------------------------------------------------


def approval_glances(store: Store, approvals: Sequence[Approval]) -> dict[str, dict[str, Any]]:
    """What each approval asks for, at a glance: the skill, what it spends, its plain
    arguments (``vendor``, ``to``…), and whether the stored proposal matches its hash — read
    from the verified proposal, keyed by approval id."""
    glances: dict[str, dict[str, Any]] = {}
    with store.read() as conn:
        for approval in approvals:
            proposal = store.proposals.get(conn, approval.proposal_id)
            checked = verify_in(conn, store.artifacts, proposal)
            document = checked.document if isinstance(checked.document, dict) else {}
            found = document.get("args")
            args: dict[str, Any] = found if isinstance(found, dict) else {}
            glances[approval.id] = {
                "skill": (document.get("skill") or {}).get("name"),
                "spend": document.get("spend"),
                "args": {k: v for k, v in args.items() if isinstance(v, str | int | float)},
                "verified": checked.verified,
            }
    return glances


def _proposal_view(store: Store, conn: Connection, proposal: Proposal) -> ProposalView:
    # Unverifiable (a missing or corrupt artefact, a row changed since): shown, flagged, with why.
    checked = verify_in(conn, store.artifacts, proposal)
    return ProposalView(proposal, checked.document, checked.verified, checked.problem)


def _status(kind: Any, value: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(s.value for s in kind)
        raise UsageError(f"unknown status {value!r} (one of {names})") from None
