"""Principals (who acts) and grants (what they may call), shared by resolve and the checks.

A principal is written as a reference and normalised to a string:
``agent.<name>``, ``team.<name>`` or ``team.<name>.role.<role>``. A grant to a
team and a grant to one of its roles are different things: neither implies
the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from openseal.compiler.analysis.ir import Analysis, Grant
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    EFFECT_ORDER,
    AgentSpec,
    BindingSpec,
    BranchWork,
    Effect,
    ProposalStep,
    SkillSpec,
    State,
    TeamSpec,
    WorkflowSpec,
)
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span


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


# --------------------------------------------------------------------------- calls


@dataclass(frozen=True, slots=True)
class Call:
    """One use of a skill by a principal in a workflow state (both known to exist)."""

    state: str
    #: for messages: "the turn", "proposal `order`", "the action"
    what: str
    skill: str
    spec: SkillSpec
    actor: str
    span: Span


@dataclass(frozen=True, slots=True)
class ActionCall:
    call: Call
    #: the proposal the action sends, or None for a direct skill call
    proposal: str | None


def workflows(analysis: Analysis) -> Iterator[tuple[Definition, WorkflowSpec]]:
    for definition in sorted(analysis.of_kind("workflow"), key=lambda d: d.name):
        if isinstance(definition.spec, WorkflowSpec):
            yield definition, definition.spec


def _call(
    analysis: Analysis, state: str, what: str, skill: ex.Ref | None, actor: ex.Ref, span: Span
) -> Call | None:
    spec = skill_spec(skill, analysis)
    key = skill_key(skill)
    name = principal(actor)
    if spec is None or key is None or name is None:
        return None
    if not principal_exists(name, analysis.definitions):
        return None
    return Call(state, what, key, spec, name, span)


def works_of(state: State) -> list[BranchWork | State]:
    works: list[BranchWork | State] = [state]
    if state.parallel is not None:
        works += [state.parallel.branch[b] for b in sorted(state.parallel.branch)]
    if state.for_each is not None:
        works.append(state.for_each.do)
    return works


def proposals(spec: WorkflowSpec) -> dict[str, ProposalStep]:
    found: dict[str, ProposalStep] = {}
    for name in sorted(spec.state):
        for proposal_name, proposal in (spec.state[name].proposal or {}).items():
            found.setdefault(proposal_name, proposal)
    return found


def workflow_calls(spec: WorkflowSpec, analysis: Analysis) -> Iterator[Call]:
    """Every skill use that needs a grant: turn skills, proposals, and actions
    that call a skill or that name an actor other than their proposal's."""
    drafted = proposals(spec)
    for name in sorted(spec.state):
        state = spec.state[name]
        for proposal_name, proposal in sorted((state.proposal or {}).items()):
            actor = proposal.actor or spec.owner
            what = f"proposal `{proposal_name}`"
            found = _call(analysis, name, what, proposal.skill, actor, proposal.skill.span)
            if found is not None:
                yield found
        for work in works_of(state):
            if work.turn is not None:
                for skill in work.turn.skills:
                    found = _call(analysis, name, "the turn", skill, work.turn.agent, skill.span)
                    if found is not None:
                        yield found
            action = work.action
            if action is None or (action.skill is None and action.actor is None):
                continue
            draft = _drafted(drafted, action.proposal)
            used = action.skill or (draft.skill if draft else None)
            actor = action.actor or spec.owner
            span = (action.skill or action.actor or actor).span
            found = _call(analysis, name, "the action", used, actor, span)
            if found is not None:
                yield found


def _drafted(drafted: dict[str, ProposalStep], ref: ex.Ref | None) -> ProposalStep | None:
    if ref is None or len(ref.path) != 1:
        return None
    return drafted.get(str(ref.path[0]))


def action_calls(spec: WorkflowSpec, analysis: Analysis) -> Iterator[ActionCall]:
    """Every action of the workflow (in states, parallel branches and for_each items)."""
    drafted = proposals(spec)
    for name in sorted(spec.state):
        for work in works_of(spec.state[name]):
            action = work.action
            if action is None:
                continue
            proposal = _drafted(drafted, action.proposal)
            skill = action.skill or (proposal.skill if proposal else None)
            actor = action.actor or (proposal.actor if proposal else None) or spec.owner
            span = (action.skill or action.proposal or actor).span
            found = _call(analysis, name, "the action", skill, actor, span)
            if found is not None:
                proposal_name = (
                    str(action.proposal.path[0]) if proposal and action.proposal else None
                )
                yield ActionCall(found, proposal_name)


def needs_approval(analysis: Analysis, spec: WorkflowSpec, call: Call) -> str | None:
    """Why ``call`` needs an approval first, or None when it does not."""
    threshold: Effect = "external"
    where = "the default policy"
    owner = principal(spec.owner)
    team = analysis.get(owner) if owner is not None and owner.startswith("team.") else None
    if team is not None and isinstance(team.spec, TeamSpec):
        threshold = team.spec.policy.approval_required_from
        where = f"the policy of `{team.key}`"
    if risk(call.spec.effect) >= risk(threshold):
        return (
            f"its effect `{call.spec.effect}` needs an approval under {where}, "
            f"which requires one from `{threshold}` up"
        )
    if call.spec.approval is not None and call.spec.approval.required:
        return f"`{call.skill}` requires approval"
    for grant in analysis.grants_for(call.actor, call.skill):
        if grant.approval is not None and grant.approval.required:
            return f"binding `{grant.binding}` requires approval"
    return None


def approval_states(spec: WorkflowSpec, proposal: str) -> set[str]:
    """The approval states that decide on ``proposal``."""
    found: set[str] = set()
    for name, state in spec.state.items():
        ref = state.approval.proposal if state.approval is not None else None
        if ref is not None and ref.root == "proposal" and ref.path == (proposal,):
            found.add(name)
    return found
