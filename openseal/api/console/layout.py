"""A compiled workflow graph laid out for drawing: nodes with positions, edges with paths.

The console draws a run's graph in the browser as SVG built element by element from this
layout, so drawing needs neither Graphviz nor a Mermaid renderer on the machine. The labels
say what ``openseal graph`` says (each state's kind and what it acts on; edges carry their
event and guard). The layout is layered: a state's layer is its longest distance from the
initial state once back edges (loops such as "request changes → research") are set aside;
inside a layer, states are ordered by the mean position of their predecessors.

Example::

    >>> drawing = lay_out(document["graph"])
    >>> drawing.to_dict()["nodes"][0]["name"]
    'research'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.compiler import expr as ex

MIN_NODE_WIDTH = 180
#: a generous width per character of the 13 px labels, so text stays inside its box
CHAR_WIDTH = 7.4
LINE_HEIGHT = 18
#: longer edge labels are cut (the whole label is kept for a tooltip)
LABEL_CHARS = 44
NODE_PADDING = 14
COLUMN_GAP = 40
LAYER_GAP = 70
MARGIN = 20
#: events that need no label on their edge
_PLAIN_EVENTS = frozenset({"", "done", "next"})


@dataclass(frozen=True)
class Node:
    name: str
    kind: str
    lines: tuple[str, ...]
    x: float
    y: float
    width: float
    height: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "lines": list(self.lines),
            "x": self.x, "y": self.y, "width": self.width, "height": self.height,
        }  # fmt: skip


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str
    #: an SVG path (numbers and commands only)
    path: str
    label_x: float
    label_y: float
    #: SVG text-anchor of the label: start, middle or end
    anchor: str
    back: bool

    @property
    def short_label(self) -> str:
        if len(self.label) <= LABEL_CHARS:
            return self.label
        return self.label[: LABEL_CHARS - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source, "to": self.target, "label": self.label,
            "short_label": self.short_label, "path": self.path, "label_x": self.label_x,
            "label_y": self.label_y, "anchor": self.anchor, "back": self.back,
        }  # fmt: skip


@dataclass(frozen=True)
class Drawing:
    width: float
    height: float
    initial: str | None
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "width": self.width,
            "height": self.height,
            "initial": self.initial,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
        }


def describe(kind: str, config: Mapping[str, Any]) -> tuple[str, ...]:
    """The lines under a state's name, from its compiled configuration."""
    if kind == "turn":
        return (f"turn: {_short(config.get('agent'))}",)
    if kind == "action":
        return (f"action: {_short(config.get('proposal') or config.get('skill'))}",)
    if kind == "proposal":
        name, step = next(iter(config.items()), ("?", {}))
        skill = step.get("skill") if isinstance(step, Mapping) else None
        return (f"proposal: {name}", f"skill: {_short(skill)}")
    if kind == "approval":
        approvers = config.get("approvers") or []
        who = f" ({', '.join(str(a) for a in approvers)})" if approvers else ""
        return (f"approval: {_short(config.get('proposal'))}", f"human checkpoint{who}")
    if kind == "wait":
        timer = config.get("timer")
        return (
            f"wait: timer {timer:g}s"
            if timer is not None
            else f"wait: event {config.get('event')}",
        )
    if kind == "delegate":
        return (f"delegate: {_short(config.get('to'))}",)
    if kind == "end":
        return (f"end: {config.get('outcome')}",)
    return (kind,)


def _short(value: object) -> str:
    return "?" if value is None else str(value)


def _label(transition: Mapping[str, Any]) -> str:
    event = str(transition.get("event") or "")
    shown = "" if event in _PLAIN_EVENTS else event
    guard = transition.get("guard")
    if guard is not None:
        try:
            shown = f"{shown} when {ex.to_source(ex.from_json(guard))}".strip()
        except ex.ExpressionFormatError:
            shown = f"{shown} when ?".strip()
    return shown


def _layers(
    names: list[str], initial: str | None, edges: list[tuple[str, str]]
) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """Each state's layer, and the back edges set aside to find them."""
    successors: dict[str, list[str]] = {n: [] for n in names}
    for source, target in edges:
        successors[source].append(target)
    back: set[tuple[str, str]] = set()
    order: list[str] = []  # reverse post-order of a depth-first walk
    seen: set[str] = set()
    on_path: set[str] = set()
    roots = ([initial] if initial in successors else []) + names
    for root in roots:
        if root in seen:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        seen.add(root)
        on_path.add(root)
        while stack:
            node, index = stack[-1]
            if index < len(successors[node]):
                stack[-1] = (node, index + 1)
                target = successors[node][index]
                if target in on_path:
                    back.add((node, target))
                elif target not in seen:
                    seen.add(target)
                    on_path.add(target)
                    stack.append((target, 0))
                continue
            stack.pop()
            on_path.discard(node)
            order.append(node)
    layer = {n: 0 for n in names}
    for node in reversed(order):
        for target in successors[node]:
            if (node, target) not in back:
                layer[target] = max(layer[target], layer[node] + 1)
    return layer, back


def lay_out(graph: Mapping[str, Any]) -> Drawing:
    """Lay out a compiled workflow's ``graph`` (as the compiled document holds it)."""
    states: Mapping[str, Any] = graph.get("states") or {}
    names = sorted(states)
    initial = graph.get("initial")
    labels: dict[tuple[str, str], list[str]] = {}
    for t in graph.get("transitions") or ():
        if t.get("from") in states and t.get("to") in states:
            shown = _label(t)
            pair = labels.setdefault((str(t["from"]), str(t["to"])), [])
            if shown not in pair:
                pair.append(shown)
    pairs = list(labels)
    layer, back = _layers(names, initial if isinstance(initial, str) else None, pairs)
    rows: dict[int, list[str]] = {}
    for name in names:
        rows.setdefault(layer[name], []).append(name)
    column: dict[str, float] = {}
    for depth in sorted(rows):
        row = rows[depth]
        for index, name in enumerate(row):
            parents = [column[s] for s, t in pairs if t == name and s in column]
            column[name] = sum(parents) / len(parents) if parents else float(index)
        row.sort(key=lambda n: (column[n], n))
        for index, name in enumerate(row):
            column[name] = float(index)
    lines = {
        n: (n, *describe(str(states[n].get("kind")), states[n].get("config") or {})) for n in names
    }
    longest = max((len(line) for v in lines.values() for line in v), default=0)
    width = max(MIN_NODE_WIDTH, round(longest * CHAR_WIDTH + 24))
    tallest = max((len(v) for v in lines.values()), default=1)
    height = tallest * LINE_HEIGHT + NODE_PADDING
    widest = max((len(r) for r in rows.values()), default=1)
    total_width = widest * width + (widest - 1) * COLUMN_GAP + 2 * MARGIN + _SIDE_ROOM
    nodes: dict[str, Node] = {}
    for depth, row in rows.items():
        used = len(row) * width + (len(row) - 1) * COLUMN_GAP
        offset = (total_width - _SIDE_ROOM - used) / 2
        for index, name in enumerate(row):
            x = offset + index * (width + COLUMN_GAP)
            y = MARGIN + depth * (height + LAYER_GAP)
            kind = str(states[name].get("kind"))
            nodes[name] = Node(name, kind, lines[name], x, y, width, height)
    edges = [
        _edge(nodes[a], nodes[b], " / ".join(p for p in labels[(a, b)] if p), (a, b) in back)
        for a, b in pairs
    ]
    depth_count = max(rows, default=0) + 1
    total_height = 2 * MARGIN + depth_count * height + (depth_count - 1) * LAYER_GAP
    return Drawing(
        total_width,
        total_height,
        initial if isinstance(initial, str) else None,
        tuple(nodes[n] for n in names),
        tuple(edges),
    )


#: room on the right for loops drawn back up and their labels
_SIDE_ROOM = 150


def _edge(source: Node, target: Node, label: str, back: bool) -> Edge:
    if back:  # loop back up along the right-hand side of both nodes
        x1, y1 = source.x + source.width, source.y + source.height / 2
        x2, y2 = target.x + target.width, target.y + target.height / 2
        bend = max(x1, x2) + COLUMN_GAP * 1.5
        path = f"M {x1:.1f} {y1:.1f} C {bend:.1f} {y1:.1f} {bend:.1f} {y2:.1f} {x2:.1f} {y2:.1f}"
        return Edge(source.name, target.name, label, path, bend - 8, y2 + 22, "start", True)
    x1, y1 = source.x + source.width / 2, source.y + source.height
    x2, y2 = target.x + target.width / 2, target.y
    middle = (y1 + y2) / 2
    path = f"M {x1:.1f} {y1:.1f} C {x1:.1f} {middle:.1f} {x2:.1f} {middle:.1f} {x2:.1f} {y2:.1f}"
    anchor = "middle" if abs(x2 - x1) < 1 else ("end" if x2 < x1 else "start")
    shift = {"middle": 6.0, "end": -6.0, "start": 6.0}[anchor]
    label_x = (x1 + x2) / 2 + shift if anchor != "middle" else x1 + shift
    anchor = "start" if anchor == "middle" else anchor
    return Edge(source.name, target.name, label, path, label_x, middle, anchor, False)
