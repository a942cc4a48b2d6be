"""Graph checks: each a small named function ``(analysis, graphs) -> diagnostics``.

They read the graphs from :mod:`openseal.compiler.analysis.build` and the specs behind
them. To keep one mistake from producing a cascade, each check stays in its
lane: a typo in ``start`` is OS401 only (no unreachable-state reports follow),
a state with no way out is OS405 only (its predecessors are not also reported
as trapped), and so on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import networkx as nx

from openseal.compiler.analysis.build import (
    DONE,
    Graphs,
    state_name,
    state_span,
    step_name,
    step_references,
    step_span,
    written_transitions,
)
from openseal.compiler.analysis.ir import STATE_EVENTS, Analysis, RunbookGraph, WorkflowGraph
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.definitions.specs import (
    AgentSpec,
    BranchWork,
    RunbookSpec,
    TeamSpec,
    WorkflowSpec,
)
from openseal.compiler.diagnostics import Diagnostic, Related, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.spans import Span
from openseal.contract import MAX_RUN_DEPTH

Check = Callable[[Analysis, Graphs], list[Diagnostic]]

_WorkflowItem = tuple[Definition, WorkflowSpec, WorkflowGraph]


def _workflows(analysis: Analysis, graphs: Graphs) -> Iterator[_WorkflowItem]:
    for definition in sorted(analysis.of_kind("workflow"), key=lambda d: d.name):
        graph = graphs.workflows.get(definition.name)
        if isinstance(definition.spec, WorkflowSpec) and graph is not None:
            yield definition, definition.spec, graph


def _runbooks(
    analysis: Analysis, graphs: Graphs
) -> Iterator[tuple[Definition, RunbookSpec, RunbookGraph]]:
    for definition in sorted(analysis.of_kind("runbook"), key=lambda d: d.name):
        graph = graphs.runbooks.get(definition.name)
        if isinstance(definition.spec, RunbookSpec) and graph is not None:
            yield definition, definition.spec, graph


def _state_suggestion(name: str, spec: WorkflowSpec) -> str | None:
    return did_you_mean(name, spec.state, fmt="`state.{}`")


# --------------------------------------------------------------------------- OS401


def check_initial_state(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """``start`` must name a state of the workflow."""
    out: list[Diagnostic] = []
    for definition, spec, _ in _workflows(analysis, graphs):
        name = state_name(spec.start)
        if name is None:
            message = (
                f"`start` of workflow `{definition.name}` must name one of its states, "
                f"like `state.<name>`; `{spec.start.dotted}` is not a state"
            )
            out.append(error("OS401", message, spec.start.span))
        elif name not in spec.state:
            out.append(
                error(
                    "OS401",
                    f"workflow `{definition.name}` starts in `{name}`, "
                    "which is not one of its states",
                    spec.start.span,
                    suggestion=_state_suggestion(name, spec),
                )
            )
    return out


# --------------------------------------------------------------------------- OS407


def check_transition_targets(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Transitions name existing states; runbook steps depend on existing steps."""
    out: list[Diagnostic] = []
    for definition, spec, _ in _workflows(analysis, graphs):
        for state_id in sorted(spec.state):
            for ref, transition in written_transitions(state_id, spec.state[state_id]):
                target = state_name(ref)
                if target is None:
                    message = (
                        f"a transition must lead to a state, like `state.<name>`; "
                        f"`{ref.dotted}` is not a state"
                    )
                    out.append(error("OS407", message, ref.span))
                elif target not in spec.state:
                    message = (
                        f"state `{state_id}` moves to `{target}` on `{transition.event}`, "
                        f"but workflow `{definition.name}` has no state `{target}`"
                    )
                    suggestion = _state_suggestion(target, spec)
                    out.append(error("OS407", message, ref.span, suggestion=suggestion))
    for runbook, steps, _ in _runbooks(analysis, graphs):
        for step_id in sorted(steps.step):
            out += _unknown_steps(runbook, steps, step_id)
    return out


def _unknown_steps(definition: Definition, spec: RunbookSpec, step_id: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    step = spec.step[step_id]
    for ref in step.depends_on:
        if ref.root != "step" or len(ref.path) != 1:
            message = f"`depends_on` lists steps, like `step.<name>`; `{ref.dotted}` is not a step"
            out.append(error("OS407", message, ref.span))
    for ref in step_references(step):
        needed = step_name(ref)
        if needed is not None and needed not in spec.step:
            message = (
                f"step `{step_id}` needs `{needed}`, "
                f"but runbook `{definition.name}` has no step `{needed}`"
            )
            suggestion = did_you_mean(needed, spec.step, fmt="`step.{}`")
            out.append(error("OS407", message, ref.span, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS402


def check_unreachable_states(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Every state can be reached from ``start``.

    Skipped while ``start`` or a transition target is misspelt (OS401/OS407): the
    state meant is then unreachable only because of the typo.
    """
    out: list[Diagnostic] = []
    for definition, spec, graph in _workflows(analysis, graphs):
        if graph.start is None or _has_unknown_target(spec):
            continue
        reachable = _reachable(graph)
        for state_id in graph.states:
            if state_id not in reachable:
                message = (
                    f"state `{state_id}` cannot be reached from the start state `{graph.start}`"
                )
                suggestion = "remove it, or add a transition to it from a reachable state"
                span = state_span(definition, state_id)
                out.append(error("OS402", message, span, suggestion=suggestion))
    return out


def _has_unknown_target(spec: WorkflowSpec) -> bool:
    return any(
        transition.target not in spec.state
        for state_id, state in spec.state.items()
        for _, transition in written_transitions(state_id, state)
    )


def _reachable(graph: WorkflowGraph) -> set[str]:
    if graph.start is None:
        return set()
    return {graph.start, *nx.descendants(graph.graph, graph.start)}


# --------------------------------------------------------------------------- OS403


def check_end_reachable(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """From every reachable state some ``end`` state can be reached (no trap states)."""
    out: list[Diagnostic] = []
    for definition, spec, graph in _workflows(analysis, graphs):
        if graph.start is None:
            continue
        if not graph.ends:
            message = f"workflow `{definition.name}` has no end state, so no run can finish"
            suggestion = 'add a state with `end = "completed"` and a transition to it'
            out.append(error("OS403", message, definition.name_span, suggestion=suggestion))
            continue
        # States whose way out is broken are reported by OS405/OS407/OS408; treating
        # them as exits here keeps their predecessors from being reported too.
        exits = set(graph.ends) | _broken_exits(spec, graph)
        can_finish = set(exits).union(*(nx.ancestors(graph.graph, s) for s in exits))
        for state_id in sorted(_reachable(graph) - can_finish):
            message = (
                f"no end state can be reached from state `{state_id}`; a run here never finishes"
            )
            suggestion = "add a transition that leads towards an end state"
            span = state_span(definition, state_id)
            out.append(error("OS403", message, span, suggestion=suggestion))
    return out


def _broken_exits(spec: WorkflowSpec, graph: WorkflowGraph) -> set[str]:
    """States with no transition at all, or with one whose target is not a state."""
    broken: set[str] = set()
    for state_id, state in spec.state.items():
        written = [t for _, t in written_transitions(state_id, state)]
        if not written or any(t.target not in spec.state for t in written):
            broken.add(state_id)
    return broken


# --------------------------------------------------------------------------- OS404


def check_no_transitions_out_of_end(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """An ``end`` state is final: no ``next``, ``on`` or ``branch``."""
    out: list[Diagnostic] = []
    for _, spec, graph in _workflows(analysis, graphs):
        for state_id in graph.ends:
            for ref, _ in written_transitions(state_id, spec.state[state_id]):
                message = (
                    f"state `{state_id}` is an end state (`{graph.ends[state_id]}`); "
                    f"a run that reaches it is over, so it cannot move to `{ref.dotted}`"
                )
                suggestion = "remove the transition, or make the state something other than `end`"
                out.append(error("OS404", message, ref.span, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS405


def check_ambiguous_transitions(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """At most one unguarded transition per event; a catch-all branch comes last;
    every state that is neither ``end`` nor ``decision`` has a way out."""
    out: list[Diagnostic] = []
    for definition, spec, _ in _workflows(analysis, graphs):
        for state_id in sorted(spec.state):
            out += _ambiguous_in_state(definition, spec, state_id)
    return out


def _ambiguous_in_state(
    definition: Definition, spec: WorkflowSpec, state_id: str
) -> list[Diagnostic]:
    state = spec.state[state_id]
    if state.kind == "end":
        return []  # OS404 covers every transition out of an end state
    out: list[Diagnostic] = []
    written = list(written_transitions(state_id, state))
    if not written and state.kind != "decision":
        events = ", ".join(f"`{e}`" for e in STATE_EVENTS[state.kind])
        message = f"state `{state_id}` has no transition out, so a run that reaches it is stuck"
        suggestion = f'add `next = state.<name>` or `on "<event>"` for its events ({events})'
        out.append(error("OS405", message, state_span(definition, state_id), suggestion=suggestion))
    first_unguarded: dict[str, ex.Ref] = {}
    for ref, transition in written:
        if transition.guard is not None:
            continue
        earlier = first_unguarded.setdefault(transition.event, ref)
        if earlier is not ref:
            message = (
                f"state `{state_id}` has two unconditional transitions on `{transition.event}` "
                f"(to `{earlier.dotted}` and to `{ref.dotted}`); only one can be taken"
            )
            related = [Related(earlier.span, "the other transition")]
            out.append(error("OS405", message, ref.span, related=related))
    for order, choice in enumerate(state.branch[:-1]):
        if choice.when is None:
            message = (
                f"branch {order + 1} of state `{state_id}` has no `when`, so it always wins "
                f"and the branches after it can never be taken"
            )
            suggestion = "give it a `when`, or move it to the end as the fallback"
            out.append(error("OS405", message, choice.next.span, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS408


def check_events_match_kind(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Transitions listen for events the state's kind produces; ``branch`` is for decisions."""
    out: list[Diagnostic] = []
    for definition, spec, _ in _workflows(analysis, graphs):
        for state_id in sorted(spec.state):
            out += _events_of_state(definition, spec, state_id)
    return out


def _events_of_state(definition: Definition, spec: WorkflowSpec, state_id: str) -> list[Diagnostic]:
    state = spec.state[state_id]
    kind: str = state.kind
    if kind == "end":
        return []  # OS404 covers every transition out of an end state
    out: list[Diagnostic] = []
    produced = STATE_EVENTS[kind]
    listing = ", ".join(f"`{e}`" for e in produced)
    if state.next is not None and DONE not in produced:
        message = (
            f"`next` follows the `done` event, which {_a(kind)} state never produces; "
            f"it produces {listing}"
        )
        suggestion = f'use `on "{produced[0]}" {{ next = {state.next.dotted} }}` and the like'
        out.append(error("OS408", message, state.next.span, suggestion=suggestion))
    for event in sorted(state.on):
        if event not in produced:
            span = (
                definition.key_spans.get(("state", state_id, "on", event))
                or state.on[event].next.span
            )
            message = f"{_a(kind)} state never produces the event `{event}`; it produces {listing}"
            hint = did_you_mean(event, produced, fmt='`on "{}"`')
            out.append(error("OS408", message, span, suggestion=hint))
    branch_span = definition.key_spans.get(("state", state_id, "branch"))
    if state.branch and kind != "decision":
        message = (
            f"`branch` chooses between guarded paths of a decision state; "
            f"`{state_id}` is {_a(kind)} state"
        )
        suggestion = "use `next` or `on`, or put the choice in a decision state after this one"
        span = branch_span or state.branch[0].next.span
        out.append(error("OS408", message, span, suggestion=suggestion))
    if kind == "decision" and not state.branch:
        message = f"decision state `{state_id}` has no `branch`, so there is nothing to decide"
        suggestion = "add `branch { when = ..., next = state.<name> }` choices, in order"
        out.append(error("OS408", message, state_span(definition, state_id), suggestion=suggestion))
    return out


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


# --------------------------------------------------------------------------- OS409


def check_fanout_work(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A parallel branch or a for_each item runs ``turn`` or ``transform`` work: a
    ``delegate`` or an ``action`` there would need per-branch authority, keys and budget
    reservations the runtime does not have, so it is refused here, not at run time."""
    out: list[Diagnostic] = []
    for definition, spec, _ in _workflows(analysis, graphs):
        for state_id in sorted(spec.state):
            state = spec.state[state_id]
            units: list[tuple[tuple[str, ...], BranchWork]] = []
            if state.parallel is not None:
                units += [(("parallel", "branch", name), work)
                          for name, work in sorted(state.parallel.branch.items())]  # fmt: skip
            if state.for_each is not None:
                units.append((("for_each", "do"), state.for_each.do))
            for path, work in units:
                kind = "delegate" if work.delegate is not None else "action"
                if work.delegate is None and work.action is None:
                    continue
                where = "a parallel branch" if path[0] == "parallel" else "a for_each item"
                span = (
                    definition.key_spans.get(("state", state_id, *path, kind))
                    or definition.key_spans.get(("state", state_id, *path))
                    or state_span(definition, state_id)
                )
                message = f"`{kind}` cannot run inside {where} (state `{state_id}`)"
                suggestion = f"make the `{kind}` a state of its own before or after `{state_id}`"
                out.append(error("OS409", message, span, suggestion=suggestion))
    return out


# --------------------------------------------------------------------------- OS406


def check_runbook_cycles(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """A runbook's steps form a DAG; each cycle is reported once, at its first step."""
    out: list[Diagnostic] = []
    for definition, _, graph in _runbooks(analysis, graphs):
        dag = graph.graph
        for component in sorted(sorted(c) for c in nx.strongly_connected_components(dag)):
            first = component[0]
            if len(component) == 1 and not dag.has_edge(first, first):
                continue
            cycle = _cycle_through(dag, first)
            names = " → ".join([*cycle, cycle[0]])
            related = [
                Related(dag.edges[a, b]["refs"][0].span, f"`{b}` needs `{a}` here")
                for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True)
            ]
            message = (
                f"steps of runbook `{definition.name}` depend on each other in a cycle: {names}"
            )
            suggestion = "remove one of these dependencies so the steps can run in order"
            span = step_span(definition, first)
            out.append(error("OS406", message, span, related=related, suggestion=suggestion))
    return out


def _cycle_through(dag: nx.DiGraph, first: str) -> list[str]:
    """One cycle through ``first``, as the list of its steps starting there."""
    edges = nx.find_cycle(dag, source=first)
    nodes = [str(a) for a, _ in edges]
    # find_cycle may walk into the cycle from ``first``; rotate so the cycle starts at it
    # when it is on the cycle, which it is because its component is strongly connected.
    if first in nodes:
        at = nodes.index(first)
        nodes = nodes[at:] + nodes[:at]
    return nodes


# --------------------------------------------------------------------------- OS410


def check_workflow_cycles(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """Workflows that start each other's runs (``spawn``, or ``delegate`` to an agent that
    runs a workflow) in a cycle nest runs without end unless one of them bounds the depth
    (``max_depth``); each such cycle is reported once, at its first start."""
    starts = nx.DiGraph()
    bounded = set()
    for definition, spec, _ in _workflows(analysis, graphs):
        if spec.max_depth is not None:
            bounded.add(definition.name)
        for target, span, how in _workflows_started(analysis, definition, spec):
            if not starts.has_edge(definition.name, target):  # the first start is shown
                starts.add_edge(definition.name, target, span=span, how=how)
    starts.remove_nodes_from(bounded)  # a bounded workflow ends every cycle through it
    out: list[Diagnostic] = []
    for component in sorted(sorted(c) for c in nx.strongly_connected_components(starts)):
        first = component[0]
        if len(component) == 1 and not starts.has_edge(first, first):
            continue
        cycle = _cycle_through(starts, first)
        steps = [starts.edges[a, b] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True)]
        names = " → ".join([*cycle, cycle[0]])
        who = f"workflow `{first}` starts runs of itself" if len(cycle) == 1 else (
            "workflows start each other's runs in a cycle"
        )  # fmt: skip
        message = (
            f"{who} ({names}: {steps[0]['how']}) and none of them bounds how deep those runs nest"
        )
        suggestion = (
            f"declare `max_depth` (at most {MAX_RUN_DEPTH}) on one of them, the most runs "
            "deep a run tree may be for a child its runs start, or break the cycle"
        )
        related = [Related(step["span"], str(step["how"])) for step in steps[1:]]
        out.append(
            error("OS410", message, steps[0]["span"], related=related, suggestion=suggestion)
        )
    return out


def _workflows_started(
    analysis: Analysis, definition: Definition, spec: WorkflowSpec
) -> Iterator[tuple[str, Span, str]]:
    """The workflows (by name) whose runs the runs of ``spec`` may start, where, and how."""
    name = definition.name
    for state_id, state in sorted(spec.state.items()):
        if state.spawn is not None:
            for label, child in sorted(state.spawn.child.items()):
                path = ("state", state_id, "spawn", "child", label, "workflow")
                span = definition.key_spans.get(path) or state_span(definition, state_id)
                how = f"`{name}` spawns `{child.workflow}` as child `{label}` in `{state_id}`"
                yield child.workflow, span, how
        if state.delegate is not None:
            callee = state.delegate.to
            target = _delegated_workflow(analysis, callee)
            if target is not None:
                how = f"`{name}` delegates to `{callee.dotted}`, whose requests run `{target}`"
                yield target, callee.span, how


def _delegated_workflow(analysis: Analysis, callee: ex.Ref) -> str | None:
    """The workflow a request to ``callee`` runs as, as the runtime picks the member: an
    agent, a team role's agent, or a team's first role (by name)."""
    agent: ex.Ref | None = callee
    if callee.root == "team" and callee.path:
        team = analysis.get(f"team.{callee.path[0]}")
        roles = team.spec.role if team is not None and isinstance(team.spec, TeamSpec) else {}
        role = str(callee.path[2]) if len(callee.path) == 3 else next(iter(sorted(roles)), None)
        member = roles.get(role) if role is not None else None
        agent = member.agent if member is not None else None
    if agent is None or agent.root != "agent" or len(agent.path) != 1:
        return None
    found = analysis.get(f"agent.{agent.path[0]}")
    return found.spec.workflow if found is not None and isinstance(found.spec, AgentSpec) else None


# --------------------------------------------------------------------------- OS507


def check_budget_covers_shortest_path(analysis: Analysis, graphs: Graphs) -> list[Diagnostic]:
    """``budget.turns`` and ``budget.model_calls`` allow at least the shortest way to an end."""
    out: list[Diagnostic] = []
    for definition, spec, graph in _workflows(analysis, graphs):
        if graph.start is None or not graph.ends:
            continue
        turns = _shortest(graph, graph.start, lambda kind: 1)
        calls = _shortest(graph, graph.start, lambda kind: 1 if kind == "turn" else 0)
        if turns is not None and spec.budget.turns is not None and spec.budget.turns < turns[0]:
            out.append(_budget_error(definition, "turns", spec.budget.turns, turns, "turn"))
        calls_budget = spec.budget.model_calls
        if calls is not None and calls_budget is not None and calls_budget < calls[0]:
            out.append(_budget_error(definition, "model_calls", calls_budget, calls, "model call"))
    return out


def _shortest(
    graph: WorkflowGraph, start: str, cost: Callable[[str], int]
) -> tuple[int, list[str]] | None:
    """The least total cost of the states left on the way from start to an end, and that path.

    Leaving a state costs ``cost(kind)``; the end state itself costs nothing.
    """
    dag = graph.graph

    def weight(source: str, _target: str, _attrs: object) -> int:
        return cost(str(dag.nodes[source]["kind"]))

    lengths, paths = nx.single_source_dijkstra(dag, start, weight=weight)
    reached = [(lengths[end], end) for end in sorted(graph.ends) if end in lengths]
    if not reached:
        return None
    best, end = min(reached)
    return int(best), [str(s) for s in paths[end]]


def _budget_error(
    definition: Definition, key: str, budget: int, need: tuple[int, list[str]], what: str
) -> Diagnostic:
    needed, path = need
    span = _budget_span(definition, key)
    message = (
        f"`budget.{key}` is {budget}, but the shortest way from start to an end "
        f"({' → '.join(path)}) needs {needed} {what}{'' if needed == 1 else 's'}"
    )
    return error("OS507", message, span, suggestion=f"raise `budget.{key}` to at least {needed}")


def _budget_span(definition: Definition, key: str) -> Span:
    spans = definition.key_spans
    return spans.get(("budget", key)) or spans.get(("budget",)) or definition.name_span


GRAPH_CHECKS: tuple[Check, ...] = (
    check_initial_state,
    check_transition_targets,
    check_unreachable_states,
    check_end_reachable,
    check_no_transitions_out_of_end,
    check_ambiguous_transitions,
    check_events_match_kind,
    check_fanout_work,
    check_runbook_cycles,
    check_workflow_cycles,
    check_budget_covers_shortest_path,
)
