"""The peer system's HCL runbooks: one ``workflow`` of ``node`` and ``edge`` blocks.

::

    workflow "triage" {
      description = "..."
      node webhook "start" {}
      node http "fetch" { method = "GET"  url = "https://example.org/${start.output.id}" }
      node if "urgent" { condition = "fetch.output.body.priority > 3" }
      edge "start" "fetch" {}
      edge "fetch" "urgent" {}
      edge "urgent" "page" { condition = "output.result" }
    }

Nodes become steps of a :class:`~openseal.compiler.analysis.runbook_plan.Plan`, edges become
dependencies, and an edge's ``condition`` guards its target, evaluated with
the source's output bound to ``output``. A node runs when *any* incoming edge
fires. ``${node.output...}`` reads a node's output (and makes it a
dependency). Condition-like attributes (``condition``, ``expression``,
``predicate``, a switch's ``value``) are expressions written as strings, as
the peer system writes them. Our own ``workflow`` kind uses ``state`` blocks;
:func:`is_node_form` tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx

from openseal.compiler.analysis.builtin_steps import ITEM_ROOT, STEP_TYPES
from openseal.compiler.analysis.runbook_plan import EdgeGuard, FailurePolicy, Plan, PlanStep
from openseal.compiler.definitions.field_types import DecodeContext, parse_duration, to_expression
from openseal.compiler.diagnostics import Diagnostic, Related, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.syntax.document_tree import Block, Document, Scalar
from openseal.compiler.syntax.fold import SpannedStr, fold
from openseal.compiler.syntax.spans import Span


@dataclass(frozen=True, slots=True)
class NodeType:
    """How one node type maps onto a built-in step."""

    uses: str
    #: node attribute → step argument (the peer system's name and ours may both be listed)
    attributes: Mapping[str, str] = field(default_factory=dict)
    #: attributes whose plain string is an expression (``condition = "output.ok"``)
    expressions: tuple[str, ...] = ()
    #: attributes accepted for compatibility and otherwise ignored
    ignored: tuple[str, ...] = ()
    #: attribute → the values it may take when written as a literal
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _same(*names: str) -> dict[str, str]:
    return {n: n for n in names}


AGGREGATE_OPERATIONS = ("count", "sum", "min", "max", "avg")
SORT_ORDERS = ("asc", "desc")

#: The node types. Where the peer system's executors name an attribute
#: differently from our first reading of its files, both names are accepted
#: (``operation``/``op``, ``field``/``by``, ``condition``/``predicate``,
#: ``template``/``expression``, ``variables``/``values``); writing both is an error.
NODE_TYPES: dict[str, NodeType] = {
    "webhook": NodeType("trigger", ignored=("path", "method")),
    "manual": NodeType("trigger"),
    "http": NodeType("http", _same("method", "url", "headers", "body", "expect_status")),
    # `template` is text with ${...}; `expression` is an expression written as a string.
    "transform": NodeType(
        "transform", {"template": "value", "expression": "value"}, ("expression",)
    ),
    # `variable` + `value` sets one variable; `variables` (or `values`) sets several.
    "set": NodeType(
        "set", {"variables": "value", "values": "value", "variable": "variable", "value": "item"}
    ),
    "if": NodeType("if", _same("condition"), ("condition",)),
    "switch": NodeType("switch", _same("value", "cases", "default"), ("value",)),
    "filter": NodeType(
        "filter",
        {"items": "items", "condition": "predicate", "predicate": "predicate"},
        ("condition", "predicate"),
    ),
    # `order = "asc" | "desc"` is `descending = false | true`.
    "sort": NodeType(
        "sort",
        {
            "items": "items",
            "field": "by",
            "by": "by",
            "order": "descending",
            "descending": "descending",
        },
        choices={"order": SORT_ORDERS},
    ),
    "aggregate": NodeType(
        "aggregate",
        {"items": "items", "operation": "op", "op": "op", "field": "field"},
        choices={"operation": AGGREGATE_OPERATIONS, "op": AGGREGATE_OPERATIONS},
    ),
    "merge": NodeType("merge", _same("values")),
    "split": NodeType("split", _same("text", "separator", "trim")),
    "delay": NodeType("delay", _same("seconds")),
}
#: attributes every node accepts
COMMON_ATTRIBUTES = ("description", "timeout")
WORKFLOW_ATTRIBUTES = ("description", "concurrency", "on_failure")
#: names node ids cannot take, because expressions use them as roots
RESERVED = ("input", "step", "output", ITEM_ROOT)
DEFAULT_TIMEOUT = 60.0


@dataclass
class _Settings:
    description: str | None = None
    on_failure: FailurePolicy = "fail_fast"
    concurrency: int = 4


def is_node_form(document: Document) -> bool:
    """Whether the file holds a ``workflow`` made of ``node``/``edge`` blocks."""
    return any(
        block.type == "workflow" and any(b.type in ("node", "edge") for b in block.body.blocks)
        for block in document.body.blocks
    )


def plan_nodes(document: Document) -> tuple[Plan | None, list[Diagnostic]]:
    """The plan of a node/edge file, or ``None`` with located diagnostics."""
    reader = _Reader()
    workflow = reader.workflow_block(document)
    if workflow is None:
        return None, reader.diagnostics
    plan = reader.plan(workflow)
    return (None if reader.failed else plan), reader.diagnostics


class _Reader:
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.node_spans: dict[str, Span] = {}

    @property
    def failed(self) -> bool:
        return any(d.is_error for d in self.diagnostics)

    def report(self, code: str, message: str, span: Span, **kwargs: object) -> None:
        self.diagnostics.append(error(code, message, span, **kwargs))  # type: ignore[arg-type]

    # --- the file and the workflow block ------------------------------------------------

    def workflow_block(self, document: Document) -> Block | None:
        workflows = [b for b in document.body.blocks if b.type == "workflow"]
        strays = [a.name_span for a in document.body.attributes]
        strays += [b.type_span for b in document.body.blocks if b.type != "workflow"]
        for span in strays:
            self.report(
                "OS104", "a node/edge file holds one `workflow` block and nothing else", span
            )
        for other in workflows[1:]:
            self.report(
                "OS104",
                "a node/edge file holds exactly one `workflow` block",
                other.type_span,
                related=[Related(workflows[0].type_span, "the first one")],
            )
        first = workflows[0]
        if len(first.labels) != 1:
            self.report("OS104", 'write `workflow "name" { ... }` with one name', first.type_span)
            return None
        return first

    def plan(self, workflow: Block) -> Plan:
        settings = self.settings(workflow)
        nodes = [b for b in workflow.body.blocks if b.type == "node"]
        edges = [b for b in workflow.body.blocks if b.type == "edge"]
        for other in workflow.body.blocks:
            if other.type not in ("node", "edge"):
                self.report(
                    "OS101",
                    f"unknown block `{other.type}`; a node/edge workflow holds "
                    "`node` and `edge` blocks",
                    other.type_span,
                    suggestion=did_you_mean(other.type, ("node", "edge")),
                )
        partial = {s.id: s for s in (self.node(b) for b in nodes) if s is not None}
        guards = self.edges(edges, partial)
        steps = {
            sid: _with_edges(partial[sid], guards.get(sid, ()), partial) for sid in sorted(partial)
        }
        plan = Plan(
            workflow.labels[0].value,
            settings.description,
            None,
            None,
            settings.on_failure,
            settings.concurrency,
            steps,
            {},
            workflow.labels[0].span,
            node_roots=True,
        )
        self.cycles(plan, edges)
        return plan

    def settings(self, workflow: Block) -> _Settings:
        out = _Settings()
        for attribute in workflow.body.attributes:
            value = attribute.value.value if isinstance(attribute.value, Scalar) else None
            name = attribute.name
            if name not in WORKFLOW_ATTRIBUTES:
                self.report(
                    "OS101",
                    f"unknown key `{name}`; allowed keys: description, concurrency, on_failure",
                    attribute.name_span,
                    suggestion=did_you_mean(name, WORKFLOW_ATTRIBUTES),
                )
            elif name == "on_failure" and value not in ("fail_fast", "continue"):
                self.report(
                    "OS104", "`on_failure` is `fail_fast` or `continue`", attribute.value.span
                )
            elif name == "concurrency" and not (
                isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 64
            ):
                self.report(
                    "OS104", "`concurrency` is a whole number from 1 to 64", attribute.value.span
                )
            elif name == "description" and not isinstance(value, str):
                self.report("OS103", "`description` is a string", attribute.value.span)
            else:
                setattr(out, name, value)
        return out

    # --- nodes ------------------------------------------------------------------------

    def node(self, block: Block) -> PlanStep | None:
        if len(block.labels) != 2:
            self.report("OS104", 'a node is written `node TYPE "id" { ... }`', block.type_span)
            return None
        type_label, id_label = block.labels
        node_id = id_label.value
        if not self.register(node_id, id_label.span):
            return None
        node_type = NODE_TYPES.get(type_label.value)
        if node_type is None:
            listing = ", ".join(NODE_TYPES)
            self.report(
                "OS104",
                f"unknown node type `{type_label.value}`; node types are {listing}",
                type_label.span,
                suggestion=did_you_mean(type_label.value, NODE_TYPES),
            )
            return None
        args, timeout = self.arguments(block, node_type)
        for argument in dict.fromkeys(node_type.attributes.values()):
            if argument in STEP_TYPES[node_type.uses].required and argument not in args:
                names = [a for a, arg in node_type.attributes.items() if arg == argument]
                also = "".join(f" (or `{n}`)" for n in names[1:])
                self.report(
                    "OS102",
                    f"{type_label.value} node `{node_id}` needs `{names[0]}`{also}",
                    id_label.span,
                )
        needs = _references(args)
        return PlanStep(
            node_id, node_type.uses, None, args, needs, (), None, timeout, id_label.span
        )

    def register(self, node_id: str, span: Span) -> bool:
        if not node_id.isidentifier():
            self.report("OS104", f"node id `{node_id}` must be a name (letters, digits, _)", span)
            return False
        if node_id in RESERVED:
            self.report(
                "OS104", f"`{node_id}` cannot be a node id; expressions use it as a name", span
            )
            return False
        first = self.node_spans.get(node_id)
        if first is not None:
            self.report(
                "OS203",
                f"node `{node_id}` is defined more than once",
                span,
                related=[Related(first, "first defined here")],
            )
            return False
        self.node_spans[node_id] = span
        return True

    def arguments(
        self, block: Block, node_type: NodeType
    ) -> tuple[dict[str, ex.Expression], float]:
        folded, found = fold(block.body)
        self.diagnostics.extend(found)
        data = folded.data if isinstance(folded.data, dict) else {}
        args: dict[str, ex.Expression] = {}
        #: step argument → the attribute that set it, and where
        given: dict[str, tuple[str, Span]] = {}
        timeout = DEFAULT_TIMEOUT
        ctx = DecodeContext(fallback_span=block.span)
        for name, value in data.items():
            span = folded.keys.get((name,), block.span)
            if name == "timeout":
                timeout = self.timeout(value, span)
            elif name in node_type.attributes:
                argument = node_type.attributes[name]
                if argument in given:
                    first, first_span = given[argument]
                    self.report(
                        "OS006",
                        f"`{name}` and `{first}` are two names for one attribute; write one",
                        span,
                        related=[Related(first_span, f"`{first}` is written here")],
                    )
                    continue
                given[argument] = (name, span)
                args[argument] = self.attribute(node_type, name, value, ctx)
            elif name not in (*COMMON_ATTRIBUTES, *node_type.ignored):
                allowed = [*node_type.attributes, *COMMON_ATTRIBUTES]
                self.report(
                    "OS101",
                    f"unknown key `{name}`; allowed keys: " + ", ".join(f"`{a}`" for a in allowed),
                    span,
                    suggestion=did_you_mean(name, allowed),
                )
        self.diagnostics.extend(ctx.diagnostics)
        if "variable" in given or "item" in given:
            self.one_variable(args, given, block)
        return args, timeout

    def attribute(
        self, node_type: NodeType, name: str, value: object, ctx: DecodeContext
    ) -> ex.Expression:
        choices = node_type.choices.get(name)
        span = getattr(value, "span", None)
        if choices is not None and isinstance(value, str):
            if value not in choices:
                listing = ", ".join(f'"{c}"' for c in choices)
                self.report(
                    "OS104",
                    f'`{name}` is one of {listing}; got "{value}"',
                    span if isinstance(span, Span) else ctx.fallback_span,
                    suggestion=did_you_mean(value, choices, fmt='"{}"'),
                )
            elif name == "order":
                return ex.Literal(value == "desc", span if isinstance(span, Span) else ex.NO_SPAN)
        elif name == "order":
            self.report(
                "OS104",
                '`order` is written as "asc" or "desc"',
                span if isinstance(span, Span) else ctx.fallback_span,
            )
        return self.expression(value, name in node_type.expressions, ctx)

    def one_variable(
        self, args: dict[str, ex.Expression], given: Mapping[str, tuple[str, Span]], block: Block
    ) -> None:
        """``variable = "name"`` with ``value = ...`` sets one variable: ``{name: value}``."""
        variable, item = args.pop("variable", None), args.pop("item", None)
        if "value" in given:
            written, span = given["variable" if "variable" in given else "item"]
            several, first_span = given["value"]
            self.report(
                "OS006",
                f"`{written}` sets one variable and `{several}` several; write one of them",
                span,
                related=[Related(first_span, f"`{several}` is written here")],
            )
            return
        if variable is None or item is None:
            missing, present = ("value", "variable") if item is None else ("variable", "value")
            self.report(
                "OS102",
                f"`{present}` needs `{missing}` beside it (`variable` names what `value` sets)",
                given[present if present == "variable" else "item"][1],
            )
            return
        name = variable.value if isinstance(variable, ex.Literal) else None
        if not isinstance(name, str) or not name.isidentifier():
            self.report("OS104", "`variable` is a name written as a string", variable.span)
            return
        args["value"] = ex.ObjectExpr(((name, item),), block.span)

    def timeout(self, value: object, span: Span) -> float:
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.report("OS104", f"`timeout`: {exc}", getattr(value, "span", span))
            return DEFAULT_TIMEOUT

    def expression(self, value: object, is_expression: bool, ctx: DecodeContext) -> ex.Expression:
        if is_expression and isinstance(value, SpannedStr) and "${" not in value:
            # The peer system writes conditions as strings: "output.status == 200".
            start = Span.point(value.span.file, value.span.line, value.span.column + 1)
            node, found = ex.parse_expression(str(value), start)
            self.diagnostics.extend(found)
            return node if node is not None else ex.Literal(None, value.span)
        return to_expression(value, ctx)

    # --- edges -----------------------------------------------------------------------

    def edges(
        self, blocks: list[Block], nodes: Mapping[str, PlanStep]
    ) -> dict[str, tuple[EdgeGuard, ...]]:
        guards: dict[str, list[EdgeGuard]] = {}
        seen: dict[tuple[str, str], Span] = {}
        ctx = DecodeContext()
        for block in blocks:
            if len(block.labels) != 2:
                self.report(
                    "OS104", 'an edge is written `edge "from" "to" { ... }`', block.type_span
                )
                continue
            source, target = block.labels
            if not all(self.endpoint(label.value, label.span) for label in (source, target)):
                continue
            pair = (source.value, target.value)
            if pair in seen:
                self.report(
                    "OS203",
                    f"edge `{source.value}` → `{target.value}` is written twice",
                    block.type_span,
                    related=[Related(seen[pair], "first written here")],
                )
                continue
            seen[pair] = block.type_span
            condition = self.condition(block, ctx)
            guards.setdefault(target.value, []).append(
                EdgeGuard(source.value, condition, source.span)
            )
        self.diagnostics.extend(ctx.diagnostics)
        self.unknown_references(nodes)
        return {k: tuple(v) for k, v in guards.items()}

    def endpoint(self, node_id: str, span: Span) -> bool:
        if node_id in self.node_spans:
            return True
        self.report(
            "OS407",
            f"edge endpoint `{node_id}` is not a node of this workflow",
            span,
            suggestion=did_you_mean(node_id, self.node_spans),
        )
        return False

    def condition(self, block: Block, ctx: DecodeContext) -> ex.Expression | None:
        condition: ex.Expression | None = None
        for attribute in block.body.attributes:
            if attribute.name != "condition":
                self.report(
                    "OS101",
                    f"unknown key `{attribute.name}`; an edge takes `condition`",
                    attribute.name_span,
                    suggestion=did_you_mean(attribute.name, ("condition",)),
                )
                continue
            folded, _ = fold(block.body)
            value = folded.data.get("condition") if isinstance(folded.data, dict) else None
            condition = self.expression(value, True, ctx)
        return condition

    def unknown_references(self, nodes: Mapping[str, PlanStep]) -> None:
        for step in nodes.values():
            for name, expression in step.args.items():
                for ref in ex.references(expression):
                    if ref.root in ("input", *self.node_spans):
                        continue
                    if ref.root == ITEM_ROOT and name == "predicate":
                        continue
                    self.report(
                        "OS201",
                        f"unknown reference `{ref.root}` in node `{step.id}`; "
                        "expressions read `input` and other nodes' `<id>.output`",
                        ref.span,
                        suggestion=did_you_mean(ref.root, self.node_spans),
                    )

    def cycles(self, plan: Plan, edges: list[Block]) -> None:
        dag = plan.graph()
        for component in sorted(sorted(c) for c in nx.strongly_connected_components(dag)):
            if len(component) == 1 and not dag.has_edge(component[0], component[0]):
                continue
            cycle = [str(a) for a, _ in nx.find_cycle(dag.subgraph(component), source=component[0])]
            names = " → ".join([*cycle, cycle[0]])
            span = _edge_span(edges, cycle[-1], cycle[0]) or plan.steps[cycle[0]].span
            self.report(
                "OS406",
                f"nodes of `{plan.name}` depend on each other in a cycle: {names}",
                span,
                suggestion="remove one of these edges or references",
            )


def _references(args: Mapping[str, ex.Expression]) -> tuple[str, ...]:
    """Roots read by a node's arguments; the ones that are not nodes are reported later."""
    roots = {
        ref.root
        for name, expression in args.items()
        for ref in ex.references(expression)
        if ref.root != "input" and not (ref.root == ITEM_ROOT and name == "predicate")
    }
    return tuple(sorted(roots))


def _edge_span(edges: list[Block], source: str, target: str) -> Span | None:
    for block in edges:
        if [label.value for label in block.labels] == [source, target]:
            return block.type_span
    return None


def _with_edges(
    step: PlanStep, guards: tuple[EdgeGuard, ...], known: Mapping[str, object]
) -> PlanStep:
    needs = tuple(n for n in step.needs if n in known)
    return PlanStep(
        step.id, step.uses, None, step.args, needs, (), None, step.timeout, step.span, guards
    )


__all__ = ["NODE_TYPES", "is_node_form", "plan_nodes"]
