"""Build stage: every workflow becomes a state graph, every runbook a step DAG.

``build`` never fails on broken input. A transition to a state that does not
exist, or a reference to an unknown step, is simply not an edge; the checks in
:mod:`openseal.compiler.analysis.checks.graph` report them. Nodes and edges are inserted
in sorted order so everything derived from the graphs (drawings, compiled
documents) is reproducible.

>>> graphs = build(analysis)                       # doctest: +SKIP
>>> graphs.workflows["procure_laptops"].start      # doctest: +SKIP
'research'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import networkx as nx

from openseal.compiler.analysis.ir import Analysis, RunbookGraph, Transition, WorkflowGraph
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import RunbookSpec, State, Step, WorkflowSpec
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span

#: The event of ``next = state.x`` and of every ``branch`` choice.
DONE = "done"


@dataclass(frozen=True, slots=True)
class Graphs:
    """The graphs of one project, keyed by definition name."""

    workflows: Mapping[str, WorkflowGraph]
    runbooks: Mapping[str, RunbookGraph]


def build(analysis: Analysis) -> Graphs:
    """Build the graph of every workflow and runbook in ``analysis``."""
    workflows: dict[str, WorkflowGraph] = {}
    runbooks: dict[str, RunbookGraph] = {}
    for definition in sorted(analysis.definitions.values(), key=lambda d: d.key):
        if isinstance(definition.spec, WorkflowSpec):
            workflows[definition.name] = build_workflow(definition.name, definition.spec)
        elif isinstance(definition.spec, RunbookSpec):
            runbooks[definition.name] = build_runbook(definition.name, definition.spec)
    return Graphs(workflows, runbooks)


# --------------------------------------------------------------------------- workflows


def state_name(ref: ex.Ref | None) -> str | None:
    """``state.review`` → ``"review"``; anything else (or a longer path) → ``None``."""
    if ref is None or ref.root != "state" or len(ref.path) != 1:
        return None
    part = ref.path[0]
    return part if isinstance(part, str) else None


def written_transitions(source: str, state: State) -> Iterator[tuple[ex.Ref, Transition]]:
    """Every transition a state declares, whatever its target, with the reference written.

    Order: ``next``, then ``on`` by event name, then ``branch`` in source order.
    The target of a reference that does not name a state is its dotted text.
    """
    if state.next is not None:
        yield state.next, _transition(source, state.next, DONE, None, 0)
    for event in sorted(state.on):
        choice = state.on[event]
        yield choice.next, _transition(source, choice.next, event, choice.when, 0)
    for order, choice in enumerate(state.branch):
        yield choice.next, _transition(source, choice.next, DONE, choice.when, order)


def _transition(
    source: str, ref: ex.Ref, event: str, guard: ex.Expression | None, order: int
) -> Transition:
    target = state_name(ref) or ref.dotted
    return Transition(source, target, event, guard, order, ref.span)


def build_workflow(name: str, spec: WorkflowSpec) -> WorkflowGraph:
    graph = nx.DiGraph(name=name)
    for state_id in sorted(spec.state):
        state = spec.state[state_id]
        attrs: dict[str, object] = {"kind": state.kind}
        if state.end is not None:
            attrs["outcome"] = state.end
        graph.add_node(state_id, **attrs)
    transitions: list[Transition] = []
    for state_id in sorted(spec.state):
        for _, transition in written_transitions(state_id, spec.state[state_id]):
            if transition.target not in spec.state:
                continue
            transitions.append(transition)
            if not graph.has_edge(transition.source, transition.target):
                graph.add_edge(transition.source, transition.target, transitions=[])
            graph.edges[transition.source, transition.target]["transitions"].append(transition)
    start = state_name(spec.start)
    ends = {s: spec.state[s].end for s in sorted(spec.state) if spec.state[s].end is not None}
    return WorkflowGraph(
        name=name,
        start=start if start in spec.state else None,
        states={s: spec.state[s] for s in sorted(spec.state)},
        transitions=tuple(transitions),
        ends={s: str(outcome) for s, outcome in ends.items()},
        graph=graph,
    )


# --------------------------------------------------------------------------- runbooks


def step_name(ref: ex.Ref) -> str | None:
    """``step.fetch`` or ``step.fetch.output.x`` → ``"fetch"``; other roots → ``None``."""
    if ref.root != "step" or not ref.path or not isinstance(ref.path[0], str):
        return None
    return ref.path[0]


def step_references(step: Step) -> Iterator[ex.Ref]:
    """Every ``step.*`` reference of a step: ``depends_on``, then ``args`` by key, then ``when``."""
    yield from step.depends_on
    expressions = [step.args[key] for key in sorted(step.args)]
    if step.when is not None:
        expressions.append(step.when)
    for expression in expressions:
        yield from (ref for ref in ex.references(expression) if ref.root == "step")


def build_runbook(name: str, spec: RunbookSpec) -> RunbookGraph:
    """Edge ``a → b`` when step ``b`` needs ``a``; edge attribute ``refs`` lists why."""
    graph = nx.DiGraph(name=name)
    for step_id in sorted(spec.step):
        graph.add_node(step_id, kind="skill" if spec.step[step_id].skill else "builtin")
    for step_id in sorted(spec.step):
        for ref in step_references(spec.step[step_id]):
            needed = step_name(ref)
            if needed is None or needed not in spec.step:
                continue
            if not graph.has_edge(needed, step_id):
                graph.add_edge(needed, step_id, refs=[])
            graph.edges[needed, step_id]["refs"].append(ref)
    return RunbookGraph(name=name, steps={s: spec.step[s] for s in sorted(spec.step)}, graph=graph)


# --------------------------------------------------------------------------- spans


def state_span(definition: Definition, state: str) -> Span:
    """Where ``state "<state>"`` is written, else the workflow's name."""
    return definition.key_spans.get(("state", state)) or definition.name_span


def step_span(definition: Definition, step: str) -> Span:
    """Where ``step "<step>"`` is written, else the runbook's name."""
    return definition.key_spans.get(("step", step)) or definition.name_span
