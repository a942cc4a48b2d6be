"""The expression tree: frozen nodes, their canonical JSON form and a walker.

Every node carries the :class:`Span` it was parsed from, declared with
``compare=False`` so ``==`` and ``hash`` ignore positions: the same expression
written in HCL or YAML, or on another line, is the same tree.

The JSON form is span-free and exact: ``from_json(to_json(e)) == e``. Compiled
graphs store guards in this form so the runtime evaluates them without the
parser.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from openseal.compiler.syntax.spans import Span
from openseal.errors import OpenSealError

#: The span of nodes that were not parsed from a file (built in code or read from JSON).
NO_SPAN = Span.point("<expression>", 0, 0)

LiteralValue = str | int | float | bool | None
#: A static step along a reference: an attribute/key name or a list index.
PathPart = str | int

UNARY_OPS = ("!", "-")
BINARY_OPS = ("||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%")

#: Binding strength of binary operators (higher binds tighter), as in HCL.
PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}

#: Guards against trees deep enough to exhaust Python's recursion limit.
MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class Literal:
    value: LiteralValue
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class ListExpr:
    items: tuple[Expression, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class ObjectExpr:
    """``{ k = v, ... }``; keys are unique and kept in source order.

    The compiled form (:func:`to_json`) lists them sorted, so the order they are
    written in never changes a digest.
    """

    items: tuple[tuple[str, Expression], ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Ref:
    """A static reference such as ``input.request.items[0]["name"]``.

    ``path`` holds attribute names and literal keys as ``str`` and literal list
    indexes as ``int``; ``a.b`` and ``a["b"]`` are the same reference. Dynamic
    indexing (``a[i]``) is an :class:`Index` whose target is a ``Ref``.
    """

    root: str
    path: tuple[PathPart, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def dotted(self) -> str:
        """The reference as written canonically, for messages: ``a.b[0]``."""
        from openseal.compiler.lang.expr_print import ref_source

        return ref_source(self.root, self.path)


@dataclass(frozen=True, slots=True)
class Index:
    """``target[index]`` where the target or index is not static."""

    target: Expression
    index: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Expression
    right: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: Expression
    then: Expression
    otherwise: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: tuple[Expression, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True, slots=True)
class Template:
    """A string with interpolations. ``parts`` alternate literal text and
    expressions; adjacent text is merged and there are at least two parts."""

    parts: tuple[str | Expression, ...]
    span: Span = field(default=NO_SPAN, compare=False)


Expression = (
    Literal | ListExpr | ObjectExpr | Ref | Index | Unary | Binary | Conditional | Call | Template
)


class ExpressionFormatError(OpenSealError):
    """A stored expression (canonical JSON) is malformed."""

    code = "invalid_expression_json"


def children(expr: Expression) -> Iterator[Expression]:
    """The direct sub-expressions of ``expr``, in source order."""
    match expr:
        case ListExpr(items=items) | Call(args=items):
            yield from items
        case ObjectExpr(items=pairs):
            for _, value in pairs:
                yield value
        case Index(target=target, index=index):
            yield target
            yield index
        case Unary(operand=operand):
            yield operand
        case Binary(left=left, right=right):
            yield left
            yield right
        case Conditional(condition=c, then=t, otherwise=o):
            yield c
            yield t
            yield o
        case Template(parts=parts):
            for part in parts:
                if not isinstance(part, str):
                    yield part
        case _:
            return


def walk(expr: Expression) -> Iterator[Expression]:
    """Every node of ``expr``, parents before children, in source order."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(list(children(node))))


def references(expr: Expression) -> list[Ref]:
    """Every :class:`Ref` in ``expr`` in source order (duplicates kept)."""
    return [node for node in walk(expr) if isinstance(node, Ref)]


# --- canonical JSON -----------------------------------------------------------


def to_json(expr: Expression) -> dict[str, object]:
    """The span-free canonical JSON form of ``expr`` (plain dicts, lists, scalars).

    An object constructor's keys are written sorted, whatever order they were
    written in.
    """
    match expr:
        case Literal(value=value):
            return {"node": "literal", "value": value}
        case ListExpr(items=items):
            return {"node": "list", "items": [to_json(i) for i in items]}
        case ObjectExpr(items=pairs):
            # Keys are unique and evaluating a value has no effects, so the order an
            # object is written in means nothing; sorted, it never changes a digest.
            ordered = sorted(pairs, key=lambda pair: pair[0])
            return {
                "node": "object",
                "items": [{"key": k, "value": to_json(v)} for k, v in ordered],
            }
        case Ref(root=root, path=path):
            return {"node": "ref", "root": root, "path": list(path)}
        case Index(target=target, index=index):
            return {"node": "index", "target": to_json(target), "index": to_json(index)}
        case Unary(op=op, operand=operand):
            return {"node": "unary", "op": op, "operand": to_json(operand)}
        case Binary(op=op, left=left, right=right):
            return {"node": "binary", "op": op, "left": to_json(left), "right": to_json(right)}
        case Conditional(condition=c, then=t, otherwise=o):
            return {
                "node": "conditional",
                "condition": to_json(c),
                "then": to_json(t),
                "else": to_json(o),
            }
        case Call(name=name, args=args):
            return {"node": "call", "name": name, "args": [to_json(a) for a in args]}
        case Template(parts=parts):
            return {
                "node": "template",
                "parts": [p if isinstance(p, str) else to_json(p) for p in parts],
            }
    raise TypeError(f"not an expression: {expr!r}")  # pragma: no cover - exhaustive match


def from_json(data: object) -> Expression:
    """Rebuild an expression from :func:`to_json` output.

    Raises :class:`ExpressionFormatError` (never ``KeyError``) on malformed input.
    """
    return _Reader().read(data, 0)


class _Reader:
    def read(self, data: object, depth: int) -> Expression:
        if depth > MAX_DEPTH:
            raise ExpressionFormatError("stored expression is nested too deeply")
        node = _mapping(data)
        kind = node.get("node")
        reader = _READERS.get(kind) if isinstance(kind, str) else None
        if reader is None:
            raise ExpressionFormatError(f"unknown expression node {kind!r}")
        return reader(self, node, depth + 1)

    def many(self, data: object, depth: int) -> tuple[Expression, ...]:
        return tuple(self.read(item, depth) for item in _list(data))


def _mapping(data: object) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise ExpressionFormatError(f"expected an expression object, got {type(data).__name__}")
    return data


def _list(data: object) -> list[object]:
    if not isinstance(data, list | tuple):
        raise ExpressionFormatError(f"expected a list, got {type(data).__name__}")
    return list(data)


def _str(data: object, allowed: tuple[str, ...] | None = None) -> str:
    if not isinstance(data, str) or (allowed is not None and data not in allowed):
        raise ExpressionFormatError(f"unexpected value {data!r} in stored expression")
    return data


def _literal_value(data: object) -> LiteralValue:
    if isinstance(data, float) and not math.isfinite(data):
        raise ExpressionFormatError("stored number is not finite")
    if data is None or isinstance(data, str | int | float | bool):
        return data
    raise ExpressionFormatError(f"literal must be a scalar, got {type(data).__name__}")


def _path_part(data: object) -> PathPart:
    if isinstance(data, str) or (isinstance(data, int) and not isinstance(data, bool)):
        return data
    raise ExpressionFormatError(f"reference path parts are names or indexes, got {data!r}")


def _object_items(r: _Reader, data: object, depth: int) -> tuple[tuple[str, Expression], ...]:
    pairs = []
    for item in _list(data):
        entry = _mapping(item)
        pairs.append((_str(entry.get("key")), r.read(entry.get("value"), depth)))
    return tuple(pairs)


def _template_parts(r: _Reader, data: object, depth: int) -> tuple[str | Expression, ...]:
    return tuple(p if isinstance(p, str) else r.read(p, depth) for p in _list(data))


_READERS: dict[str, Callable[[_Reader, Mapping[str, object], int], Expression]] = {
    "literal": lambda r, n, d: Literal(_literal_value(n.get("value"))),
    "list": lambda r, n, d: ListExpr(r.many(n.get("items"), d)),
    "object": lambda r, n, d: ObjectExpr(_object_items(r, n.get("items"), d)),
    "ref": lambda r, n, d: Ref(
        _str(n.get("root")), tuple(_path_part(p) for p in _list(n.get("path")))
    ),
    "index": lambda r, n, d: Index(r.read(n.get("target"), d), r.read(n.get("index"), d)),
    "unary": lambda r, n, d: Unary(_str(n.get("op"), UNARY_OPS), r.read(n.get("operand"), d)),
    "binary": lambda r, n, d: Binary(
        _str(n.get("op"), BINARY_OPS), r.read(n.get("left"), d), r.read(n.get("right"), d)
    ),
    "conditional": lambda r, n, d: Conditional(
        r.read(n.get("condition"), d), r.read(n.get("then"), d), r.read(n.get("else"), d)
    ),
    "call": lambda r, n, d: Call(_str(n.get("name")), r.many(n.get("args"), d)),
    "template": lambda r, n, d: Template(_template_parts(r, n.get("parts"), d)),
}
