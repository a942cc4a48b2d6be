"""Emit stage: one content-addressed JSON document per definition.

Every document has the same frame::

    {"apiVersion": "openseal/v1", "kind": ..., "name": ...,
     "spec": <the normalised spec>, "dependencies": {"skill.x": "sha256:...", ...}}

plus, per kind, what the runtime needs without re-reading any source: the state
graph of a workflow, the step DAG of a runbook, the skills each uses and the
bindings that grant them, budgets, and inputs/outputs lowered to JSON Schema.

The version id of a document is the sha256 of its RFC 8785 canonical bytes.
No span, file path or timestamp is part of it, so reformatting a file, moving
a definition to another file or rewriting it in the other syntax keeps its
digest. A document names each definition it uses by digest, so a change to a
skill, agent, team, binding or model changes the digest of every workflow
that uses it; documents are therefore built in dependency order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

import networkx as nx
from pydantic import BaseModel

from openseal.canonical import canonical_bytes, sha256_digest
from openseal.compiler.analysis.build import Graphs
from openseal.compiler.analysis.ir import Analysis, RunbookGraph
from openseal.compiler.analysis.ir import WorkflowGraph as BuiltGraph
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    KIND_MODELS,
    LATER_KINDS,
    Action,
    AgentSpec,
    BindingSpec,
    BranchWork,
    Budget,
    Input,
    ModelProfile,
    Output,
    RunbookSpec,
    SkillSpec,
    State,
    TeamSpec,
    WorkflowSpec,
)
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.output.document import CompiledDocument, Document
from openseal.contract import StateEntry, StateSettings, TransitionEntry, WorkflowGraph
from openseal.errors import CompileError

API_VERSION = "openseal/v1"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: the most of a kind's first document its later documents are deflated against (the window)
DICTIONARY_BYTES = 32 * 1024


class UnwritableValue(CompileError):
    """A definition holds a value its canonical JSON cannot carry."""

    def __init__(self, definition: Definition, reason: str) -> None:
        super().__init__(f"{definition.name_span}: {definition.key}: {reason}")
        self.span = definition.name_span
        self.reason = f"`{definition.key}`: {reason}"


def emit(analysis: Analysis, graphs: Graphs) -> dict[str, CompiledDocument]:
    """Compile every definition of ``analysis`` into a document, keyed by ``kind.name``.

    Raises :class:`UnwritableValue` (a :class:`~openseal.errors.CompileError`) only
    for a value JSON cannot carry exactly (NaN, an integer beyond ±2**53-1).
    """
    definitions = dict(sorted(analysis.definitions.items()))
    dependencies = {key: dependencies_of(d, analysis) for key, d in definitions.items()}
    digests: dict[str, str] = {}
    out: dict[str, CompiledDocument] = {}
    #: per kind, the canonical bytes its documents are deflated against: its first document's
    dictionaries: dict[str, bytes] = {}
    for group in _dependency_order(dependencies):
        # Members of a cycle (a skill whose runbook calls it back) cannot name
        # each other's final digest; they name each other's content instead.
        shallow = _shallow_digests(group, definitions, analysis, graphs) if len(group) > 1 else {}
        for key in group:
            lookup = {**digests, **{k: v for k, v in shallow.items() if k != key}}
            document = build_document(definitions[key], analysis, graphs, lookup, dependencies[key])
            compiled = _compiled(definitions[key], document, dictionaries)
            digests[key] = compiled.digest
            out[key] = compiled
    return out


def _compiled(
    definition: Definition, document: Document, dictionaries: dict[str, bytes]
) -> CompiledDocument:
    try:
        canonical = canonical_bytes(document)
    except CompileError as exc:
        raise UnwritableValue(definition, str(exc)) from exc
    # Deflate reaches back at most 32 KiB, so a longer first document gives its tail.
    dictionary = dictionaries.setdefault(definition.kind, canonical[-DICTIONARY_BYTES:])
    return CompiledDocument.of(
        definition.kind,
        definition.name,
        canonical,
        sha256_digest(canonical),
        definition.span,
        dictionary,
    )


def _shallow_digests(
    group: list[str], definitions: Mapping[str, Definition], analysis: Analysis, graphs: Graphs
) -> dict[str, str]:
    return {
        key: sha256_digest(canonical_bytes(build_document(definitions[key], analysis, graphs, {})))
        for key in group
    }


def _dependency_order(dependencies: Mapping[str, set[str]]) -> list[list[str]]:
    """Groups of keys (a cycle is one group, sorted), each after every group it depends on;
    of the groups ready at a time, the one whose first key sorts first.

    Done on the keys themselves rather than on a graph library's graph and its condensation:
    for a big project those two were the most an emit held at once.
    """
    groups = _cycles(dependencies)
    group_of = {key: i for i, group in enumerate(groups) for key in group}
    needers: list[set[int]] = [set() for _ in groups]
    waiting = [0] * len(groups)
    for key, deps in dependencies.items():
        for dep in deps:
            source, target = group_of[dep], group_of[key]
            if source != target and target not in needers[source]:
                needers[source].add(target)
                waiting[target] += 1
    ready = [(group[0], i) for i, group in enumerate(groups) if waiting[i] == 0]
    heapq.heapify(ready)
    order: list[list[str]] = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(groups[i])
        for j in needers[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (groups[j][0], j))
    return order


def _cycles(dependencies: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of keys (Tarjan's algorithm, without recursion), each
    sorted; a key only depended on is a group of its own."""
    keys = list(dependencies)
    keys += sorted({dep for deps in dependencies.values() for dep in deps} - set(dependencies))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in keys:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(dependencies.get(root, ()))))]
        while work:
            key, deps = work[-1]
            for dep in deps:
                if dep not in index:
                    index[dep] = low[dep] = len(index)
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, iter(sorted(dependencies.get(dep, ())))))
                    break
                if dep in on_stack:
                    low[key] = min(low[key], index[dep])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[key])
                if low[key] == index[key]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == key:
                            break
                    groups.append(sorted(group))
    return groups


# --------------------------------------------------------------------------- dependencies


def dependencies_of(definition: Definition, analysis: Analysis) -> set[str]:
    """The ``kind.name`` of every definition this one's document names by digest."""
    found = {
        key
        for ref in spec_references(definition.spec)
        if (key := _definition_key(ref)) is not None and key in analysis.definitions
    }
    if isinstance(definition.spec, WorkflowSpec):
        for use in skill_uses(definition.spec):
            found.update(f"binding.{g.binding}" for g in grants_for_use(use, analysis))
    found.discard(definition.key)
    return found


def _definition_key(ref: ex.Ref) -> str | None:
    if ref.root not in KIND_MODELS or not ref.path or not isinstance(ref.path[0], str):
        return None
    return f"{ref.root}.{ref.path[0]}"


def spec_references(value: object) -> Iterator[ex.Ref]:
    """Every reference anywhere in a spec: reference fields and inside expressions."""
    if isinstance(value, ex.Ref):
        yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from spec_references(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from spec_references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from spec_references(item)
    elif _is_expression(value):
        yield from ex.references(value)


def _is_expression(value: object) -> TypeGuard[ex.Expression]:
    return isinstance(
        value,
        ex.Literal
        | ex.ListExpr
        | ex.ObjectExpr
        | ex.Index
        | ex.Unary
        | ex.Binary
        | ex.Conditional
        | ex.Call
        | ex.Template,
    )


# --------------------------------------------------------------------------- skills and grants


@dataclass(frozen=True, slots=True)
class SkillUse:
    """A workflow uses ``skill`` (``skill.<name>``) acting as ``actor`` (a dotted reference)."""

    skill: str
    actor: str


@dataclass(frozen=True, slots=True)
class GrantInfo:
    binding: str
    grantee: str
    spec: BindingSpec


def skill_uses(spec: WorkflowSpec) -> list[SkillUse]:
    """Every (skill, acting grantee) pair of a workflow: turns, proposals and actions."""
    owner = spec.owner.dotted
    proposals = {
        name: step for state in spec.state.values() for name, step in (state.proposal or {}).items()
    }
    uses: set[SkillUse] = set()
    for state in spec.state.values():
        for work in _state_work(state):
            uses.update(_work_uses(work, owner, proposals))
        for step in (state.proposal or {}).values():
            actor = step.actor.dotted if step.actor else owner
            uses.add(SkillUse(step.skill.dotted, actor))
    return sorted(uses, key=lambda u: (u.skill, u.actor))


def _state_work(state: State) -> Iterator[BranchWork | State]:
    yield state
    if state.parallel is not None:
        yield from state.parallel.branch.values()
    if state.for_each is not None:
        yield state.for_each.do


def _work_uses(
    work: BranchWork | State, owner: str, proposals: Mapping[str, Any]
) -> Iterator[SkillUse]:
    if work.turn is not None:
        for skill in work.turn.skills:
            yield SkillUse(skill.dotted, work.turn.agent.dotted)
    if work.action is not None:
        yield from _action_uses(work.action, owner, proposals)


def _action_uses(action: Action, owner: str, proposals: Mapping[str, Any]) -> Iterator[SkillUse]:
    if action.skill is not None:
        yield SkillUse(action.skill.dotted, action.actor.dotted if action.actor else owner)
        return
    name = action.proposal.path[0] if action.proposal and action.proposal.path else None
    step = proposals.get(str(name))
    if step is None:
        return
    actor = action.actor or step.actor
    yield SkillUse(step.skill.dotted, actor.dotted if actor else owner)


def grants_for_use(use: SkillUse, analysis: Analysis) -> list[GrantInfo]:
    """Bindings granting ``use.skill`` to the actor (or, for a team role, to its agent)."""
    grantees = {use.actor, *_role_agent(use.actor, analysis)}
    found = [b for grantee in grantees for b in analysis.bindings_written(use.skill, grantee)]
    out = []
    for binding in sorted(found, key=lambda d: d.name):
        assert isinstance(binding.spec, BindingSpec)
        out.append(GrantInfo(binding.name, binding.spec.to.dotted, binding.spec))
    return out


def _role_agent(actor: str, analysis: Analysis) -> list[str]:
    parts = actor.split(".")
    if len(parts) != 4 or parts[0] != "team" or parts[2] != "role":
        return []
    team = analysis.get(f"team.{parts[1]}")
    if team is None or not isinstance(team.spec, TeamSpec):
        return []
    role = team.spec.role.get(parts[3])
    return [role.agent.dotted] if role is not None else []


# --------------------------------------------------------------------------- documents


def build_document(
    definition: Definition,
    analysis: Analysis,
    graphs: Graphs,
    digests: Mapping[str, str],
    dependencies: set[str] | None = None,
) -> Document:
    """The document of one definition; ``digests`` holds the digest of each dependency.

    ``dependencies`` is :func:`dependencies_of` the definition, when the caller
    already has it (finding them walks the whole spec).
    """
    spec = definition.spec
    deps = dependencies if dependencies is not None else dependencies_of(definition, analysis)
    document: Document = {
        "apiVersion": API_VERSION,
        "kind": definition.kind,
        "name": definition.name,
        "spec": spec.model_dump(mode="json"),
        "dependencies": {key: digests[key] for key in sorted(deps) if key in digests},
    }
    if isinstance(spec, ModelProfile) and spec.price is None:
        # A profile without prices keeps the document (and digest) it had before prices
        # existed, so upgrading openseal does not make every model a new version.
        del document["spec"]["price"]
    if isinstance(spec, ModelProfile | SkillSpec) and spec.rate_limit is None:
        del document["spec"]["rate_limit"]  # likewise for rate limits
    if isinstance(spec, WorkflowSpec):
        # Likewise a state kind added later is left out where it is absent.
        for state in document["spec"]["state"].values():
            for kind in LATER_KINDS:
                if state.get(kind, False) is None:
                    del state[kind]
        _carved_budgets(document["spec"]["state"])
    if isinstance(spec, SkillSpec):
        if spec.idempotency is not None and spec.idempotency.window is None:
            # A skill without an idempotency window keeps the digest it had before it existed.
            del document["spec"]["idempotency"]["window"]
        _drop_unset_concurrency(document)
        document["inputs"] = _type_schema(spec.input)
        document["outputs"] = _type_schema(spec.output)
    elif isinstance(spec, WorkflowSpec):
        document.update(_workflow_parts(definition.name, spec, analysis, graphs, digests))
        if spec.objective is None:
            # Workflows without an objective policy keep the digests they had before it existed.
            del document["spec"]["objective"]
        if spec.max_depth is None:
            del document["spec"]["max_depth"]  # likewise for a run-tree depth bound
        if spec.retention is None:
            del document["spec"]["retention"]  # and for a retention policy
        if not spec.migrate:
            del document["spec"]["migrate"]  # and for a workflow that migrates no runs
        if spec.max_queued is None:
            del document["spec"]["max_queued"]  # and for a ready queue without a bound
        _drop_unset_concurrency(document)
    elif isinstance(spec, RunbookSpec):
        document.update(_runbook_parts(definition.name, spec, analysis, graphs, digests))
    elif isinstance(spec, AgentSpec):
        document["budgets"] = {"agent": _budget(spec.budget)}
        if spec.workflow is None:
            # Agents that name no workflow keep the digests they had before it existed.
            del document["spec"]["workflow"]
        _drop_unset_concurrency(document)
    elif isinstance(spec, TeamSpec):
        document["budgets"] = {"team": _budget(spec.policy.budget)}
        _drop_unset_concurrency(document)
    return document


def _drop_unset_concurrency(document: Document) -> None:
    """A workflow, agent, team or skill without a concurrency cap keeps the digest it had
    before caps existed."""
    if document["spec"].get("concurrency", 0) is None:
        del document["spec"]["concurrency"]


def _carved_budgets(node: object) -> None:
    """Each ``delegate``'s ``budget`` under ``node`` as the amounts it names; a delegate without
    one keeps the document (and digest) it had before budgets could be carved."""
    if isinstance(node, dict):
        delegate = node.get("delegate")
        if isinstance(delegate, dict) and "budget" in delegate:
            if delegate["budget"] is None:
                del delegate["budget"]
            else:
                delegate["budget"] = {k: v for k, v in delegate["budget"].items() if v is not None}
        for value in node.values():
            _carved_budgets(value)


def _type_schema(t: ty.TypeExpr | None) -> dict[str, object]:
    return ty.to_json_schema(t) if t is not None else {}


def _budget(budget: Budget) -> dict[str, object]:
    return budget.model_dump(mode="json")


def _inputs_schema(inputs: Mapping[str, Input]) -> dict[str, object]:
    properties: dict[str, object] = {}
    for name in sorted(inputs):
        item = inputs[name]
        schema = dict(ty.to_json_schema(item.type))
        if item.description is not None:
            schema["description"] = item.description
        if item.default is not None:
            schema["default"] = item.default
        properties[name] = schema
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": properties,
        "required": [n for n in sorted(inputs) if inputs[n].default is None],
        "additionalProperties": False,
    }


def _outputs_schema(outputs: Mapping[str, Output]) -> dict[str, object]:
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {n: _type_schema(outputs[n].type) for n in sorted(outputs)},
        "required": sorted(outputs),
        "additionalProperties": False,
    }


def _workflow_parts(
    name: str, spec: WorkflowSpec, analysis: Analysis, graphs: Graphs, digests: Mapping[str, str]
) -> Document:
    owner = analysis.get(_definition_key(spec.owner) or "")
    owner_budget = None
    if owner is not None and isinstance(owner.spec, TeamSpec):
        owner_budget = _budget(owner.spec.policy.budget)
    elif owner is not None and isinstance(owner.spec, AgentSpec):
        owner_budget = _budget(owner.spec.budget)
    graph = workflow_graph(spec, graphs.workflows.get(name))
    skills = _workflow_skills(spec, analysis, digests)
    _separate_duties(spec, graph, skills)
    return {
        "graph": graph,
        "skills": skills,
        "budgets": {
            "workflow": _budget(spec.budget),
            "owner": owner_budget,
            "on_exhausted": spec.on_budget_exhausted,
        },
        "inputs": _inputs_schema(spec.input),
        "outputs": _outputs_schema(spec.output),
    }


#: effects whose approval separates duties by default (with a proposal that spends)
SEPARATED_EFFECTS = frozenset({"external", "production", "destructive"})


def _separate_duties(spec: WorkflowSpec, graph: WorkflowGraph, skills: Document) -> None:
    """Each approval state's ``separation_of_duties``, resolved: as written, else on when its
    proposal spends or its skill's effect is ``external`` or riskier."""
    proposals = {
        name: step for state in spec.state.values() for name, step in (state.proposal or {}).items()
    }
    for state_id, entry in graph["states"].items():
        approval = spec.state[state_id].approval
        if approval is None:
            continue
        config = cast(dict[str, Any], entry["config"])
        separated = approval.separation_of_duties
        if separated is None:
            path = approval.proposal.path
            step = proposals.get(str(path[-1])) if path else None
            effect = None
            if step is not None:
                effect = (skills.get(step.skill.dotted.removeprefix("skill.")) or {}).get("effect")
            separated = step is not None and (step.spend is not None or effect in SEPARATED_EFFECTS)
        config["separation_of_duties"] = separated


def workflow_graph(spec: WorkflowSpec, graph: BuiltGraph | None) -> WorkflowGraph:
    """States with their settings, transitions with guard ASTs, initial and end states."""
    states = {state_id: state_entry(spec.state[state_id]) for state_id in sorted(spec.state)}
    transitions: list[TransitionEntry] = (
        []
        if graph is None
        else [
            {
                "from": t.source,
                "to": t.target,
                "event": t.event,
                "guard": ex.to_json(t.guard) if t.guard is not None else None,
                "order": t.order,
            }
            for t in graph.transitions
        ]
    )
    transitions.sort(key=lambda t: (t["from"], t["event"], t["order"], t["to"]))
    start = str(spec.start.path[0]) if spec.start.root == "state" and spec.start.path else None
    return {
        "initial": graph.start if graph is not None else start,
        "states": states,
        "transitions": transitions,
        "ends": {s: end for s in sorted(spec.state) if (end := spec.state[s].end) is not None},
    }


def state_entry(state: State) -> StateEntry:
    """One state: its kind, description and settings (``STATE_SETTINGS[kind]``), and the JSON
    Schema its output must match."""
    kind = state.kind
    settings = {"outcome": state.end} if kind == "end" else state.model_dump(mode="json")[kind]
    _carved_budgets({kind: settings})
    entry: StateEntry = {
        "kind": kind,
        "description": state.description,
        # the definition model dumped: the contract's settings, by construction (and tested)
        "config": cast(StateSettings, settings),
    }
    output = _state_output_type(state)
    if output is not None:
        entry["output_schema"] = ty.to_json_schema(output)
    return entry


def _state_output_type(state: State) -> ty.TypeExpr | None:
    if state.turn is not None:
        return state.turn.output
    if state.delegate is not None:
        return state.delegate.output
    return None


def _workflow_skills(
    spec: WorkflowSpec, analysis: Analysis, digests: Mapping[str, str]
) -> Document:
    out: Document = {}
    for use in skill_uses(spec):
        skill = analysis.get(use.skill)
        entry = out.setdefault(
            use.skill.removeprefix("skill."),
            {
                "digest": digests.get(use.skill),
                "effect": skill.spec.effect
                if skill and isinstance(skill.spec, SkillSpec)
                else None,
                "grants": [],
            },
        )
        for grant in grants_for_use(use, analysis):
            entry["grants"].append(
                {
                    "actor": use.actor,
                    "granted_by": grant.binding,
                    "grantee": grant.grantee,
                    "max_risk": grant.spec.max_risk,
                    "approval": _dump(grant.spec.approval),
                    "constraints": [ex.to_json(c) for c in grant.spec.constraints],
                }
            )
        if not any(g["actor"] == use.actor for g in entry["grants"]):
            # An ungranted use is a check error, so this only shows in partial builds.
            entry["grants"].append({"actor": use.actor, "granted_by": None, "grantee": None})
    for entry in out.values():
        entry["grants"].sort(key=lambda g: (g["actor"], g["granted_by"] or ""))
    return out


def _dump(model: BaseModel | None) -> object:
    return model.model_dump(mode="json") if model is not None else None


def _runbook_parts(
    name: str, spec: RunbookSpec, analysis: Analysis, graphs: Graphs, digests: Mapping[str, str]
) -> Document:
    skills: Document = {}
    for step in spec.step.values():
        if step.skill is None:
            continue
        definition = analysis.get(step.skill.dotted)
        skills[step.skill.dotted.removeprefix("skill.")] = {
            "digest": digests.get(step.skill.dotted),
            "effect": definition.spec.effect
            if definition and isinstance(definition.spec, SkillSpec)
            else None,
        }
    return {
        "graph": runbook_graph(spec, graphs.runbooks.get(name)),
        "skills": skills,
        "inputs": _inputs_schema(spec.input),
        "outputs": _outputs_schema(spec.output),
    }


def runbook_graph(spec: RunbookSpec, graph: RunbookGraph | None) -> Document:
    """Steps, dependency edges ``[needed, needer]`` and parallel levels (topological order)."""
    steps = {
        step_id: {
            "kind": "skill" if spec.step[step_id].skill is not None else "builtin",
            "config": spec.step[step_id].model_dump(mode="json"),
        }
        for step_id in sorted(spec.step)
    }
    if graph is None:
        return {"steps": steps, "edges": [], "levels": []}
    edges = sorted([str(a), str(b)] for a, b in graph.graph.edges)
    try:
        levels = [
            sorted(str(n) for n in level) for level in nx.topological_generations(graph.graph)
        ]
    except nx.NetworkXUnfeasible:  # a cycle: reported by the checks, never emitted
        levels = []
    return {"steps": steps, "edges": edges, "levels": levels}
