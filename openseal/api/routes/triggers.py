"""Triggers: list them with their next occurrence and last firing, show one with its firings,
pause, resume or retire one — the same service functions as ``openseal triggers``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import TriggerStatusChange
from openseal.api.routes.common import Limit, State, Who, runtime_caller
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["triggers"], route_class=documents.Documented)

Trigger = Annotated[str, Path(min_length=1, max_length=200, description="A trigger's name")]


@router.get(
    "/triggers",
    operation_id="triggers.list",
    dependencies=requires("triggers.list"),
    responses=responses(ok=documents.Triggers),
)
def list_triggers(state: State) -> dict[str, Any]:
    """Every deployed trigger: status, what fires it, next occurrence, last firing."""
    return {"triggers": jsonable(service.list_triggers(state.store))}


@router.get(
    "/triggers/{trigger}",
    operation_id="triggers.show",
    dependencies=requires("triggers.show"),
    responses=responses(404, ok=documents.TriggerShown),
)
def show_trigger(trigger: Trigger, state: State, limit: Limit = 20) -> dict[str, Any]:
    """One trigger and its newest ``limit`` firings (started, queued, skipped, missed,
    failed)."""
    view, firings = service.show_trigger(state.store, trigger, limit=limit)
    return {"trigger": jsonable(view), "firings": jsonable(firings)}


@router.post(
    "/triggers/{trigger}/status",
    operation_id="triggers.set_status",
    dependencies=requires("triggers.set_status"),
    responses=responses(404, 409, ok=documents.TriggerChanged),
)
def set_status(
    trigger: Trigger, body: TriggerStatusChange, state: State, who: Who
) -> dict[str, Any]:
    """Pause (``paused``), resume (``active``) or retire (``retired``) a trigger. A trigger
    starts objectives in every scope, so this needs a token for scope ``*``."""
    request = service.TriggerCommand(trigger, body.status, body.reason)
    view = service.set_trigger_status(state.store, request, runtime_caller(state, who))
    return {"trigger": jsonable(view)}
