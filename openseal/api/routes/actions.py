"""Actions: list, show (with the proposal and spend), reconcile, resolve."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import ActionResolution
from openseal.api.routes.common import (
    ActionStatusQuery,
    Listed,
    OfRun,
    State,
    Who,
    runtime_caller,
    scoped,
)
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["actions"], route_class=documents.Documented)

Ref = Annotated[str, Path(min_length=1, max_length=300, description="Action id or action key")]


@router.get(
    "/actions",
    operation_id="actions.list",
    dependencies=requires("actions.list"),
    responses=responses(ok=documents.ActionPage),
)
def list_actions(
    state: State,
    who: Who,
    listing: Listed,
    status: ActionStatusQuery = None,
    run: OfRun = None,
) -> dict[str, Any]:
    """Newest actions first, optionally of one status, run or workflow, created since a
    moment; the next page starts after ``next_after`` (null on the last page)."""
    found = service.list_actions(
        state.store, run_id=run, caller=scoped(who), **listing.filters(status)
    )
    return listing.page("actions", found)


@router.get(
    "/actions/{ref}",
    operation_id="actions.show",
    dependencies=requires("actions.show"),
    responses=responses(404, ok=documents.ActionShown),
)
def show_action(ref: Ref, state: State, who: Who) -> dict[str, Any]:
    """The action, its exact proposal and its spend reservations."""
    ref = service.complete_id(state.store, "action", ref)
    view = service.show_action(state.store, ref, scoped(who))
    return {
        "action": jsonable(view.action),
        "proposal": jsonable(view.proposal.document),
        "spend": jsonable(view.spend),
    }


@router.post(
    "/actions/{ref}/reconcile",
    operation_id="actions.reconcile",
    dependencies=requires("actions.reconcile"),
    responses=responses(404, 409, ok=documents.ActionReconciled),
)
def reconcile(ref: Ref, state: State, who: Who) -> dict[str, Any]:
    """Ask the destination about an action whose outcome is open (lookup or same-key retry).
    ``pending`` says why it is still open, if it is."""
    ref = service.complete_id(state.store, "action", ref)
    action, pending = service.reconcile_action(
        state.store, service.Reconciliation(ref), runtime_caller(state, who),
        context=state.settings.context,
    )  # fmt: skip
    return {"action": jsonable(action), "pending": pending}


@router.post(
    "/actions/{ref}/resolve",
    operation_id="actions.resolve",
    dependencies=requires("actions.resolve"),
    responses=responses(404, 409, ok=documents.ActionChanged),
)
def resolve(ref: Ref, body: ActionResolution, state: State, who: Who) -> dict[str, Any]:
    """Settle an action by hand after checking the destination; the run then continues."""
    ref = service.complete_id(state.store, "action", ref)
    request = service.Resolution(ref, body.outcome, body.evidence, body.result)
    action = service.resolve_action(state.store, request, runtime_caller(state, who))
    return {"action": jsonable(action)}
