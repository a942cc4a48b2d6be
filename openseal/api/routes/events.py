"""``POST /events``: deliver an inbound event to the run waiting for it (or keep it), and fire
the event triggers of its name."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse

from openseal.api import documents, idempotency
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import InboundEventBody
from openseal.api.routes.common import State, Who, runtime_caller
from openseal.errors import InvalidInput
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["events"], route_class=documents.Documented)

Key = Annotated[
    str | None,
    Header(
        alias=idempotency.HEADER,
        pattern=idempotency.KEY_PATTERN,
        description="The sender's id for this event (as `eventId`; when both are sent they "
        "must be equal): a redelivery is acknowledged with the first answer and not stored "
        "again.",
    ),
]


@router.post(
    "/events",
    operation_id="events.deliver",
    dependencies=requires("events.deliver"),
    responses=responses(409, 429, ok=documents.EventDelivered, ok_statuses=(202,)),
    status_code=202,
)
def deliver(body: InboundEventBody, state: State, who: Who, key: Key = None) -> JSONResponse:
    """Hand the event to the run waiting in a ``wait`` state for ``name`` with a matching
    correlation; if none waits yet, it is kept and matched when one registers.
    ``consumed_by_run_id`` says which run took it. With an event id (``eventId`` or
    ``Idempotency-Key``), a redelivery answers ``duplicate: true`` with the first delivery's
    event as it stands, and changes nothing; the same id with another correlation or payload
    is refused (409 ``idempotency_conflict``). Every active event trigger of ``name`` whose
    filter holds starts an objective, once per event: ``triggered`` lists what each recorded
    (a redelivery lists nothing new)."""
    if key is not None and body.event_id is not None and body.event_id != key:
        raise InvalidInput(
            f"{idempotency.HEADER} and eventId name different events; send one of them"
        )
    request = service.EventDelivery(
        body.name, body.payload, body.correlation, key if key is not None else body.event_id
    )
    delivery = service.receive_event(state.store, request, runtime_caller(state, who))
    document = {
        "event": jsonable(delivery.event),
        "duplicate": delivery.duplicate,
        "triggered": jsonable(delivery.fired),
    }
    headers = {idempotency.REPLAYED: "true"} if delivery.duplicate else None
    return JSONResponse(document, 202, headers=headers)
