"""What a draft may build on: the existing definitions, summarised for the model.

For every compiled definition: its kind, name and signature — a skill's effect (its risk
level), approval, input and output types; an agent's model and risk ceiling; a team's roles and
policy; a binding's grant; a workflow's owner and inputs; a model profile's name only (never a
credential or an endpoint). Governance definitions are listed whole: they are the policy a
filed change is reviewed under.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from openseal.compiler import EFFECT_ORDER

Document = Mapping[str, Any]


def catalogue(documents: Mapping[str, Document]) -> list[dict[str, Any]]:
    """One entry per definition, sorted by ``kind.name``."""
    return [_entry(documents[key]) for key in sorted(documents)]


def governance_policy(documents: Mapping[str, Document]) -> list[dict[str, Any]]:
    """The governance definitions among ``documents`` (name and spec)."""
    return [
        {"name": doc.get("name"), **dict(doc.get("spec") or {})}
        for key, doc in sorted(documents.items())
        if key.startswith("governance.")
    ]


def render_catalogue(documents: Mapping[str, Document]) -> str:
    """The catalogue as compact JSON lines, one definition per line."""
    entries = catalogue(documents)
    if not entries:
        return "(no existing definitions)"
    return "\n".join(json.dumps(e, sort_keys=True, ensure_ascii=False) for e in entries)


def _entry(doc: Document) -> dict[str, Any]:
    kind, name = str(doc.get("kind")), str(doc.get("name"))
    spec: Mapping[str, Any] = doc.get("spec") or {}
    describe = _SIGNATURES.get(kind)
    entry: dict[str, Any] = {"kind": kind, "name": name, "reference": f"{kind}.{name}"}
    if describe is not None:
        entry.update({k: v for k, v in describe(doc, spec).items() if v not in (None, [], {})})
    return entry


def _skill(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    effect = spec.get("effect")
    return {
        "description": spec.get("description"),
        "effect": effect,
        "risk": f"{EFFECT_ORDER.index(effect) + 1} of {len(EFFECT_ORDER)}"
        if effect in EFFECT_ORDER
        else None,
        "approval": spec.get("approval"),
        "input": doc.get("inputs"),
        "output": doc.get("outputs"),
    }


def _agent(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "description": spec.get("description"),
        "model": spec.get("model"),
        "max_risk": spec.get("max_risk"),
        "budget": _set_fields(spec.get("budget")),
    }


def _team(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    roles = spec.get("role") or {}
    policy = dict(spec.get("policy") or {})
    policy["budget"] = _set_fields(policy.get("budget"))
    return {
        "description": spec.get("description"),
        "roles": {role: (body or {}).get("agent") for role, body in sorted(roles.items())},
        "policy": policy,
    }


def _binding(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "skill": spec.get("skill"),
        "to": spec.get("to"),
        "max_risk": spec.get("max_risk"),
        "approval": spec.get("approval"),
        "constraints": len(spec.get("constraints") or ()),
    }


def _workflow(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    inputs = spec.get("input") or {}
    return {
        "description": spec.get("description"),
        "owner": spec.get("owner"),
        "inputs": {name: (body or {}).get("type") for name, body in sorted(inputs.items())},
        "states": sorted((spec.get("state") or {}).keys()),
    }


def _runbook(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"description": spec.get("description"), "inputs": doc.get("inputs")}


def _model(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"provider": spec.get("provider")}


def _governance(doc: Document, spec: Mapping[str, Any]) -> dict[str, Any]:
    return dict(spec)


def _set_fields(budget: object) -> dict[str, Any]:
    if not isinstance(budget, Mapping):
        return {}
    return {k: v for k, v in budget.items() if v is not None}


_SIGNATURES: dict[str, Callable[[Document, Mapping[str, Any]], dict[str, Any]]] = {
    "skill": _skill,
    "agent": _agent,
    "team": _team,
    "binding": _binding,
    "workflow": _workflow,
    "runbook": _runbook,
    "model": _model,
    "governance": _governance,
}
