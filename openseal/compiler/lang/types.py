"""Terraform-style type constraints: parse, print, serialise, lower, check.

A type is written with the expression grammar: ``string``, ``number``,
``bool``, ``any``, ``list(T)``, ``map(T)``, ``set(T)``, ``tuple([T, ...])`` and
``object({ name = T, other = optional(T, default) })``. The nodes live in
``type_ast`` and the value-level functions in ``type_conformance``; this module
parses and re-exports both.

>>> from openseal.compiler.syntax.spans import Span
>>> t, _ = parse_type("object({ item = string, n = optional(number, 1) })", Span.point("w.hcl"))
>>> conforms({"item": "laptop"}, t), apply_defaults({"item": "laptop"}, t)
([], {'item': 'laptop', 'n': 1})
"""

from __future__ import annotations

from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang.expr import (
    Call,
    Expression,
    ListExpr,
    Literal,
    ObjectExpr,
    Ref,
    parse_expression,
)
from openseal.compiler.lang.expr import to_source as expression_source
from openseal.compiler.lang.type_ast import (
    ANY,
    BOOL,
    CONSTRUCTORS,
    CONTAINERS,
    NUMBER,
    PRIMITIVES,
    STRING,
    Field,
    ListType,
    MapType,
    ObjectType,
    Primitive,
    SetType,
    TupleType,
    TypeExpr,
    TypeFormatError,
    from_json,
    object_type,
    to_json,
    to_source,
)
from openseal.compiler.lang.type_conformance import (
    apply_defaults,
    conforms,
    is_assignable,
    to_json_schema,
)
from openseal.compiler.syntax.spans import Span

_HINT = "types are string, number, bool, any, list(T), map(T), set(T), tuple([...]), object({...})"


def parse_type(source: str, span: Span) -> tuple[TypeExpr | None, list[Diagnostic]]:
    """Parse a type constraint; ``span`` is where ``source`` starts in its file.

    Every problem is an ``OS106`` diagnostic (syntax errors included).
    """
    expr, diagnostics = parse_expression(source, span)
    if expr is None:
        return None, [
            error("OS106", d.message, d.span, suggestion=d.suggestion or _HINT) for d in diagnostics
        ]
    reader = _TypeReader()
    result = reader.read(expr)
    if reader.diagnostics:
        return None, reader.diagnostics
    return result, []


class _TypeReader:
    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def fail(self, message: str, expr: Expression, suggestion: str | None = _HINT) -> TypeExpr:
        self.diagnostics.append(error("OS106", message, expr.span, suggestion=suggestion))
        return Primitive("any", expr.span)

    def read(self, expr: Expression) -> TypeExpr:
        match expr:
            case Ref(root=name, path=()) if name in PRIMITIVES:
                return Primitive(name, expr.span)
            case Ref(root=name, path=()) if name in CONSTRUCTORS:
                example = "tuple([string, number])" if name == "tuple" else f"{name}(string)"
                if name == "object":
                    example = "object({ name = string })"
                return self.fail(f"`{name}` needs its element type, e.g. `{example}`", expr, None)
            case Ref(root=name, path=()):
                hint = did_you_mean(name, (*PRIMITIVES, *CONSTRUCTORS))
                return self.fail(f"unknown type `{name}`", expr, hint or _HINT)
            case Literal(value=str() as text) if text in PRIMITIVES:
                return self.fail(
                    f'a type is not a string: write `{text}`, not `"{text}"`', expr, None
                )
            case Call(name=name, args=args):
                return self._call(name, args, expr)
        return self.fail(f"`{expression_source(expr)}` is not a type", expr)

    def _call(self, name: str, args: tuple[Expression, ...], expr: Call) -> TypeExpr:
        if name in ("list", "map", "set"):
            if len(args) != 1:
                return self.fail(
                    f"`{name}` takes one element type, e.g. `{name}(string)`", expr, None
                )
            element = self.read(args[0])
            return CONTAINERS[name](element, expr.span)
        if name == "tuple":
            if len(args) != 1 or not isinstance(args[0], ListExpr):
                return self.fail(
                    "`tuple` takes a list of types, e.g. `tuple([string, number])`", expr, None
                )
            return TupleType(tuple(self.read(a) for a in args[0].items), expr.span)
        if name == "object":
            if len(args) != 1 or not isinstance(args[0], ObjectExpr):
                return self.fail(
                    "`object` takes fields in braces: `object({ name = string })`", expr, None
                )
            return object_type([self._field(k, v) for k, v in args[0].items], expr.span)
        if name == "optional":
            message = "`optional(...)` is only allowed as the type of an object field"
            return self.fail(message, expr, "write `object({ name = optional(string) })`")
        hint = did_you_mean(name, CONSTRUCTORS)
        return self.fail(f"unknown type constructor `{name}`", expr, hint or _HINT)

    def _field(self, name: str, value: Expression) -> Field:
        if not (isinstance(value, Call) and value.name == "optional"):
            return Field(name, self.read(value), span=value.span)
        if not 1 <= len(value.args) <= 2:
            self.fail(
                "`optional` takes a type and an optional default: `optional(T, default)`",
                value,
                None,
            )
            return Field(name, ANY, True, span=value.span)
        field_type = self.read(value.args[0])
        default = self._constant(value.args[1]) if len(value.args) == 2 else None
        if default is not None:
            problems = conforms(default, field_type)
            if problems:
                problem = problems[0].removeprefix("value: ")
                message = f"default for `{name}` does not fit `{to_source(field_type)}`: {problem}"
                self.fail(message, value.args[1], None)
        return Field(name, field_type, True, default, value.span)

    def _constant(self, expr: Expression) -> object:
        match expr:
            case Literal(value=value):
                return value
            case ListExpr(items=items):
                return [self._constant(i) for i in items]
            case ObjectExpr(items=pairs):
                return {k: self._constant(v) for k, v in pairs}
        self.fail("a default must be a constant value (no references or operations)", expr, None)
        return None


__all__ = [
    "ANY",
    "BOOL",
    "NUMBER",
    "STRING",
    "Field",
    "ListType",
    "MapType",
    "ObjectType",
    "Primitive",
    "SetType",
    "TupleType",
    "TypeExpr",
    "TypeFormatError",
    "apply_defaults",
    "conforms",
    "from_json",
    "is_assignable",
    "object_type",
    "parse_type",
    "to_json",
    "to_json_schema",
    "to_source",
]
