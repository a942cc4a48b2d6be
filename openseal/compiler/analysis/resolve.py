"""Resolve stage: one symbol table for a project, every reference checked against it.

``resolve(definitions)`` builds the :class:`~openseal.compiler.analysis.ir.Analysis`
(``kind.name`` → definition, plus the grants made by bindings) and reports:

* ``OS201`` a reference to something that is not defined, or an expression
  root or name that is not in scope (with a close match when there is one);
* ``OS202`` a reference to the wrong kind of thing (``owner = skill.x``).

Transition targets (``start``, ``next``) and runbook step names are the graph
checks' (``OS401``/``OS407``), so they are not reported twice. Attributes
below a declared name (``input.request.colour``) are the type checker's.

>>> analysis, diagnostics = resolve(load_definitions([path]).definitions)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from openseal.compiler.analysis.expression_scopes import (
    check_reference,
    expression_sites,
    proposal_names,
)
from openseal.compiler.analysis.grants import build_grants
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    KIND_MODELS,
    AgentSpec,
    BindingSpec,
    BranchWork,
    RunbookSpec,
    SkillSpec,
    State,
    TeamSpec,
    TriggerSpec,
    WorkflowSpec,
)
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex

DEFINITION_KINDS = tuple(KIND_MODELS)
_NOUNS = {
    "model": "a model",
    "skill": "a skill",
    "agent": "an agent",
    "team": "a team",
    "role": "a team role",
    "binding": "a binding",
    "trigger": "a trigger",
    "workflow": "a workflow",
    "runbook": "a runbook",
    "state": "a state",
    "proposal": "a proposal",
    "step": "a step",
    "input": "an input",
}
_EXAMPLES = {"role": "team.<team>.role.<role>"}
#: What a field whose reference failed to parse holds; its parse error is already reported.
_PLACEHOLDER = ex.Ref("invalid", ())

ACTORS = ("agent", "team", "role")


def resolve(
    definitions: Sequence[Definition], *, broken: Collection[str] = ()
) -> tuple[Analysis, list[Diagnostic]]:
    """Build the symbol table of one project and check every reference in it.

    ``broken`` names definitions (``kind.name``) that are written but did not
    decode; their own diagnostics say why, so a reference to one is not
    reported as undefined.
    """
    table: dict[str, Definition] = {}
    for definition in definitions:
        table.setdefault(definition.key, definition)  # duplicates are OS105 (load)
    resolver = _Resolver(table, frozenset(broken))
    for key in sorted(table):
        resolver.definition(table[key])
    return Analysis(table, build_grants(table)), resolver.diagnostics


def nouns(kinds: Sequence[str]) -> str:
    """``("agent", "team")`` → ``"an agent or a team"``."""
    words = [_NOUNS[k] for k in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def kind_of(ref: ex.Ref) -> str | None:
    """The kind a reference is written as (``role`` for ``team.t.role.r``), if it is one."""
    if ref.root not in DEFINITION_KINDS:
        return None
    if ref.root == "team" and len(ref.path) == 3 and ref.path[1] == "role":
        return "role"
    return ref.root


class _Resolver:
    def __init__(self, table: Mapping[str, Definition], broken: frozenset[str]) -> None:
        self.table = table
        self.broken = broken
        self.diagnostics: list[Diagnostic] = []

    # ------------------------------------------------------------------ per kind

    def definition(self, definition: Definition) -> None:
        spec = definition.spec
        for ref, allowed, field in _references(definition):
            if isinstance(spec, TriggerSpec) and ref.root == "runbook":
                self.runbook_trigger(ref)
            else:
                self.expect(ref, allowed, field)
        if isinstance(spec, WorkflowSpec):
            self.proposals(spec)
        for site in expression_sites(definition):
            for ref in ex.references(site.expr):
                found = check_reference(ref, site.scope)
                if found is not None:
                    self.diagnostics.append(found)

    def proposals(self, spec: WorkflowSpec) -> None:
        declared = proposal_names(spec)
        for state_name in sorted(spec.state):
            for ref in _proposal_references(spec.state[state_name]):
                self.expect_proposal(ref, declared)

    # ------------------------------------------------------------------ references

    def expect(self, ref: ex.Ref, allowed: tuple[str, ...], field: str) -> None:
        if ref == _PLACEHOLDER:
            return
        kind = kind_of(ref)
        wanted = nouns(allowed)
        if kind is None:
            if ref.root in _NOUNS:
                message = f"`{field}` must be {wanted}, but `{ref.dotted}` is {_NOUNS[ref.root]}"
                self.report("OS202", message, ref)
            else:
                message = f"`{ref.dotted}` does not name {wanted}"
                self.report("OS201", message, ref, self.suggest(ref, allowed))
        elif kind not in allowed:
            message = f"`{field}` must be {wanted}, but `{ref.dotted}` is {_NOUNS[kind]}"
            self.report("OS202", message, ref)
        elif kind == "role":
            self.expect_role(ref, allowed)
        elif len(ref.path) != 1:
            examples = " or ".join(f"`{_EXAMPLES.get(k, k + '.<name>')}`" for k in allowed)
            message = f"`{ref.dotted}` is not a reference to {wanted}; write {examples}"
            self.report("OS201", message, ref, self.suggest(ref, allowed))
        elif f"{ref.root}.{ref.path[0]}" in self.broken:
            return  # the definition's own errors are reported where it is written
        elif f"{ref.root}.{ref.path[0]}" not in self.table:
            message = f"`{ref.dotted}` is not defined"
            self.report("OS201", message, ref, self.suggest(ref, allowed))

    def runbook_trigger(self, ref: ex.Ref) -> None:
        message = (
            f"a trigger starts a workflow, but `{ref.dotted}` is a runbook: runbooks run in one "
            "process without the store, so nothing could record a firing exactly once"
        )
        suggestion = "start a workflow whose action calls a skill with `adapter { runbook = ... }`"
        self.report("OS202", message, ref, suggestion)

    def expect_role(self, ref: ex.Ref, allowed: tuple[str, ...]) -> None:
        team_key = f"team.{ref.path[0]}"
        team = self.table.get(team_key)
        if team_key in self.broken:
            return
        if team is None or not isinstance(team.spec, TeamSpec):
            message = f"`{team_key}` is not defined"
            self.report("OS201", message, ref, self.suggest(ref, allowed))
        elif ref.path[2] not in team.spec.role:
            roles = ", ".join(f"`{r}`" for r in sorted(team.spec.role)) or "none"
            message = f"team `{ref.path[0]}` has no role `{ref.path[2]}`; its roles are {roles}"
            self.report("OS201", message, ref, self.suggest(ref, allowed))

    def expect_proposal(self, ref: ex.Ref, declared: Mapping[str, str]) -> None:
        if ref == _PLACEHOLDER:
            return
        listing = ", ".join(f"`proposal.{p}`" for p in sorted(declared)) or "none"
        if ref.root != "proposal":
            code = "OS202" if ref.root in _NOUNS else "OS201"
            what = f", but `{ref.dotted}` is {_NOUNS[ref.root]}" if code == "OS202" else ""
            message = f"`proposal` must name a proposal of this workflow{what}"
            self.report(code, message, ref, f"proposals here: {listing}")
            return
        name = ref.path[0] if len(ref.path) == 1 else None
        if not isinstance(name, str) or name not in declared:
            message = (
                f"no proposal state of this workflow drafts `{ref.dotted}`; proposals: {listing}"
            )
            candidates = [f"proposal.{p}" for p in declared]
            self.report("OS201", message, ref, did_you_mean(ref.dotted, candidates))

    def suggest(self, ref: ex.Ref, allowed: tuple[str, ...]) -> str | None:
        return did_you_mean(ref.dotted, self.candidates(allowed))

    def candidates(self, allowed: tuple[str, ...]) -> list[str]:
        found = [key for key, d in self.table.items() if d.kind in allowed]
        if "role" in allowed:
            for definition in self.table.values():
                if isinstance(definition.spec, TeamSpec):
                    found += [f"{definition.key}.role.{r}" for r in definition.spec.role]
        return sorted(found)

    def report(self, code: str, message: str, ref: ex.Ref, suggestion: str | None = None) -> None:
        self.diagnostics.append(error(code, message, ref.span, suggestion=suggestion))


# --------------------------------------------------------------------------- what refers to what

_Expected = tuple[ex.Ref, tuple[str, ...], str]


def _references(definition: Definition) -> Iterator[_Expected]:
    """Every definition reference of ``definition``: (reference, allowed kinds, field name)."""
    spec = definition.spec
    if isinstance(spec, AgentSpec):
        yield spec.model, ("model",), "model"
    elif isinstance(spec, TeamSpec):
        for role in sorted(spec.role):
            yield spec.role[role].agent, ("agent",), f"role.{role}.agent"
    elif isinstance(spec, BindingSpec):
        yield spec.skill, ("skill",), "skill"
        yield spec.to, ACTORS, "to"
    elif isinstance(spec, SkillSpec):
        adapters = [spec.adapter]
        if spec.idempotency is not None and spec.idempotency.lookup is not None:
            adapters.append(spec.idempotency.lookup)
        for adapter in adapters:
            if adapter.runbook is not None:
                yield adapter.runbook.runbook, ("runbook",), "runbook"
    elif isinstance(spec, WorkflowSpec):
        yield spec.owner, ("agent", "team"), "owner"
        for state_name in sorted(spec.state):
            yield from _state_references(spec.state[state_name])
    elif isinstance(spec, TriggerSpec):
        yield spec.workflow, ("workflow",), "workflow"
    elif isinstance(spec, RunbookSpec):
        for step_name in sorted(spec.step):
            step = spec.step[step_name]
            if step.skill is not None:
                yield step.skill, ("skill",), "skill"


def _state_references(state: State) -> Iterator[_Expected]:
    for proposal in (state.proposal or {}).values():
        yield proposal.skill, ("skill",), "skill"
        if proposal.actor is not None:
            yield proposal.actor, ACTORS, "actor"
    works: list[BranchWork | State] = [state]
    if state.parallel is not None:
        works += [state.parallel.branch[b] for b in sorted(state.parallel.branch)]
    if state.for_each is not None:
        works.append(state.for_each.do)
    for work in works:
        yield from _work_references(work)


def _work_references(work: BranchWork | State) -> Iterator[_Expected]:
    if work.turn is not None:
        yield work.turn.agent, ("agent", "role"), "agent"
        for position, skill in enumerate(work.turn.skills):
            yield skill, ("skill",), f"skills[{position}]"
    if work.action is not None:
        if work.action.skill is not None:
            yield work.action.skill, ("skill",), "skill"
        if work.action.actor is not None:
            yield work.action.actor, ACTORS, "actor"
    if work.delegate is not None:
        yield work.delegate.to, ACTORS, "to"


def _proposal_references(state: State) -> Iterator[ex.Ref]:
    if state.approval is not None:
        yield state.approval.proposal
    actions = [state.action]
    if state.parallel is not None:
        actions += [state.parallel.branch[b].action for b in sorted(state.parallel.branch)]
    if state.for_each is not None:
        actions.append(state.for_each.do.action)
    for action in actions:
        if action is not None and action.proposal is not None:
            yield action.proposal
