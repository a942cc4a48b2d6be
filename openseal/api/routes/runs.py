"""Runs: list, show, pause, resume, cancel, intervene (each with ``expectedRevision``), events
paged by sequence, and a live Server-Sent Events stream."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import Intervention, RunCommand
from openseal.api.routes.common import (
    Id,
    Limit,
    Listed,
    RunStatusQuery,
    State,
    Who,
    runtime_caller,
    scoped,
)
from openseal.api.state import ApiState
from openseal.runtime import service
from openseal.runtime.service import TERMINAL_RUN_STATUSES
from openseal.runtime.store import Event
from openseal.wire import jsonable

router = APIRouter(tags=["runs"], route_class=documents.Documented)

#: the largest event sequence a run can have (the column is a 32-bit integer)
MAX_SEQUENCE = 2**31 - 1
Sequence = Annotated[
    int, Query(ge=0, le=MAX_SEQUENCE, description="Only events after this sequence")
]


@router.get(
    "/runs",
    operation_id="runs.list",
    dependencies=requires("runs.list"),
    responses=responses(ok=documents.RunPage),
)
def list_runs(
    state: State,
    who: Who,
    listing: Listed,
    status: RunStatusQuery = None,
    objective: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> dict[str, Any]:
    """Runs newest first, optionally of one status, objective or workflow, created since a
    moment; the next page starts after ``next_after`` (null on the last page)."""
    found = service.list_runs(
        state.store, objective_id=objective, caller=scoped(who), **listing.filters(status)
    )
    return listing.page("runs", found)


@router.get(
    "/runs/{run_id}",
    operation_id="runs.show",
    dependencies=requires("runs.show"),
    responses=responses(404, ok=documents.RunShown),
)
def show_run(run_id: Id, state: State, who: Who) -> dict[str, Any]:
    """The run, what it waits for (``reason``) and its position: previous → current → next."""
    run_id = service.complete_id(state.store, "run", run_id)
    view = service.show_run(state.store, run_id, scoped(who))
    document: dict[str, Any] = jsonable(view)
    document["position"] = {
        "previous": view.previous, "current": view.current, "next": list(view.next),
    }  # fmt: skip
    return document


@router.post(
    "/runs/{run_id}/pause",
    operation_id="runs.pause",
    dependencies=requires("runs.pause"),
    responses=responses(404, 409, ok=documents.RunChanged),
)
def pause(run_id: Id, body: RunCommand, state: State, who: Who) -> dict[str, Any]:
    """Stop the run where it is; an in-flight worker is fenced off at its next write."""
    run_id = service.complete_id(state.store, "run", run_id)
    request = service.RunCommand(run_id, body.reason, body.expected_revision)
    run = service.pause_run(state.store, request, runtime_caller(state, who))
    return {"run": jsonable(run)}


@router.post(
    "/runs/{run_id}/resume",
    operation_id="runs.resume",
    dependencies=requires("runs.resume"),
    responses=responses(404, 409, ok=documents.RunChanged),
)
def resume(run_id: Id, body: RunCommand, state: State, who: Who) -> dict[str, Any]:
    """Undo a pause."""
    run_id = service.complete_id(state.store, "run", run_id)
    request = service.RunCommand(run_id, body.reason, body.expected_revision)
    run = service.resume_run(state.store, request, runtime_caller(state, who))
    return {"run": jsonable(run)}


@router.post(
    "/runs/{run_id}/cancel",
    operation_id="runs.cancel",
    dependencies=requires("runs.cancel"),
    responses=responses(404, 409, ok=documents.RunCanceled),
)
def cancel(run_id: Id, body: RunCommand, state: State, who: Who) -> dict[str, Any]:
    """Cancel durably; ``report`` (the ``run.canceled`` event's payload) says what the
    cancellation prevented and what may already have happened. Canceling a canceled run
    changes nothing (``changed`` false) and answers the first cancellation's report."""
    run_id = service.complete_id(state.store, "run", run_id)
    request = service.RunCommand(run_id, body.reason, body.expected_revision)
    canceled = service.cancel_run(state.store, request, runtime_caller(state, who))
    return {"run": jsonable(canceled.run), "report": canceled.report, "changed": canceled.changed}


@router.post(
    "/runs/{run_id}/intervene",
    operation_id="runs.intervene",
    dependencies=requires("runs.intervene"),
    responses=responses(404, 409, ok=documents.RunChanged),
)
def intervene(run_id: Id, body: Intervention, state: State, who: Who) -> dict[str, Any]:
    """Repair a paused run or one that needs attention."""
    run_id = service.complete_id(state.store, "run", run_id)
    request = service.Intervention(
        run_id, body.reason, body.state,
        body.value if "value" in body.model_fields_set else None, body.expected_revision,
    )  # fmt: skip
    run = service.intervene(state.store, request, runtime_caller(state, who))
    return {"run": jsonable(run)}


@router.get(
    "/runs/{run_id}/events",
    operation_id="runs.events",
    dependencies=requires("runs.events"),
    responses=responses(404, ok=documents.EventPage),
)
def events(
    run_id: Id, state: State, who: Who, after: Sequence = 0, limit: Limit = 100
) -> dict[str, Any]:
    """One page of the run's events with ``seq > after``, in order (sequences have no gaps).
    The next page starts after ``next_after``."""
    run_id = service.complete_id(state.store, "run", run_id)
    page = service.run_events(state.store, run_id, after=after, limit=limit, caller=scoped(who))
    return {
        "events": jsonable(page),
        "next_after": page[-1].seq if page else after,
    }


@router.get(
    "/runs/{run_id}/turns",
    operation_id="runs.turns",
    dependencies=requires("runs.turns"),
    responses=responses(404, ok=documents.Turns),
)
def run_turns(run_id: Id, state: State, who: Who) -> dict[str, Any]:
    """The run's turns in order: state, started and ended, outcome, tokens, and each model call
    (the model that answered, its tokens, the tools it asked for) and tool call."""
    run_id = service.complete_id(state.store, "run", run_id)
    found = service.run_turns(state.store, run_id, scoped(who))
    return {"turns": [{**jsonable(t), "tokens": t.tokens} for t in found]}


@router.get(
    "/runs/{run_id}/events/stream",
    operation_id="runs.events_stream",
    dependencies=requires("runs.events_stream"),
    responses={
        **responses(404),
        200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"},
    },
    response_class=StreamingResponse,
)
async def stream(
    run_id: Id,
    state: State,
    who: Who,
    after: Sequence = 0,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> StreamingResponse:
    """Server-Sent Events: every event after ``after`` (or ``Last-Event-ID`` on a reconnect),
    then new ones as they commit. Each has ``id`` = its sequence and ``event`` = its type; the
    stream sends ``event: end`` and closes once the run has ended and everything was sent."""
    if last_event_id is not None and last_event_id.strip().isdigit():
        after = max(after, min(int(last_event_id.strip()), MAX_SEQUENCE))
    # 404 (unknown, or another scope's) before the stream starts
    await run_in_threadpool(service.show_run, state.store, run_id, scoped(who))
    return StreamingResponse(
        _sse(state, run_id, after),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _frame(event: Event) -> str:
    data = json.dumps(jsonable(event), sort_keys=True, separators=(",", ":"))
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"


async def _sse(state: ApiState, run_id: str, after: int) -> AsyncIterator[str]:
    # Polls the store; a disconnecting client cancels this generator (Starlette listens).
    settings = state.settings
    yield f": events of run {run_id}\nretry: 2000\n\n"
    quiet_since = time.monotonic()
    while True:
        page = await run_in_threadpool(service.run_events, state.store, run_id, after=after)
        for event in page:
            yield _frame(event)
            after = event.seq
        if page:
            quiet_since = time.monotonic()
            continue
        run = await run_in_threadpool(state.store.runs.get, run_id)
        if run.status in TERMINAL_RUN_STATUSES and run.last_event_seq <= after:
            end = json.dumps({"run_id": run_id, "status": str(run.status), "last_seq": after})
            yield f"event: end\ndata: {end}\n\n"
            return
        if time.monotonic() - quiet_since >= settings.stream_keepalive_seconds:
            yield ": keepalive\n\n"
            quiet_since = time.monotonic()
        await anyio.sleep(settings.stream_poll_seconds)
