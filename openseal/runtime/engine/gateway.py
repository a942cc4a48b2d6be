"""The skill gateway: may this model-proposed skill call run, here, now, for this principal?

A model only *proposes* tool calls; nothing it says grants authority. Every proposal is checked
against the pinned, compiled workflow:

=============================  ==========================================================
``unknown_skill``              the workflow does not use a skill of that name
``not_granted``                no binding grants the skill to the acting principal (an agent,
                               or one team role; a grant to the whole team does not count
                               for a member)
``not_allowed``                the turn does not list the skill
``above_risk_ceiling``         the skill's effect is above the agent's ``max_risk``
``above_binding_risk``         ...or above the granting binding's ``max_risk``
``effect_requires_proposal``   the skill changes something: it runs only through a proposal
                               and an approved action, never from a tool call
``invalid_arguments``          the arguments do not match the skill's input schema
``constraint_violated``        the arguments break a constraint of every granting binding
``run_not_running``            the run is no longer ``running`` in the turn's state
``budget_exhausted``           the run's ``tool_calls`` budget is spent
=============================  ==========================================================

:func:`check_call` is pure (the compiled documents only). :func:`check_run` and
:func:`check_budget` are asked inside the fenced transaction that records the call, so a
concurrent cancel or a replay cannot slip between the check and the record.

Why effects never run from a tool call: a proposal is a *declared state* of the workflow,
with canonical content and a hash an approver is bound to. A tool call is model output, and
model output can never create authority (DESIGN §5, invariant 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from openseal.compiler import EFFECT_ORDER, EvaluationError, evaluate
from openseal.compiler import expr as ex
from openseal.compiler import types as ty
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError
from openseal.runtime.engine import budgets
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Run

#: what one proposed tool call costs against the run's budgets
TOOL_CALL_COST: Mapping[str, int] = {"tool_calls": 1}


@dataclass(frozen=True)
class GatewayDecision:
    """The verdict on one proposed call; ``reason`` is written for the model and the operator."""

    allowed: bool
    reason_code: str | None = None
    reason: str = ""
    #: the binding whose grant admitted the call (``None`` when refused)
    granted_by: str | None = None

    @classmethod
    def allow(cls, granted_by: str | None) -> GatewayDecision:
        return cls(True, None, "", granted_by)

    @classmethod
    def refuse(cls, reason_code: str, reason: str) -> GatewayDecision:
        return cls(False, reason_code, reason)


@dataclass(frozen=True)
class SkillRequest:
    """One proposed call as the gateway sees it.

    ``actor`` is the acting principal as the workflow names it (``agent.clerk`` or
    ``team.procurement.role.researcher``); ``allowed`` the skill names the turn lists.
    """

    skill: str
    arguments: Mapping[str, Any]
    actor: str
    allowed: Sequence[str]


def risk(effect: str) -> int:
    """The risk level of an effect (``read`` is 0); unknown effects count as the highest."""
    try:
        return EFFECT_ORDER.index(effect)
    except ValueError:
        return len(EFFECT_ORDER)


# --------------------------------------------------------------------------- static checks


def check_call(workflow: CompiledWorkflow, request: SkillRequest) -> GatewayDecision:
    """Check a call against the compiled workflow, in a fixed order so the same call always
    gets the same reason: skill, grant, turn, agent ceiling, binding ceiling, effect, input
    schema, binding constraints."""
    name = request.skill
    entry = (workflow.document.get("skills") or {}).get(name)
    if not isinstance(entry, Mapping) or not entry.get("digest"):
        return GatewayDecision.refuse("unknown_skill", f"there is no skill `{name}` here")
    grants = member_grants(entry, request.actor)
    if not grants:
        return GatewayDecision.refuse(
            "not_granted", f"skill `{name}` is not granted to `{request.actor}`"
        )
    if name not in request.allowed:
        return GatewayDecision.refuse(
            "not_allowed", f"skill `{name}` is not one of the skills this turn may use"
        )
    document = workflow.dependency(f"skill.{name}")
    effect = str((document.get("spec") or {}).get("effect") or entry.get("effect") or "")
    ceiling = agent_max_risk(workflow, request.actor)
    if ceiling is not None and risk(effect) > risk(ceiling):
        return GatewayDecision.refuse(
            "above_risk_ceiling",
            f"`{name}` has effect `{effect}`, above the risk ceiling `{ceiling}` of "
            f"`{request.actor}`",
        )
    capped = [g for g in grants if _within_cap(effect, g)]
    if not capped:
        cap, binding = grants[0].get("max_risk"), grants[0].get("granted_by")
        return GatewayDecision.refuse(
            "above_binding_risk",
            f'`{name}` has effect `{effect}`, above `max_risk = "{cap}"` of binding `{binding}`',
        )
    if effect != "read":
        return GatewayDecision.refuse(
            "effect_requires_proposal",
            f"`{name}` has effect `{effect}`; it runs only through a proposal and an approved "
            "action",
        )
    problems = schema_problems(dict(request.arguments), document.get("inputs"))
    if problems:
        return GatewayDecision.refuse(
            "invalid_arguments", f"arguments of `{name}` are invalid: " + "; ".join(problems[:3])
        )
    return _first_fitting_grant(name, capped, request.arguments, document)


def member_grants(entry: Mapping[str, Any], actor: str) -> list[Mapping[str, Any]]:
    """The grants of a workflow's skill entry that cover ``actor`` itself.

    A grant covers the principal it names or, for a team role, the role's agent. A grant to
    the whole team is a separate thing and never covers one of its members.
    """
    team = actor.split(".role.", 1)[0] if ".role." in actor else None
    found = []
    for grant in entry.get("grants") or ():
        if not isinstance(grant, Mapping) or grant.get("actor") != actor:
            continue
        if not grant.get("granted_by") or not grant.get("grantee"):
            continue  # an ungranted use (only in partial builds)
        if team is not None and grant.get("grantee") == team:
            continue
        found.append(grant)
    return found


def _within_cap(effect: str, grant: Mapping[str, Any]) -> bool:
    cap = grant.get("max_risk")
    return cap is None or risk(effect) <= risk(str(cap))


def _first_fitting_grant(
    name: str,
    grants: Sequence[Mapping[str, Any]],
    arguments: Mapping[str, Any],
    document: Mapping[str, Any],
) -> GatewayDecision:
    """Allowed when every constraint of one grant holds; else the first grant's reason."""
    args = _with_defaults(arguments, document)
    refusals = []
    for grant in grants:
        refusal = _constraint_refusal(name, grant, args)
        if refusal is None:
            return GatewayDecision.allow(str(grant.get("granted_by")))
        refusals.append(refusal)
    return refusals[0]


def _constraint_refusal(
    name: str, grant: Mapping[str, Any], args: Mapping[str, Any]
) -> GatewayDecision | None:
    binding = grant.get("granted_by")
    for node in grant.get("constraints") or ():
        try:
            constraint = ex.from_json(node)
            holds = evaluate(constraint, {"args": dict(args)}) is True
        except (EvaluationError, ex.ExpressionFormatError) as exc:
            return GatewayDecision.refuse(
                "constraint_violated",
                f"a constraint of binding `{binding}` on `{name}` cannot be checked: {exc}",
            )
        if not holds:
            return GatewayDecision.refuse(
                "constraint_violated",
                f"arguments of `{name}` break the constraint `{ex.to_source(constraint)}` of "
                f"binding `{binding}`",
            )
    return None


def _with_defaults(arguments: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    raw = (document.get("spec") or {}).get("input")
    if raw is None:
        return dict(arguments)
    try:
        filled = ty.apply_defaults(dict(arguments), ty.from_json(raw))
    except ty.TypeFormatError:
        return dict(arguments)
    return dict(filled) if isinstance(filled, Mapping) else dict(arguments)


def schema_problems(value: Any, schema: Mapping[str, Any] | None) -> list[str]:
    """Every way ``value`` breaks the JSON Schema, each with where (``quantity: ...``)."""
    if not schema:
        return []
    validator = jsonschema.Draft202012Validator(dict(schema))
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        problems.append(f"{where}: {error.message}")
    return problems


def agent_max_risk(workflow: CompiledWorkflow, actor: str) -> str | None:
    """The ``max_risk`` of the agent behind ``actor`` (an agent or a team role)."""
    parts = actor.split(".")
    if parts[0] == "agent" and len(parts) == 2:
        agent = workflow.dependency(actor)
    elif parts[0] == "team" and len(parts) == 4 and parts[2] == "role":
        team = workflow.dependency(f"team.{parts[1]}")
        role = ((team.get("spec") or {}).get("role") or {}).get(parts[3]) or {}
        if not role.get("agent"):
            raise DefinitionError(f"team {parts[1]} has no role {parts[3]!r}")
        agent = workflow.dependency(str(role["agent"]), team)
    else:
        return None  # a team acting as a whole: its policy governs, not an agent ceiling
    value = (agent.get("spec") or {}).get("max_risk")
    return str(value) if value else "read"


# --------------------------------------------------------------------------- in-transaction checks


def check_run(run: Run, state: str) -> GatewayDecision:
    """The run must still be ``running`` in the state that proposed the call."""
    if run.status != RunStatus.RUNNING:
        return GatewayDecision.refuse(
            "run_not_running", f"run {run.id} is {run.status}; no skill runs for it now"
        )
    if run.current_state != state:
        return GatewayDecision.refuse(
            "run_not_running",
            f"run {run.id} is in state `{run.current_state}`, not `{state}` that proposed the call",
        )
    return GatewayDecision.allow(None)


def check_budget(limits: Mapping[str, int], used: Mapping[str, Any]) -> GatewayDecision:
    """One more tool call must fit the run's ``tool_calls`` budget."""
    reason = budgets.exceeded(limits, used, TOOL_CALL_COST)
    if reason is not None:
        return GatewayDecision.refuse("budget_exhausted", reason)
    return GatewayDecision.allow(None)


__all__ = [
    "TOOL_CALL_COST",
    "GatewayDecision",
    "SkillRequest",
    "agent_max_risk",
    "check_budget",
    "check_call",
    "check_run",
    "member_grants",
    "risk",
    "schema_problems",
]
