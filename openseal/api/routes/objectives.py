"""Objectives: create (``Idempotency-Key`` honoured), list, show, pause/resume/retire,
activate (a draft)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header

from openseal.api import documents, idempotency
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import ObjectiveActivation, ObjectiveCreate, ObjectiveStatusChange
from openseal.api.routes.common import (
    Id,
    Listed,
    ObjectiveStatusQuery,
    State,
    Who,
    runtime_caller,
    scoped,
)
from openseal.runtime import service
from openseal.runtime.store import NewObjective
from openseal.wire import jsonable

router = APIRouter(tags=["objectives"], route_class=documents.Documented)

OPERATION = "objectives.create"
Key = Annotated[
    str | None,
    Header(
        alias=idempotency.HEADER,
        pattern=idempotency.KEY_PATTERN,
        description="Same key and body: the first response again; another body: 409.",
    ),
]


@router.post(
    "/objectives",
    operation_id=OPERATION,
    dependencies=requires(OPERATION),
    responses=responses(404, 409, 429, 501, ok=documents.ObjectiveStarted, ok_statuses=(201, 200)),
    status_code=201,
)
def create_objective(body: ObjectiveCreate, state: State, who: Who, key: Key = None) -> Any:
    """Start a deployed workflow (its active version) with inputs checked against its types;
    with ``draft``, create the objective without a run until it is activated."""

    def create(request_key: str | None) -> tuple[int, dict[str, Any]]:
        request = service.StartObjective(
            body.workflow, body.inputs, body.project, request_key, body.scope, body.goal,
            body.priority, body.draft,
        )  # fmt: skip
        return started(service.create_objective(state.store, request, runtime_caller(state, who)))

    return idempotency.answered_once(
        state.store, key, OPERATION, body.model_dump(mode="json"), who.principal, create
    )


def started(created: NewObjective) -> tuple[int, dict[str, Any]]:
    """A create's status and document: 201 when it created the objective, 200 on a replay."""
    document = {
        "objective": jsonable(created.objective),
        "run": jsonable(created.run),
        "created": created.created,
    }
    return (201 if created.created else 200), document


@router.get(
    "/objectives",
    operation_id="objectives.list",
    dependencies=requires("objectives.list"),
    responses=responses(ok=documents.ObjectivePage),
)
def list_objectives(
    state: State,
    who: Who,
    listing: Listed,
    status: ObjectiveStatusQuery = None,
) -> dict[str, Any]:
    """Newest objectives first, optionally of one status or workflow, created since a
    moment; the next page starts after ``next_after`` (null on the last page)."""
    found = service.list_objectives(state.store, caller=scoped(who), **listing.filters(status))
    return listing.page("objectives", found)


@router.get(
    "/objectives/{objective_id}",
    operation_id="objectives.show",
    dependencies=requires("objectives.show"),
    responses=responses(404, ok=documents.ObjectiveShown),
)
def show_objective(objective_id: Id, state: State, who: Who) -> dict[str, Any]:
    """An objective and its runs."""
    objective_id = service.complete_id(state.store, "objective", objective_id)
    objective, runs = service.show_objective(state.store, objective_id, scoped(who))
    return {"objective": jsonable(objective), "runs": jsonable(runs)}


@router.post(
    "/objectives/{objective_id}/status",
    operation_id="objectives.set_status",
    dependencies=requires("objectives.set_status"),
    responses=responses(404, 409, ok=documents.ObjectiveShown),
)
def set_status(
    objective_id: Id, body: ObjectiveStatusChange, state: State, who: Who
) -> dict[str, Any]:
    """Pause (``paused``), resume (``active``) or retire (``retired``) an objective; its
    unfinished runs are paused, resumed or canceled with it. A draft is not resumed (409
    ``objective_draft``): ``POST /objectives/{id}/activate`` starts it. Answers the objective
    and its runs."""
    objective_id = service.complete_id(state.store, "objective", objective_id)
    request = service.ObjectiveCommand(
        objective_id, body.status, body.reason, body.expected_revision
    )
    caller = runtime_caller(state, who)
    service.steer_objective(state.store, request, caller)
    objective, runs = service.show_objective(state.store, objective_id, caller)
    return {"objective": jsonable(objective), "runs": jsonable(runs)}


@router.post(
    "/objectives/{objective_id}/activate",
    operation_id="objectives.activate",
    dependencies=requires("objectives.activate"),
    responses=responses(404, 409, 422, 501, ok=documents.ObjectiveShown),
)
def activate(objective_id: Id, body: ObjectiveActivation, state: State, who: Who) -> dict[str, Any]:
    """Activate a draft objective: it becomes ``active`` and its first run starts in the same
    transaction, on the workflow's active version, with its inputs checked against it. Any
    other status is refused (409 ``invalid_status``). Answers the objective and its runs."""
    objective_id = service.complete_id(state.store, "objective", objective_id)
    request = service.ActivateObjective(objective_id, body.reason, body.expected_revision)
    caller = runtime_caller(state, who)
    service.activate_objective(state.store, request, caller)
    objective, runs = service.show_objective(state.store, objective_id, caller)
    return {"objective": jsonable(objective), "runs": jsonable(runs)}
