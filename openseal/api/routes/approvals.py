"""Approvals: list, show with the exact proposal and its hash, decide.

A decision needs the hash the approver was shown, is recorded for the calling principal (a
token's person, or the local operator only through a loopback listening address), and is
served only when an approval authority is configured. No run, tool or model reaches this path.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import ApprovalDecision
from openseal.api.routes.common import (
    ApprovalStatusQuery,
    Listed,
    OfRun,
    State,
    Who,
    runtime_caller,
    scoped,
)
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["approvals"], route_class=documents.Documented)

Ref = Annotated[str, Path(min_length=1, max_length=80, description="Approval id or proposal hash")]


@router.get(
    "/approvals",
    operation_id="approvals.list",
    dependencies=requires("approvals.list"),
    responses=responses(ok=documents.ApprovalPage),
)
def list_approvals(
    state: State,
    who: Who,
    listing: Listed,
    status: ApprovalStatusQuery = None,
    run: OfRun = None,
) -> dict[str, Any]:
    """Newest approvals first, optionally of one status, run or workflow, created since a
    moment; the next page starts after ``next_after`` (null on the last page)."""
    found = service.list_approvals(
        state.store, run_id=run, caller=scoped(who), **listing.filters(status)
    )
    return listing.page("approvals", found)


@router.get(
    "/approvals/{ref}",
    operation_id="approvals.show",
    dependencies=requires("approvals.show"),
    responses=responses(404, ok=documents.ApprovalShown),
)
def show_approval(ref: Ref, state: State, who: Who) -> dict[str, Any]:
    """The approval, every field of the exact proposal, and the hash to decide on."""
    ref = service.complete_id(state.store, "approval", ref)
    view = service.show_approval(state.store, ref, scoped(who))
    return {
        "approval": jsonable(view.approval),
        "proposal": jsonable(view.proposal.document),
        "hash": view.approval.proposal_hash,
        "verified": view.proposal.verified,
        "unverified_reason": view.proposal.problem,
    }


@router.post(
    "/approvals/{ref}/decision",
    operation_id="approvals.decide",
    dependencies=requires("approvals.decide"),
    responses=responses(403, 404, 409, 501, ok=documents.ApprovalDecided),
)
def decide(ref: Ref, body: ApprovalDecision, state: State, who: Who) -> dict[str, Any]:
    """Approve, reject or request changes on the proposal whose ``hash`` you were shown.

    The same decision again changes nothing (``changed`` is false); another hash is refused
    (409 ``hash_mismatch``); reject and request_changes need a ``reason``.
    """
    ref = service.complete_id(state.store, "approval", ref)
    request = service.ApprovalDecision(ref, body.decision, body.hash, body.reason)
    caller = runtime_caller(state, who)
    decided = service.decide_approval(state.store, state.settings.authority, request, caller)
    return {"approval": jsonable(decided.approval), "changed": decided.changed}
