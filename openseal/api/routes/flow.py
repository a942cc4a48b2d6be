"""Flow control: pause and resume an agent or a team, show what one is doing now, and scopes'
concurrency caps, quotas and ready-queue depths — the same service functions as ``openseal
agents|teams|scopes``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import (
    ScopeLimitChange,
    ScopeQueueChange,
    ScopeQuotaChange,
    ScopeRetentionChange,
)
from openseal.api.routes.common import State, Who, runtime_caller
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["flow control"], route_class=documents.Documented)

Scope = Annotated[str, Path(min_length=1, max_length=100, description="A scope")]
Measure = Annotated[
    str,
    Path(
        min_length=1, max_length=20,
        description="What a quota counts: runs, tokens, tool_calls, money.<CURRENCY>",
    ),
]  # fmt: skip
Period = Annotated[str, Path(min_length=1, max_length=10, description="day or month (UTC)")]


def _actor_routes(
    kind: Literal["agent", "team"], shown: type, named: str, said: dict[str, str]
) -> None:
    """``GET /agents/{agent}``, ``POST /agents/{agent}/pause`` and ``…/resume`` (or the same
    for teams): one service function each for both kinds; each route keeps its own operation
    id, answer shape and description (``said``, by verb)."""
    plural = f"{kind}s"
    Name = Annotated[str, Path(alias=kind, min_length=1, max_length=200, description=named)]

    def show(name: Name, state: State, who: Who) -> dict[str, Any]:
        view = service.show_actor(state.store, kind, name, runtime_caller(state, who))
        return {kind: jsonable(view)}

    def paused(pause: bool) -> Callable[[str, State, Who], dict[str, Any]]:
        def change(name: Name, state: State, who: Who) -> dict[str, Any]:
            caller = runtime_caller(state, who)
            changed = service.set_actor_paused(state.store, kind, name, pause, caller)
            return {kind: jsonable(changed)}

        return change

    for verb, endpoint, method, errors in (
        ("show", show, "GET", (404,)),
        ("pause", paused(True), "POST", (403, 404)),
        ("resume", paused(False), "POST", (403, 404)),
    ):
        endpoint.__name__ = f"{verb}_{kind}"
        endpoint.__doc__ = said[verb]
        # an object, not the string the module's annotations are: ``Name`` is this call's
        endpoint.__annotations__["name"] = Name
        router.add_api_route(
            f"/{plural}/{{{kind}}}" + ("" if verb == "show" else f"/{verb}"),
            endpoint,
            methods=[method],
            operation_id=f"{plural}.{verb}",
            dependencies=requires(f"{plural}.{verb}"),
            responses=responses(*errors, ok=shown),
        )


_actor_routes(
    "agent",
    documents.AgentShown,
    "An agent's name",
    {
        "show": "What the agent is doing now: its runs not ended (in the caller's scopes), its "
        "open requests, the concurrency slots it holds and the runs waiting for one; whether "
        "paused.",
        "pause": "Pause the agent: the turns it acts in wait (``waiting_for_capacity``) until it "
        "is resumed; turns under way finish; other work goes on. Needs a token for scope ``*``.",
        "resume": "Resume the agent: the runs waiting for it are woken, higher priority first.",
    },
)
_actor_routes(
    "team",
    documents.TeamShown,
    "A team's name",
    {
        "show": "What the team is doing now, as for an agent.",
        "pause": "Pause the team: the turns of its roles and of the workflows it owns wait.",
        "resume": "Resume the team: the runs waiting for it are woken, higher priority first.",
    },
)


@router.get(
    "/scopes/limits",
    operation_id="scopes.limits",
    dependencies=requires("scopes.limits"),
    responses=responses(ok=documents.ScopeLimits),
)
def scope_limits(state: State, who: Who) -> dict[str, Any]:
    """Every scope's concurrency cap the caller sees, with the slots in use now."""
    return {"limits": jsonable(service.scope_limits(state.store, runtime_caller(state, who)))}


@router.put(
    "/scopes/{scope}/limit",
    operation_id="scopes.set_limit",
    dependencies=requires("scopes.set_limit"),
    responses=responses(403, 404, ok=documents.ScopeLimitSet),
)
def set_scope_limit(scope: Scope, body: ScopeLimitChange, state: State, who: Who) -> dict[str, Any]:
    """Set the scope's concurrency cap (``max``) or remove it (``max`` null). Lowering or
    setting a cap is an operator's; raising or removing one widens it and needs an admin."""
    caller = runtime_caller(state, who)
    return {"limit": jsonable(service.set_scope_limit(state.store, scope, body.max, caller))}


@router.get(
    "/scopes/quotas",
    operation_id="scopes.quotas",
    dependencies=requires("scopes.quotas"),
    responses=responses(ok=documents.ScopeQuotas),
)
def scope_quotas(state: State, who: Who) -> dict[str, Any]:
    """Every scope's quota the caller sees, with what its window used so far and when it
    resets."""
    return {"quotas": jsonable(service.scope_quotas(state.store, runtime_caller(state, who)))}


@router.put(
    "/scopes/{scope}/quotas/{measure}/{per}",
    operation_id="scopes.set_quota",
    dependencies=requires("scopes.set_quota"),
    responses=responses(403, 404, 422, ok=documents.ScopeQuotaSet),
)
def set_scope_quota(
    scope: Scope, measure: Measure, per: Period, body: ScopeQuotaChange, state: State, who: Who
) -> dict[str, Any]:
    """Set the scope's quota of ``measure`` per ``per`` (``max``) or remove it (``max`` null),
    and whether work over it waits or is refused (``when_over``). Setting or lowering a quota
    is an operator's; raising or removing one widens it and needs an admin."""
    caller = runtime_caller(state, who)
    quota = service.set_scope_quota(
        state.store, scope, measure, per, body.max, body.when_over, caller
    )
    return {"quota": jsonable(quota)}


@router.put(
    "/scopes/{scope}/queue",
    operation_id="scopes.set_queue",
    dependencies=requires("scopes.set_queue"),
    responses=responses(403, 404, ok=documents.ScopeQueueSet),
)
def set_scope_queue(scope: Scope, body: ScopeQueueChange, state: State, who: Who) -> dict[str, Any]:
    """Set the scope's ready-queue depth (``max_queued``) or remove it (null): over it, new
    objectives in the scope and events that would start one are refused with ``429
    queue_full``. Lowering is an operator's; raising or removing needs an admin."""
    caller = runtime_caller(state, who)
    return {"queue": jsonable(service.set_scope_queue(state.store, scope, body.max_queued, caller))}


@router.get(
    "/scopes/retention",
    operation_id="scopes.retention",
    dependencies=requires("scopes.retention"),
    responses=responses(ok=documents.ScopeRetentions),
)
def scope_retentions(state: State, who: Who) -> dict[str, Any]:
    """Every scope's retention setting the caller sees: how long its ended runs stay live."""
    caller = runtime_caller(state, who)
    return {"retention": jsonable(service.scope_retentions(state.store, caller))}


@router.put(
    "/scopes/{scope}/retention",
    operation_id="scopes.set_retention",
    dependencies=requires("scopes.set_retention"),
    responses=responses(403, 404, 422, ok=documents.ScopeRetentionSet),
)
def set_scope_retention(
    scope: Scope, body: ScopeRetentionChange, state: State, who: Who
) -> dict[str, Any]:
    """Keep the scope's ended runs live ``keep_ended_runs`` (e.g. ``90d``) before an archive may
    take them, or remove the setting (null). Setting or lengthening it is an operator's;
    shortening or removing it lets runs leave sooner and needs an admin."""
    caller = runtime_caller(state, who)
    found = service.set_scope_retention(state.store, scope, body.keep_ended_runs, caller)
    return {"retention": jsonable(found)}
