"""Agent requests as people and outside systems see them: list, show, and every step of the
lifecycle (:class:`~openseal.runtime.requests.AgentRequestStep`), recorded with the caller's
identity as the actor of the step's event on the caller run."""

from __future__ import annotations

from typing import Any

from openseal.errors import OpenSealError, UsageError
from openseal.runtime.access import visible_run
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.engine.cascade import stop_child
from openseal.runtime.engine.delegation import CompletionMismatch, restarter
from openseal.runtime.engine.states.turn import schema_problems
from openseal.runtime.id_prefix import complete_id
from openseal.runtime.requests import AgentRequestStep
from openseal.runtime.statuses import AgentRequestStatus
from openseal.runtime.store import AgentRequest, Store

STEPS = ("accept", "decline", "ask", "clarify", "complete", "review")


#: steps the callee's side takes; the caller's side answers questions and reviews
CALLEE_STEPS = ("accept", "decline", "ask", "complete")


def list_agent_requests(
    store: Store,
    *,
    status: str | None = None,
    callee: str | None = None,
    run_id: str | None = None,
    limit: int = 100,
    caller: Caller = CLI,
) -> list[AgentRequest]:
    """The newest requests first, only those of runs in the caller's scopes; ``status`` must
    be a request status."""
    if status is not None and status not in set(AgentRequestStatus):
        known = ", ".join(AgentRequestStatus)
        raise UsageError(f"unknown agent request status {status!r}; one of {known}")
    if run_id is not None:
        run_id = complete_id(store, "run", run_id)
    return store.agent_requests.newest(
        status=status, callee=callee, caller_run_id=run_id, limit=limit,
        scopes=caller.grant.visible(),
    )  # fmt: skip


def show_agent_request(store: Store, request_id: str, caller: Caller = CLI) -> AgentRequest:
    """The request (``not_found`` for one of a run in a scope the caller does not reach)."""
    found = store.agent_requests.get(complete_id(store, "agent request", request_id))
    visible_run(store, found.caller_run_id, caller.grant)
    return found


def named_principal(store: Store, request_id: str, step: str, principal: str | None) -> bool:
    """Whether ``principal`` is the one ``step`` of the request is for: the callee agent
    (``agent:finance`` for ``agent.finance``) for the callee's steps, the caller run's owner
    for answering a question and reviewing. Such a principal may take the step without the
    ``operator`` role."""
    if principal is None:
        return False
    try:
        found = store.agent_requests.get(complete_id(store, "agent request", request_id))
    except OpenSealError:
        return False
    meta = found.request if isinstance(found.request, dict) else {}
    side = found.callee if step in CALLEE_STEPS else str(meta.get("caller") or "")
    return bool(side) and principal == side.replace(".", ":", 1)


def step_agent_request(store: Store, request: AgentRequestStep, caller: Caller) -> AgentRequest:
    """Take one step on an agent request; refusals: ``invalid_status`` (the request's status
    does not allow it), ``completion_mismatch``, ``usage_error`` (a missing reason, answer or
    verdict), ``not_found`` (also for a run in a scope the caller does not reach)."""
    requests = store.agent_requests
    request_id = show_agent_request(store, request.request_id, caller).id
    actor, step, stop = caller.actor, request.step, stop_child(store)
    if step == "accept":
        return requests.accept(request_id, actor, stop=stop)
    if step == "decline":
        return requests.decline(request_id, actor, _required(request.reason, "a reason"), stop=stop)
    if step == "ask":
        return requests.ask(request_id, actor, _required(request.text, "a question"), stop=stop)
    if step == "clarify":
        answer = _required(request.value, "an answer")
        return requests.clarify(request_id, actor, answer, stop=stop, restart=restarter(store))
    if step == "complete":
        _check_completion(requests.get(request_id), request.value)
        return requests.complete(request_id, actor, request.value, stop=stop)
    if step == "review":
        verdict = _required(request.verdict, "a verdict (accept or send_back)")
        if verdict == "send_back":
            _required(request.reason, "a reason to send the completion back")
        return requests.review(
            request_id, actor, verdict, request.reason, stop=stop, restart=restarter(store)
        )
    raise UsageError(f"unknown agent request step {step!r}; one of {', '.join(STEPS)}")


def _required(value: Any, what: str) -> Any:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise UsageError(f"this step needs {what}")
    return value


def _check_completion(request: AgentRequest, response: Any) -> None:
    meta = request.request if isinstance(request.request, dict) else {}
    problems = schema_problems(response, meta.get("output_schema"))
    if problems:
        raise CompletionMismatch(
            f"the completion does not match the output type of agent request {request.id}: "
            + problems[0]
        )
