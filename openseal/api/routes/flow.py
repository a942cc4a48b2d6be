"""Flow control: pause and resume an agent or a team, show what one is doing now, and scopes'
concurrency caps, quotas and ready-queue depths — the same service functions as ``openseal
agents|teams|scopes``."""

from __future__ import annotations

from typing import Annotated, Any

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

Agent = Annotated[str, Path(min_length=1, max_length=200, description="An agent's name")]
Team = Annotated[str, Path(min_length=1, max_length=200, description="A team's name")]
Scope = Annotated[str, Path(min_length=1, max_length=100, description="A scope")]
Measure = Annotated[
    str,
    Path(
        min_length=1, max_length=20,
        description="What a quota counts: runs, tokens, tool_calls, money.<CURRENCY>",
    ),
]  # fmt: skip
Period = Annotated[str, Path(min_length=1, max_length=10, description="day or month (UTC)")]


@router.get(
    "/agents/{agent}",
    operation_id="agents.show",
    dependencies=requires("agents.show"),
    responses=responses(404, ok=documents.AgentShown),
)
def show_agent(agent: Agent, state: State, who: Who) -> dict[str, Any]:
    """What the agent is doing now: its runs not ended (in the caller's scopes), its open
    requests, the concurrency slots it holds and the runs waiting for one; whether paused."""
    view = service.show_actor(state.store, "agent", agent, runtime_caller(state, who))
    return {"agent": jsonable(view)}


@router.post(
    "/agents/{agent}/pause",
    operation_id="agents.pause",
    dependencies=requires("agents.pause"),
    responses=responses(403, 404, ok=documents.AgentShown),
)
def pause_agent(agent: Agent, state: State, who: Who) -> dict[str, Any]:
    """Pause the agent: the turns it acts in wait (``waiting_for_capacity``) until it is
    resumed; turns under way finish; other work goes on. Needs a token for scope ``*``."""
    caller = runtime_caller(state, who)
    return {"agent": jsonable(service.set_actor_paused(state.store, "agent", agent, True, caller))}


@router.post(
    "/agents/{agent}/resume",
    operation_id="agents.resume",
    dependencies=requires("agents.resume"),
    responses=responses(403, 404, ok=documents.AgentShown),
)
def resume_agent(agent: Agent, state: State, who: Who) -> dict[str, Any]:
    """Resume the agent: the runs waiting for it are woken, higher priority first."""
    caller = runtime_caller(state, who)
    return {"agent": jsonable(service.set_actor_paused(state.store, "agent", agent, False, caller))}


@router.get(
    "/teams/{team}",
    operation_id="teams.show",
    dependencies=requires("teams.show"),
    responses=responses(404, ok=documents.TeamShown),
)
def show_team(team: Team, state: State, who: Who) -> dict[str, Any]:
    """What the team is doing now, as for an agent."""
    return {
        "team": jsonable(service.show_actor(state.store, "team", team, runtime_caller(state, who)))
    }


@router.post(
    "/teams/{team}/pause",
    operation_id="teams.pause",
    dependencies=requires("teams.pause"),
    responses=responses(403, 404, ok=documents.TeamShown),
)
def pause_team(team: Team, state: State, who: Who) -> dict[str, Any]:
    """Pause the team: the turns of its roles and of the workflows it owns wait."""
    caller = runtime_caller(state, who)
    return {"team": jsonable(service.set_actor_paused(state.store, "team", team, True, caller))}


@router.post(
    "/teams/{team}/resume",
    operation_id="teams.resume",
    dependencies=requires("teams.resume"),
    responses=responses(403, 404, ok=documents.TeamShown),
)
def resume_team(team: Team, state: State, who: Who) -> dict[str, Any]:
    """Resume the team: the runs waiting for it are woken, higher priority first."""
    caller = runtime_caller(state, who)
    return {"team": jsonable(service.set_actor_paused(state.store, "team", team, False, caller))}


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
