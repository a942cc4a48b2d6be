"""``POST /events``: deliver an inbound event to the run waiting for it (or keep it)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import InboundEventBody
from openseal.api.routes.common import State, Who
from openseal.api.serialize import jsonable
from openseal.runtime import service

router = APIRouter(tags=["events"])


@router.post(
    "/events",
    operation_id="events.deliver",
    dependencies=requires("events.deliver"),
    responses=responses(),
    status_code=202,
)
def deliver(body: InboundEventBody, state: State, who: Who) -> dict[str, Any]:
    """Hand the event to the run waiting in a ``wait`` state for ``name`` with a matching
    correlation; if none waits yet, it is kept and matched when one registers.
    ``consumed_by_run_id`` says which run took it."""
    event = service.deliver_event(
        state.store, body.name, body.payload, correlation=body.correlation, actor=who.principal
    )
    return {"event": jsonable(event)}
