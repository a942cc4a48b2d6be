"""Draw workflow and runbook graphs as Mermaid, Graphviz DOT or SVG.

Every state is drawn with a shape and colour for its kind and a short label
saying what it does; approvals — the points where a human must decide — stand
out (hexagon, amber, thick border) in both formats. Edges are labelled with
their event and guard (``when`` source, via :func:`openseal.compiler.lang.expr.to_source`).
Work a state hands to another run is drawn too: a dashed edge from a ``delegate`` state to its
callee and from a ``spawn`` state to each workflow its children run, labelled with the children.
Output depends only on the graph, so the same definitions always draw the same.

>>> print(to_mermaid(graphs.workflows["procure_laptops"]))   # doctest: +SKIP
flowchart TD
    ...
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from openseal.compiler.analysis.build import DONE, state_name
from openseal.compiler.analysis.ir import RunbookGraph, WorkflowGraph
from openseal.compiler.definitions.specs import State, Step
from openseal.compiler.lang import expr as ex
from openseal.errors import OpenSealError

Drawable = WorkflowGraph | RunbookGraph

#: Node id of the start marker; state and step ids get a prefix so they never clash
#: with it or with words the formats reserve (``end`` in Mermaid, ``node`` in DOT).
_START = "start"


class DrawError(OpenSealError):
    """A graph could not be drawn."""

    code = "draw_error"


class GraphvizNotFound(DrawError):
    """SVG output needs Graphviz's ``dot`` program, which is not installed."""

    code = "graphviz_not_found"


# --------------------------------------------------------------------------- what to draw


@dataclass(frozen=True, slots=True)
class _Node:
    id: str
    kind: str
    lines: tuple[str, ...]
    #: the style key: the kind, or ``final_<outcome>`` for end states (Mermaid
    #: misreads class names that start with ``end``)
    style: str


@dataclass(frozen=True, slots=True)
class _Edge:
    source: str
    target: str
    label: str
    #: work handed to another run (a delegate's callee, a spawn's children), not a transition
    dashed: bool = False


def _node_id(name: str) -> str:
    return f"s_{name}"


def _seconds(value: float) -> str:
    """``259200.0`` → ``72h``; durations are stored in seconds."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


def describe_state(state: State) -> tuple[str, ...]:
    """The lines under a state's name: what kind of state it is and what it acts on."""
    kind = state.kind
    if state.turn is not None:
        return (f"turn: {state.turn.agent.dotted}",)
    if state.action is not None:
        target = state.action.proposal or state.action.skill
        return (f"action: {target.dotted if target else '?'}",)
    if state.proposal is not None:
        name, step = next(iter(state.proposal.items()))
        return (f"proposal: {name}", f"skill: {step.skill.dotted}")
    if state.approval is not None:
        lines = [f"approval: {state.approval.proposal.dotted}", "human checkpoint"]
        if state.approval.approvers:
            lines[-1] += f" ({', '.join(state.approval.approvers)})"
        return tuple(lines)
    if state.wait is not None:
        wait = state.wait
        what = f"timer {_seconds(wait.timer)}" if wait.timer is not None else f"event {wait.event}"
        return (f"wait: {what}",)
    if state.delegate is not None:
        return (f"delegate: {state.delegate.to.dotted}",)
    if state.parallel is not None:
        branches = ", ".join(sorted(state.parallel.branch))
        return (f"parallel ({state.parallel.join}): {branches}",)
    if state.for_each is not None:
        return (f"for_each: {ex.to_source(state.for_each.items)}",)
    if state.spawn is not None:
        spawn = state.spawn
        join = f"quorum {spawn.quorum}" if spawn.join == "quorum" else spawn.join
        return (f"spawn ({join}): {', '.join(sorted(spawn.child))}",)
    if state.end is not None:
        return (f"end: {state.end}",)
    return (kind,)


def _workflow_nodes(graph: WorkflowGraph) -> list[_Node]:
    nodes = []
    for name, state in graph.states.items():
        style = f"final_{state.end}" if state.end is not None else state.kind
        nodes.append(_Node(_node_id(name), state.kind, (name, *describe_state(state)), style))
    others = sorted({target for state in graph.states.values() for target, _ in _handed(state)})
    nodes += [_Node(_other_id(target), "other", (target,), "other") for target in others]
    return nodes


def _other_id(target: str) -> str:
    return "x_" + "".join(c if c.isalnum() else "_" for c in target)


def _handed(state: State) -> Iterator[tuple[str, str]]:
    """``(what runs the work, label)`` for the work a state hands to other runs."""
    if state.delegate is not None:
        yield state.delegate.to.dotted, "delegates"
    if state.spawn is not None:
        by_workflow: dict[str, list[str]] = {}
        for label, child in sorted(state.spawn.child.items()):
            by_workflow.setdefault(child.workflow, []).append(label)
        for workflow, labels in sorted(by_workflow.items()):
            yield f"workflow {workflow}", "child " + ", ".join(labels)


def _guard(expression: ex.Expression | None) -> str:
    return "" if expression is None else f"when {ex.to_source(expression)}"


def _state_edges(state: State) -> Iterator[tuple[ex.Ref, str]]:
    """Each transition's target reference with its label, in build order."""
    if state.next is not None:
        yield state.next, ""
    for event in sorted(state.on):
        choice = state.on[event]
        guard = _guard(choice.when)
        shown = "" if event == DONE and not guard else event
        yield choice.next, " ".join(p for p in (shown, guard) if p)
    many = len(state.branch) > 1
    for order, choice in enumerate(state.branch):
        label = _guard(choice.when) or ("otherwise" if many else "")
        yield choice.next, f"{order + 1}: {label}" if many else label


def _workflow_edges(graph: WorkflowGraph) -> list[_Edge]:
    edges = []
    if graph.start is not None:
        edges.append(_Edge(_START, _node_id(graph.start), ""))
    for name, state in graph.states.items():
        for ref, label in _state_edges(state):
            target = state_name(ref)
            if target is not None and target in graph.states:
                edges.append(_Edge(_node_id(name), _node_id(target), label))
        for other, label in _handed(state):
            edges.append(_Edge(_node_id(name), _other_id(other), label, dashed=True))
    return edges


def describe_step(step: Step) -> tuple[str, ...]:
    what = f"skill: {step.skill.dotted}" if step.skill is not None else f"uses: {step.uses}"
    lines = [what]
    if step.when is not None:
        lines.append(_guard(step.when))
    return tuple(lines)


def _runbook_nodes(graph: RunbookGraph) -> list[_Node]:
    nodes = []
    for name, step in graph.steps.items():
        # Skill steps reach outside the process; built-in steps only shape data.
        style = "step" if step.skill is not None else "builtin_step"
        nodes.append(_Node(_node_id(name), "step", (name, *describe_step(step)), style))
    return nodes


def _runbook_edges(graph: RunbookGraph) -> list[_Edge]:
    return [_Edge(_node_id(a), _node_id(b), "") for a, b in sorted(graph.graph.edges)]


def _parts(graph: Drawable) -> tuple[str, list[_Node], list[_Edge]]:
    if isinstance(graph, WorkflowGraph):
        return f"workflow {graph.name}", _workflow_nodes(graph), _workflow_edges(graph)
    return f"runbook {graph.name}", _runbook_nodes(graph), _runbook_edges(graph)


# --------------------------------------------------------------------------- Mermaid

_MERMAID_SHAPES: dict[str, tuple[str, str]] = {
    "turn": ("(", ")"),
    "action": ("[", "]"),
    "proposal": ("[/", "/]"),
    "approval": ("{{", "}}"),
    "decision": ("{", "}"),
    "transform": ("[", "]"),
    "wait": ("([", "])"),
    "delegate": (">", "]"),
    "parallel": ("[[", "]]"),
    "for_each": ("[[", "]]"),
    "spawn": ("[[", "]]"),
    "other": ("[", "]"),
    "end": ("(((", ")))"),
    "step": ("[", "]"),
}

_MERMAID_CLASSES: dict[str, str] = {
    "turn": "fill:#dbeafe,stroke:#1d4ed8",
    "action": "fill:#e0e7ff,stroke:#4338ca",
    "proposal": "fill:#f3e8ff,stroke:#7e22ce",
    "approval": "fill:#fde68a,stroke:#b45309,stroke-width:3px",
    "decision": "fill:#f1f5f9,stroke:#475569",
    "transform": "fill:#f1f5f9,stroke:#475569",
    "wait": "fill:#ecfeff,stroke:#0e7490,stroke-dasharray:4 3",
    "delegate": "fill:#dcfce7,stroke:#15803d",
    "parallel": "fill:#f1f5f9,stroke:#475569",
    "for_each": "fill:#f1f5f9,stroke:#475569",
    "spawn": "fill:#dcfce7,stroke:#15803d",
    "other": "fill:#ffffff,stroke:#15803d,stroke-dasharray:4 3",
    "final_completed": "fill:#bbf7d0,stroke:#15803d",
    "final_failed": "fill:#fecaca,stroke:#b91c1c",
    "final_canceled": "fill:#e5e7eb,stroke:#4b5563",
    "step": "fill:#e0e7ff,stroke:#4338ca",
    "builtin_step": "fill:#f1f5f9,stroke:#475569",
    "start": "fill:#111827,stroke:#111827",
}


def _mermaid_text(text: str) -> str:
    """Escape text for a quoted Mermaid label (entity codes, as Mermaid reads them)."""
    out = text.replace("#", "#35;").replace('"', "#quot;").replace("&", "#amp;")
    return out.replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(graph: Drawable) -> str:
    """A Mermaid ``flowchart`` of a workflow or runbook; approvals have class ``approval``."""
    title, nodes, edges = _parts(graph)
    lines = ["---", f"title: {_mermaid_text(title)}", "---", "flowchart TD"]
    if isinstance(graph, WorkflowGraph):
        lines.append(f'    {_START}((" "))')
    for node in nodes:
        left, right = _MERMAID_SHAPES[node.kind]
        label = "<br/>".join(_mermaid_text(line) for line in node.lines)
        lines.append(f'    {node.id}{left}"{label}"{right}')
    for edge in edges:
        line = "-.->" if edge.dashed else "-->"
        arrow = f'{line}|"{_mermaid_text(edge.label)}"|' if edge.label else line
        lines.append(f"    {edge.source} {arrow} {edge.target}")
    used: dict[str, list[str]] = {}
    if isinstance(graph, WorkflowGraph):
        used["start"] = [_START]
    for node in nodes:
        used.setdefault(node.style, []).append(node.id)
    for style in sorted(used):
        lines.append(f"    classDef {style} {_MERMAID_CLASSES[style]}")
        lines.append(f"    class {','.join(used[style])} {style}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- DOT

_DOT_STYLES: dict[str, dict[str, str]] = {
    "turn": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbeafe"},
    "action": {"shape": "box", "style": "filled", "fillcolor": "#e0e7ff"},
    "proposal": {"shape": "note", "style": "filled", "fillcolor": "#f3e8ff"},
    "approval": {
        "shape": "hexagon",
        "style": "filled,bold",
        "fillcolor": "#fde68a",
        "color": "#b45309",
        "penwidth": "3",
    },
    "decision": {"shape": "diamond", "style": "filled", "fillcolor": "#f1f5f9"},
    "transform": {"shape": "box", "style": "filled", "fillcolor": "#f1f5f9"},
    "wait": {"shape": "box", "style": "rounded,dashed,filled", "fillcolor": "#ecfeff"},
    "delegate": {"shape": "cds", "style": "filled", "fillcolor": "#dcfce7"},
    "parallel": {"shape": "box", "style": "filled", "fillcolor": "#f1f5f9", "peripheries": "2"},
    "for_each": {"shape": "box3d", "style": "filled", "fillcolor": "#f1f5f9"},
    "spawn": {"shape": "box3d", "style": "filled", "fillcolor": "#dcfce7"},
    "other": {"shape": "box", "style": "dashed", "color": "#15803d"},
    "final_completed": {"shape": "doublecircle", "style": "filled", "fillcolor": "#bbf7d0"},
    "final_failed": {"shape": "doublecircle", "style": "filled", "fillcolor": "#fecaca"},
    "final_canceled": {"shape": "doublecircle", "style": "filled", "fillcolor": "#e5e7eb"},
    "step": {"shape": "box", "style": "rounded,filled", "fillcolor": "#e0e7ff"},
    "builtin_step": {"shape": "box", "style": "rounded,filled", "fillcolor": "#f1f5f9"},
}


def _dot_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _dot_attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f"{key}={_dot_string(value)}" for key, value in attrs.items())


def to_dot(graph: Drawable) -> str:
    """Graphviz DOT of a workflow or runbook; approvals are amber hexagons with a bold border."""
    title, nodes, edges = _parts(graph)
    lines = [
        f"digraph {_dot_string(graph.name)} {{",
        f"    graph [{_dot_attrs({'label': title, 'labelloc': 't', 'fontname': 'Helvetica'})}];",
        f"    node [{_dot_attrs({'fontname': 'Helvetica', 'fontsize': '11'})}];",
        f"    edge [{_dot_attrs({'fontname': 'Helvetica', 'fontsize': '10'})}];",
    ]
    if isinstance(graph, WorkflowGraph):
        start = {"shape": "point", "width": "0.15", "label": ""}
        lines.append(f"    {_START} [{_dot_attrs(start)}];")
    for node in nodes:
        attrs = {**_DOT_STYLES[node.style], "label": "\n".join(node.lines)}
        lines.append(f"    {node.id} [{_dot_attrs(attrs)}];")
    for edge in edges:
        attrs = {"label": edge.label} if edge.label else {}
        if edge.dashed:
            attrs["style"] = "dashed"
        label = f" [{_dot_attrs(attrs)}]" if attrs else ""
        lines.append(f"    {edge.source} -> {edge.target}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- SVG

_INSTALL_HINT = (
    "SVG output needs the `dot` program from Graphviz, which is not installed; "
    "install the `graphviz` package (e.g. `apt-get install graphviz` or `brew install graphviz`), "
    "or use --format mermaid or --format dot"
)


def to_svg(graph: Drawable, *, timeout: float = 60.0) -> bytes:
    """SVG of a workflow or runbook, drawn by Graphviz's ``dot`` from :func:`to_dot`.

    Raises :class:`GraphvizNotFound` when ``dot`` is not on ``PATH`` and
    :class:`DrawError` when it fails.
    """
    program = shutil.which("dot")
    if program is None:
        raise GraphvizNotFound(_INSTALL_HINT)
    try:
        done = subprocess.run(
            [program, "-Tsvg"],
            input=to_dot(graph).encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DrawError(f"Graphviz `dot` could not draw `{graph.name}`: {exc}") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = reason[0] if reason else f"exit status {done.returncode}"
        raise DrawError(f"Graphviz `dot` could not draw `{graph.name}`: {detail}")
    return done.stdout
