"""What the console asks the API beyond the plain resources: who the caller is and what it may
do, runs with their workflow names, a run's graph laid out with its current state, and an
approval with everything an approver must see.

Every view is computed from the runtime's service functions; the buttons the console shows
follow ``GET /me``, and the API refuses an operation anyway when the caller may not use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from openseal.api import documents
from openseal.api.auth import Caller
from openseal.api.capabilities import requires
from openseal.api.console.layout import lay_out
from openseal.api.errors import responses
from openseal.api.routes.common import (
    ApprovalStatusQuery,
    Id,
    Listed,
    RunStatusQuery,
    State,
    Who,
    next_after,
    scoped,
)
from openseal.api.state import ApiState
from openseal.compiler import EvaluationError, evaluate
from openseal.compiler import expr as ex
from openseal.errors import OpenSealError
from openseal.runtime import service
from openseal.runtime.store import DefinitionVersion, NotFound, Run
from openseal.wire import jsonable

router = APIRouter(tags=["console"], route_class=documents.Documented)

Ref = Annotated[str, Path(min_length=1, max_length=80, description="Approval id or proposal hash")]


@router.get("/me", operation_id="console.me", responses=responses(ok=documents.Me))
def who_am_i(state: State, who: Who) -> dict[str, Any]:
    """The calling principal, its roles and scopes, and for each operation whether this caller
    may use it here (``allowed``) and why not (``reason``): the capability's availability, then
    the role × operation table every route checks."""
    operations: dict[str, dict[str, Any]] = {}
    for capability in state.capabilities:
        for operation in capability.operations:
            reason = None if capability.available else capability.reason
            if reason is None and not who.grant.may(operation):
                roles = ", ".join(sorted(service.roles_for(operation)))
                reason = f"{who.principal} holds none of the roles {roles}"
            operations[operation] = {"allowed": reason is None, "reason": reason}
    decide = operations.get("approvals.decide")
    if decide is not None and decide["allowed"]:
        refusal = _decider_refusal(state, who)
        decide.update(allowed=refusal is None, reason=refusal)
    return {
        "principal": who.principal,
        "via_token": who.via_token,
        "roles": sorted(who.grant.roles),
        "scopes": sorted(who.grant.scopes),
        "approver_roles": _roles_of(state, who.principal),
        "operations": operations,
    }


def _roles_of(state: ApiState, principal: str) -> list[str]:
    authority = state.settings.authority
    if authority is None:
        return []
    return sorted(role for role, holders in authority.roles.items() if principal in holders)


def _decider_refusal(state: ApiState, who: Caller) -> str | None:
    """Why this caller can decide no approval at all here (None: it may decide some)."""
    authority = state.settings.authority
    if authority is None:
        return "no approval authority is configured"
    if not who.via_token:
        if not authority.local_operator:
            return "the approval authority enables no local operator"
        if not who.local:
            return "the local operator decides only from this machine (loopback, no proxy)"
        return None
    # a token granting ``approver`` may be named as ``role:approver``
    if (
        authority.roles
        and not _roles_of(state, who.principal)
        and "approver" not in who.grant.roles
    ):
        return f"{who.principal} holds no approver role"
    return None


@router.get(
    "/console/runs",
    operation_id="console.runs",
    dependencies=requires("runs.list"),
    responses=responses(422, ok=documents.ConsoleRuns),
)
def list_runs(
    state: State,
    who: Who,
    listing: Listed,
    status: RunStatusQuery = None,
    search: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> dict[str, Any]:
    """Runs, newest first, with their workflow, version, current state and what each waits
    for; of one status, workflow, or created since a moment, a page at a time (``after``
    ``next_after``); ``search`` finds the one run an id (or a unique prefix) names. The
    workflows that can be filtered on are the deployed ones."""
    versions: dict[str, DefinitionVersion] = {}
    if search is not None:
        found: Sequence[Run] = _searched(state, who, search.strip())
    else:
        found = service.list_runs(state.store, caller=scoped(who), **listing.filters(status))
    rows = [_row(run, _version(state, run, versions)) for run in found]
    deployed = service.governance.list_deployments(state.store)
    return {
        "runs": rows,
        "next_after": None if search is not None else next_after(found, listing.limit),
        "workflows": sorted(d.name for d in deployed if d.kind == "workflow"),
    }


def _searched(state: ApiState, who: Caller, text: str) -> list[Run]:
    """The run ``text`` names (an id, its handle or a unique prefix; an ambiguous one is
    refused with the candidates), or none."""
    try:
        run_id = service.complete_id(state.store, "run", text)
        return [service.show_run(state.store, run_id, scoped(who)).run]
    except NotFound:
        return []


@router.get(
    "/console/approvals",
    operation_id="console.approvals",
    dependencies=requires("approvals.list"),
    responses=responses(422, ok=documents.ConsoleApprovals),
)
def list_approvals(
    state: State, who: Who, listing: Listed, status: ApprovalStatusQuery = None
) -> dict[str, Any]:
    """The approvals inbox: newest first, a page at a time, each with what it asks for at a
    glance (skill, spend, plain arguments) from its verified proposal."""
    found = service.list_approvals(state.store, caller=scoped(who), **listing.filters(status))
    return {
        **listing.page("approvals", found),
        "glance": service.approval_glances(state.store, found),
    }


def _version(state: ApiState, run: Run, seen: dict[str, DefinitionVersion]) -> DefinitionVersion:
    found = seen.get(run.workflow_digest)
    if found is None:
        found = seen[run.workflow_digest] = service.get_version(state.store, run.workflow_digest)
    return found


def _row(run: Run, version: DefinitionVersion) -> dict[str, Any]:
    return {
        "id": run.id,
        "objective_id": run.objective_id,
        "status": str(run.status),
        "reason": service.waiting_reason(run),
        "workflow": version.name,
        "version": version.digest,
        "current_state": run.current_state,
        "revision": run.revision,
        "created_at": jsonable(run.created_at),
        "updated_at": jsonable(run.updated_at),
    }


@router.get(
    "/console/runs/{run_id}",
    operation_id="console.run",
    dependencies=requires("runs.show"),
    responses=responses(404, ok=documents.ConsoleRun),
)
def show_run(run_id: Id, state: State, who: Who) -> dict[str, Any]:
    """One run with its graph laid out for drawing, the state it is in, the states it went
    through, its turns and its actions."""
    view = service.show_run(state.store, run_id, scoped(who))
    version = service.get_version(state.store, view.run.workflow_digest)
    trail = view.run.context.get("trail") or []
    actions = service.list_actions(state.store, run_id=view.run.id, limit=1000)
    return {
        "run": _row(view.run, version),
        "budget_used": jsonable(view.run.budget_used),
        "position": {"previous": view.previous, "current": view.current, "next": list(view.next)},
        "trail": [str(s) for s in trail] if isinstance(trail, list) else [],
        "outputs": _outputs(view.run.context),
        "actions": jsonable(actions),
        "graph": lay_out(version.document.get("graph") or {}).to_dict(),
        "related": _related(state, who, view.run),
    }


def _related(state: ApiState, who: Caller, run: Run) -> dict[str, Any]:
    """The records a person follows from a run: the objective, the run that started it, its
    pending approvals, its requests to other agents, the runs it started, and the event it
    waits for."""
    caller = scoped(who)
    waiting: Mapping[str, Any] = run.waiting or {}
    approvals = service.list_approvals(state.store, run_id=run.id, status="pending", caller=caller)
    requests = service.list_agent_requests(state.store, run_id=run.id, limit=100, caller=caller)
    return {
        "objective_id": run.objective_id,
        "parent_run_id": run.parent_run_id,
        "approvals": [{"id": a.id, "status": str(a.status)} for a in approvals],
        "agent_requests": [
            {
                "id": r.id,
                "callee": r.callee,
                "status": str(r.status),
                "child_run_id": r.child_run_id,
            }
            for r in requests
        ],
        "child_runs": [
            {"id": child.id, "status": str(child.status)}
            for child in service.child_runs(state.store, run.id, caller)
        ],
        "event": waiting.get("name") if waiting.get("kind") == "event" else None,
    }


def _outputs(context: Mapping[str, Any]) -> dict[str, Any]:
    """What each state produced (turn outputs among them), as the run's context holds it."""
    states = context.get("states")
    return dict(states) if isinstance(states, Mapping) else {}


@router.get(
    "/console/approvals/{ref}",
    operation_id="console.approval",
    dependencies=requires("approvals.show"),
    responses=responses(404, ok=documents.ConsoleApproval),
)
def show_approval(ref: Ref, state: State, who: Who) -> dict[str, Any]:
    """The approval with the exact proposal, its hash, the skill with the grants that allow it
    (each constraint evaluated against the proposal's arguments), the budget the run has spent,
    and whether this caller may decide it."""
    view = service.show_approval(state.store, ref, scoped(who))
    approval, document = view.approval, view.proposal.document
    skill = document.get("skill") or {}
    workflow = document.get("workflow") or {}
    run = service.show_run(state.store, approval.run_id).run
    return {
        "approval": jsonable(approval),
        "proposal": jsonable(document),
        "hash": approval.proposal_hash,
        "verified": view.proposal.verified,
        "unverified_reason": view.proposal.problem,
        "skill": _skill(state, str(workflow.get("version") or ""), skill, document),
        "run": {"id": run.id, "status": str(run.status), "budget_used": jsonable(run.budget_used)},
        **_may_decide(state, who, view),
    }


def _may_decide(state: ApiState, who: Caller, view: service.ApprovalView) -> dict[str, Any]:
    """Whether this caller may decide the approval and, when not, why (the page offers no
    button it would refuse, and says so)."""
    authority = state.settings.authority
    if not who.grant.may("approvals.decide") or authority is None:
        why = "your token does not grant deciding approvals" if authority else None
        return {"may_decide": False, "why_not": why or "no approval authority is configured"}
    refusal = _decider_refusal(state, who)
    if refusal is not None:
        return {"may_decide": False, "why_not": refusal}
    approval = view.approval
    if not authority.may_decide(who.principal, approval.approvers, who.grant.roles):
        why = f"You ({who.principal}) are not among this approval's approvers."
        return {"may_decide": False, "why_not": why}
    if view.excluded == who.principal:
        why = (
            f"You ({who.principal}) created run {approval.run_id}: with separation of duties "
            "another approver decides its proposal."
        )
        return {"may_decide": False, "why_not": why}
    return {"may_decide": True, "why_not": None}


def _skill(
    state: ApiState, version: str, skill: Mapping[str, Any], document: Mapping[str, Any]
) -> dict[str, Any]:
    name = str(skill.get("name") or "")
    found: dict[str, Any] = {"name": name, "digest": skill.get("digest"), "grants": []}
    try:
        workflow = service.get_version(state.store, version).document
    except OpenSealError:
        return found
    entry = (workflow.get("skills") or {}).get(name) or {}
    found["effect"] = entry.get("effect")
    scope = {"args": document.get("args") or {}}
    actor = document.get("actor")
    for grant in entry.get("grants") or ():
        if grant.get("actor") not in (None, actor):
            continue
        found["grants"].append(
            {
                "granted_by": grant.get("granted_by"),
                "grantee": grant.get("grantee"),
                "max_risk": grant.get("max_risk"),
                "approval": grant.get("approval"),
                "constraints": [_constraint(c, scope) for c in grant.get("constraints") or ()],
            }
        )
    return found


def _constraint(node: object, scope: Mapping[str, object]) -> dict[str, Any]:
    try:
        expression = ex.from_json(node)
    except ex.ExpressionFormatError:
        return {"source": "?", "satisfied": None}
    try:
        satisfied: bool | None = evaluate(expression, scope) is True
    except EvaluationError:
        satisfied = None
    return {"source": ex.to_source(expression), "satisfied": satisfied}
