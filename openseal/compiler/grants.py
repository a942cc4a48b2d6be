"""Principals (who acts) and grants (what they may call), shared by resolve and the checks.

A principal is written as a reference and normalised to a string:
``agent.<name>``, ``team.<name>`` or ``team.<name>.role.<role>``. A grant to a
team and a grant to one of its roles are different things: neither implies
the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from openseal.compiler import expr as ex
from openseal.compiler.decode import Definition
from openseal.compiler.ir import Analysis, Grant
from openseal.compiler.model import (
    EFFECT_ORDER,
    AgentSpec,
    BindingSpec,
    Effect,
    SkillSpec,
    TeamSpec,
)


def principal(ref: ex.Ref | None) -> str | None:
    """The normal form of an agent, team or team-role reference; ``None`` for anything else."""
    if ref is None or not all(isinstance(p, str) for p in ref.path):
        return None
    path = [str(p) for p in ref.path]
    if ref.root == "agent" and len(path) == 1:
        return f"agent.{path[0]}"
    if ref.root == "team" and len(path) == 1:
        return f"team.{path[0]}"
    if ref.root == "team" and len(path) == 3 and path[1] == "role":
        return f"team.{path[0]}.role.{path[2]}"
    return None


def is_role(name: str) -> bool:
    return name.startswith("team.") and ".role." in name


def team_of(name: str) -> str:
    """``team.procurement.role.buyer`` → ``team.procurement``."""
    return name.split(".role.", 1)[0]


def principal_exists(name: str, definitions: Mapping[str, Definition]) -> bool:
    if not is_role(name):
        return name in definitions
    team = definitions.get(team_of(name))
    return team is not None and isinstance(team.spec, TeamSpec) and _role(name) in team.spec.role


def _role(name: str) -> str:
    return name.rsplit(".", 1)[1]


def acting_agent(name: str, analysis: Analysis) -> Definition | None:
    """The agent behind a principal: the agent itself, or the agent of a team role."""
    if name.startswith("agent."):
        found = analysis.get(name)
    elif is_role(name):
        team = analysis.get(team_of(name))
        if team is None or not isinstance(team.spec, TeamSpec):
            return None
        role = team.spec.role.get(_role(name))
        agent = principal(role.agent) if role is not None else None
        found = analysis.get(agent) if agent is not None else None
    else:
        return None
    return found if found is not None and isinstance(found.spec, AgentSpec) else None


def skill_key(ref: ex.Ref | None) -> str | None:
    """``skill.x`` for a reference to a skill (whether or not it exists)."""
    if ref is None or ref.root != "skill" or len(ref.path) != 1:
        return None
    return f"skill.{ref.path[0]}"


def skill_spec(ref: ex.Ref | None, analysis: Analysis) -> SkillSpec | None:
    key = skill_key(ref)
    found = analysis.get(key) if key is not None else None
    return found.spec if found is not None and isinstance(found.spec, SkillSpec) else None


def risk(effect: Effect) -> int:
    return EFFECT_ORDER.index(effect)


def build_grants(definitions: Mapping[str, Definition]) -> tuple[Grant, ...]:
    """One grant per binding whose skill and grantee both exist, in binding-name order."""
    grants: list[Grant] = []
    for binding in _bindings(definitions.values()):
        spec = binding.spec
        assert isinstance(spec, BindingSpec)
        skill = skill_key(spec.skill)
        grantee = principal(spec.to)
        if skill is None or skill not in definitions or grantee is None:
            continue
        if not principal_exists(grantee, definitions):
            continue
        grants.append(
            Grant(
                binding=binding.name,
                skill=skill,
                grantee=grantee,
                max_risk=spec.max_risk,
                constraints=tuple(spec.constraints),
                approval=spec.approval,
                span=binding.name_span,
            )
        )
    return tuple(grants)


def _bindings(definitions: Iterable[Definition]) -> list[Definition]:
    found = [d for d in definitions if isinstance(d.spec, BindingSpec)]
    return sorted(found, key=lambda d: d.name)
