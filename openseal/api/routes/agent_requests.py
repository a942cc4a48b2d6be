"""Agent requests: list, show, and each step of the lifecycle, by people and outside systems.

Each step is recorded with the calling principal as its actor. A step is for the ``operator``
role, or for the principal the request names: its callee agent (``agent:finance`` for a
request to ``agent.finance``) for accept, decline, ask and complete, and the caller run's
owner for clarify and review.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query, Request

from openseal.api import documents
from openseal.api.auth import Caller
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import (
    AgentRequestAnswer,
    AgentRequestCompletion,
    AgentRequestDecline,
    AgentRequestQuestion,
    AgentRequestReview,
    Empty,
)
from openseal.api.routes.common import (
    AgentRequestStatusQuery,
    Limit,
    OfRun,
    State,
    Who,
    runtime_caller,
    scoped,
)
from openseal.api.state import state_of
from openseal.runtime import service
from openseal.wire import jsonable

F = TypeVar("F", bound=Callable[..., Any])

router = APIRouter(tags=["agent requests"], route_class=documents.Documented)

RequestId = Annotated[
    str, Path(min_length=1, max_length=200, description="An agent request id (or a prefix)")
]


def _named(step: str) -> Any:
    def named(request: Request, who: Caller) -> bool:
        request_id = str(request.path_params.get("request_id", ""))
        store = state_of(request).store
        return service.named_principal(store, request_id, step, who.principal)

    return named


def _step_route(step: str, *statuses: int) -> Callable[[F], F]:
    """``POST /agent-requests/{request_id}/{step}`` (operation ``agent_requests.{step}``),
    served to the operator role or the principal the request names for ``step``; it answers
    the request, or 403, 404, 409 and ``statuses``."""
    return router.post(
        f"/agent-requests/{{request_id}}/{step}",
        operation_id=f"agent_requests.{step}",
        dependencies=requires(f"agent_requests.{step}", _named(step)),
        responses=responses(403, 404, 409, *statuses, ok=documents.AgentRequestShown),
    )


def _step(state: Any, who: Caller, request_id: str, step: str, **fields: Any) -> dict[str, Any]:
    request = service.AgentRequestStep(request_id, step, **fields)
    done = service.step_agent_request(state.store, request, runtime_caller(state, who))
    return {"agent_request": jsonable(done)}


@router.get(
    "/agent-requests",
    operation_id="agent_requests.list",
    dependencies=requires("agent_requests.list"),
    responses=responses(ok=documents.AgentRequests),
)
def list_requests(
    state: State,
    who: Who,
    status: AgentRequestStatusQuery = None,
    callee: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    run: OfRun = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Newest agent requests first, by status, callee (``agent.finance``) or caller run."""
    found = service.list_agent_requests(
        state.store,
        status=None if status is None else str(status),
        callee=callee,
        run_id=run,
        limit=limit,
        caller=scoped(who),
    )
    return {"agent_requests": jsonable(found)}


@router.get(
    "/agent-requests/{request_id}",
    operation_id="agent_requests.show",
    dependencies=requires("agent_requests.show"),
    responses=responses(404, ok=documents.AgentRequestShown),
)
def show_request(request_id: RequestId, state: State, who: Who) -> dict[str, Any]:
    """The request: goal, inputs, expected output, clarification rounds, reviews, child run."""
    found = service.show_agent_request(state.store, request_id, scoped(who))
    return {"agent_request": jsonable(found)}


@_step_route("accept")
def accept(request_id: RequestId, body: Empty, state: State, who: Who) -> dict[str, Any]:
    """The callee takes a ``requested`` request on."""
    return _step(state, who, request_id, "accept")


@_step_route("decline")
def decline(
    request_id: RequestId, body: AgentRequestDecline, state: State, who: Who
) -> dict[str, Any]:
    """The callee will not do it; the caller leaves by ``on "declined"``."""
    return _step(state, who, request_id, "decline", reason=body.reason)


@_step_route("ask")
def ask(
    request_id: RequestId, body: AgentRequestQuestion, state: State, who: Who
) -> dict[str, Any]:
    """The callee asks the caller a question; a child run at work stops until it is answered."""
    return _step(state, who, request_id, "ask", text=body.question)


@_step_route("clarify")
def clarify(
    request_id: RequestId, body: AgentRequestAnswer, state: State, who: Who
) -> dict[str, Any]:
    """Answer the open question; the callee's work starts again with the answer."""
    return _step(state, who, request_id, "clarify", value=body.answer)


@_step_route("complete", 422)
def complete(
    request_id: RequestId, body: AgentRequestCompletion, state: State, who: Who
) -> dict[str, Any]:
    """The callee's answer; one that does not match the expected type is refused (422)."""
    return _step(state, who, request_id, "complete", value=body.response)


@_step_route("review")
def review(
    request_id: RequestId, body: AgentRequestReview, state: State, who: Who
) -> dict[str, Any]:
    """Accept a completion under review, or send it back with a reason (which reopens it)."""
    return _step(state, who, request_id, "review", verdict=body.verdict, reason=body.reason)
