"""Static types of expressions: the inference behind :mod:`openseal.compiler.analysis.typecheck`.

:class:`Inferrer` walks an expression tree and returns its type, reporting
``OS301`` (an operation on the wrong type), ``OS302`` (an attribute a value
does not have) and ``OS303`` (an unknown function or the wrong number of
arguments). ``any`` fits everything, so a value of unknown type is never an
error here; it is checked when it exists. After an error the sub-expression
counts as ``any`` so one mistake is reported once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from openseal.compiler.analysis.expression_scopes import Scope
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, error
from openseal.compiler.lang import expr as ex
from openseal.compiler.lang import types as ty
from openseal.compiler.lang.evaluate import EvaluationError, evaluate
from openseal.compiler.lang.functions import FUNCTIONS
from openseal.compiler.syntax.spans import Span

_PRINTABLE = ("string", "number", "bool", "any")
_ARITHMETIC = ("+", "-", "*", "/", "%")
_ORDERING = ("<", "<=", ">", ">=")
#: Evaluation failures a constant expression has whatever the run: reported when it compiles.
_ALWAYS_FAILS = ("division_by_zero", "number_out_of_range")


class Roots(Protocol):
    """Where the types of a scope's roots come from (see ``typecheck``)."""

    def namespace_type(self, scope: Scope, root: str, name: str) -> ty.TypeExpr: ...

    def skill_input(self, skill: ex.Ref) -> ty.TypeExpr: ...


def show(t: ty.TypeExpr) -> str:
    return ty.to_source(t)


def source(expr: ex.Expression) -> str:
    text = ex.to_source(expr)
    return text if len(text) <= 60 else text[:57] + "..."


def is_any(t: ty.TypeExpr) -> bool:
    return isinstance(t, ty.Primitive) and t.name == "any"


def unify(a: ty.TypeExpr, b: ty.TypeExpr) -> ty.TypeExpr | None:
    """The more specific of two compatible types (``any`` yields to the other), else None."""
    if is_any(a):
        return b
    if is_any(b):
        return a
    if ty.is_assignable(a, b):
        return b
    if ty.is_assignable(b, a):
        return a
    return None


def element_type(t: ty.TypeExpr) -> ty.TypeExpr:
    """The type of one element of a list-like type (``any`` when unknown or mixed)."""
    if isinstance(t, ty.ListType | ty.SetType | ty.MapType):
        return t.element
    if isinstance(t, ty.TupleType) and t.elements:
        found: ty.TypeExpr | None = t.elements[0]
        for item in t.elements[1:]:
            found = unify(found, item) if found is not None else None
        return found or ty.ANY
    return ty.ANY


class Inferrer:
    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.diagnostics: list[Diagnostic] = []

    def fail(
        self, code: str, message: str, span: Span, suggestion: str | None = None
    ) -> ty.TypeExpr:
        self.diagnostics.append(error(code, message, span, suggestion=suggestion))
        return ty.ANY

    def need(self, expr: ex.Expression, got: ty.TypeExpr, wanted: ty.TypeExpr, what: str) -> bool:
        """Report ``OS301`` unless ``got`` fits ``wanted``; ``what`` needs ``wanted``."""
        if ty.is_assignable(got, wanted):
            return True
        message = f"`{source(expr)}` is {show(got)}, but {what} needs {show(wanted)}"
        self.fail("OS301", message, expr.span)
        return False

    def infer(self, expr: ex.Expression, scope: Scope) -> ty.TypeExpr:
        match expr:
            case ex.Literal(value=value):
                return _literal_type(value)
            case ex.ListExpr(items=items):
                return _list_type([self.infer(i, scope) for i in items])
            case ex.ObjectExpr(items=pairs):
                return ty.object_type([ty.Field(k, self.infer(v, scope)) for k, v in pairs])
            case ex.Ref():
                return self.ref(expr, scope)
            case ex.Index(target=target, index=index):
                return self.index(expr, self.infer(target, scope), index, scope)
            case ex.Unary(op=op, operand=operand):
                wanted = ty.BOOL if op == "!" else ty.NUMBER
                self.need(operand, self.infer(operand, scope), wanted, f"`{op}`")
                return wanted
            case ex.Binary():
                return self.binary(expr, scope)
            case ex.Conditional(condition=c, then=t, otherwise=o):
                self.need(c, self.infer(c, scope), ty.BOOL, "a condition")
                return self.either(expr, self.infer(t, scope), self.infer(o, scope))
            case ex.Call():
                return self.call(expr, scope)
            case ex.Template(parts=parts):
                for part in parts:
                    if not isinstance(part, str):
                        self.printable(part, self.infer(part, scope), "text interpolation")
                return ty.STRING
        return ty.ANY  # pragma: no cover - exhaustive match

    # ------------------------------------------------------------------ references

    def ref(self, ref: ex.Ref, scope: Scope) -> ty.TypeExpr:
        base, consumed = self.root_type(ref, scope)
        if base is None:
            return ty.ANY  # not in scope: resolve reports it
        current = base
        for position in range(consumed, len(ref.path)):
            where = ex.Ref(ref.root, ref.path[:position]).dotted
            current = self.step(current, ref.path[position], where, ref)
            if is_any(current):
                return current
        return current

    def root_type(self, ref: ex.Ref, scope: Scope) -> tuple[ty.TypeExpr | None, int]:
        value = scope.values.get(ref.root)
        if value is not None:
            if value.skill is not None:
                return self.roots.skill_input(value.skill), 0
            if value.items is not None and scope.parent is not None:
                quiet = Inferrer(self.roots)  # the items expression reports its own errors
                return element_type(quiet.infer(value.items, scope.parent)), 0
            return value.type, 0
        namespace = scope.namespaces.get(ref.root)
        name = ref.path[0] if ref.path else None
        if namespace is None or not isinstance(name, str) or name not in namespace.names:
            return None, 0
        if namespace.then is not None:
            if len(ref.path) < 2 or ref.path[1] != namespace.then:
                return None, 0
            return self.roots.namespace_type(scope, ref.root, name), 2
        return self.roots.namespace_type(scope, ref.root, name), 1

    def step(self, t: ty.TypeExpr, part: ex.PathPart, where: str, ref: ex.Ref) -> ty.TypeExpr:
        """The type of ``where[part]`` (or ``where.part``) when ``where`` is of type ``t``."""
        if is_any(t):
            return t
        if isinstance(t, ty.ObjectType) and isinstance(part, str):
            found = t.field(part)
            if found is not None:
                return found.type
            names = [f.name for f in t.fields]
            listing = ", ".join(f"`{n}`" for n in names) or "none"
            message = f"`{where}` has no attribute `{part}`; its attributes are {listing}"
            hint = did_you_mean(f"{where}.{part}", [f"{where}.{n}" for n in names])
            return self.fail("OS302", message, ref.span, hint)
        if isinstance(t, ty.MapType) and isinstance(part, str):
            return t.element
        if isinstance(t, ty.ListType | ty.SetType) and isinstance(part, int):
            return t.element
        if isinstance(t, ty.TupleType) and isinstance(part, int):
            if 0 <= part < len(t.elements):
                return t.elements[part]
            message = f"`{where}` has {len(t.elements)} elements; there is no index {part}"
            return self.fail("OS302", message, ref.span)
        step = f"index {part}" if isinstance(part, int) else f"attribute `{part}`"
        return self.fail("OS302", f"`{where}` is {show(t)}; it has no {step}", ref.span)

    def index(
        self, expr: ex.Index, target: ty.TypeExpr, index: ex.Expression, scope: Scope
    ) -> ty.TypeExpr:
        key = self.infer(index, scope)
        if is_any(target):
            return target
        if isinstance(target, ty.ListType | ty.SetType | ty.TupleType):
            self.need(index, key, ty.NUMBER, "a list index")
            return element_type(target)
        if isinstance(target, ty.MapType | ty.ObjectType):
            self.need(index, key, ty.STRING, "a map key")
            return target.element if isinstance(target, ty.MapType) else ty.ANY
        message = f"`{source(expr.target)}` is {show(target)}; it cannot be indexed"
        return self.fail("OS301", message, expr.span)

    # ------------------------------------------------------------------ operators

    def binary(self, expr: ex.Binary, scope: Scope) -> ty.TypeExpr:
        left, right = self.infer(expr.left, scope), self.infer(expr.right, scope)
        op = expr.op
        if op in ("&&", "||"):
            self.need(expr.left, left, ty.BOOL, f"`{op}`")
            self.need(expr.right, right, ty.BOOL, f"`{op}`")
            return ty.BOOL
        if op in ("==", "!="):
            if unify(left, right) is None:
                message = (
                    f"`{source(expr.left)}` is {show(left)} and `{source(expr.right)}` is "
                    f"{show(right)}; values of different types are never equal"
                )
                self.fail("OS301", message, expr.span)
            return ty.BOOL
        if op in _ORDERING or op in _ARITHMETIC:
            ok = self.need(expr.left, left, ty.NUMBER, f"`{op}`")
            ok = self.need(expr.right, right, ty.NUMBER, f"`{op}`") and ok
            if not ok and op == "+" and ty.STRING in (left, right):
                self.diagnostics[-1] = _with_suggestion(
                    self.diagnostics[-1], 'join strings with a template: "${a}${b}"'
                )
            if ok and op in _ARITHMETIC:
                self.constant(expr)
            return ty.BOOL if op in _ORDERING else ty.NUMBER
        return ty.ANY  # pragma: no cover - the grammar has no other operators

    def constant(self, expr: ex.Expression) -> None:
        """Report ``OS304`` when ``expr`` reads nothing and fails wherever it runs (``1 / 0``).

        Only the node that fails reports it, so ``(1 / 0) + 2`` is one diagnostic at ``1 / 0``.
        """
        hint = "write the value it should have; a constant is computed when it compiles"
        if isinstance(expr, ex.Binary) and expr.op in ("/", "%") and _is_zero(expr.right):
            # `x / 0` reads something, but fails whatever it reads.
            message = f"`{source(expr)}` fails whenever it is evaluated: `{expr.op}` by zero"
            self.fail("OS304", message, expr.span, "divide by something that cannot be 0")
            return
        try:
            _constant(expr)
        except EvaluationError as exc:
            if exc.code in _ALWAYS_FAILS and exc.span == expr.span:
                message = f"`{source(expr)}` fails whenever it is evaluated: {exc}"
                self.fail("OS304", message, expr.span, hint)

    def either(self, expr: ex.Conditional, then: ty.TypeExpr, other: ty.TypeExpr) -> ty.TypeExpr:
        found = unify(then, other)
        if found is not None:
            return found
        message = (
            f"the two results of `{source(expr)}` differ: {show(then)} and {show(other)}; "
            "both must have one type"
        )
        return self.fail("OS301", message, expr.span)

    def printable(self, expr: ex.Expression, t: ty.TypeExpr, what: str) -> None:
        if isinstance(t, ty.Primitive) and t.name in _PRINTABLE:
            return
        message = (
            f"`{source(expr)}` is {show(t)}; only strings, numbers and bools can be used in {what}"
        )
        self.fail("OS301", message, expr.span)

    # ------------------------------------------------------------------ functions

    def call(self, expr: ex.Call, scope: Scope) -> ty.TypeExpr:
        args = [self.infer(a, scope) for a in expr.args]  # their own errors count either way
        function = FUNCTIONS.get(expr.name)
        if function is None:
            message = f"unknown function `{expr.name}`; functions are " + ", ".join(
                f"`{name}`" for name in sorted(FUNCTIONS)
            )
            return self.fail("OS303", message, expr.span, did_you_mean(expr.name, FUNCTIONS))
        count = len(expr.args)
        if count < function.min_args or (
            function.max_args is not None and count > function.max_args
        ):
            message = (
                f"`{expr.name}` takes {_arity(function.min_args, function.max_args)}, got {count}"
            )
            return self.fail("OS303", message, expr.span, f"usage: {function.signature}")
        reported = len(self.diagnostics)
        result = _SIGNATURES[expr.name](self, expr, args)
        if len(self.diagnostics) == reported:
            self.constant(expr)
        return result


def _constant(expr: ex.Expression) -> object:
    """The value of ``expr`` when it reads nothing (``None`` when it reads something).

    Raises :class:`EvaluationError` when it cannot be evaluated.
    """
    if any(isinstance(node, ex.Ref) for node in ex.walk(expr)):
        return None
    return evaluate(expr, {})


def _is_zero(expr: ex.Expression) -> bool:
    try:
        value = _constant(expr)
    except EvaluationError:
        return False  # reported where it fails
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _arity(low: int, high: int | None) -> str:
    if high is None:
        return f"at least {low} argument{'s' if low != 1 else ''}"
    if low == high:
        return f"{low} argument{'s' if low != 1 else ''}"
    return f"{low} to {high} arguments"


def _with_suggestion(d: Diagnostic, suggestion: str) -> Diagnostic:
    return error(d.code, d.message, d.span, suggestion=suggestion, related=d.related)


def _literal_type(value: ex.LiteralValue) -> ty.TypeExpr:
    if isinstance(value, bool):
        return ty.BOOL
    if isinstance(value, int | float):
        return ty.NUMBER
    if isinstance(value, str):
        return ty.STRING
    return ty.ANY  # null fits any type


def _list_type(items: Sequence[ty.TypeExpr]) -> ty.TypeExpr:
    if not items:
        return ty.ListType(ty.ANY)
    if all(item == items[0] for item in items):
        return ty.ListType(items[0])
    return ty.TupleType(tuple(items))


# --------------------------------------------------------------------------- signatures

_LISTS = (ty.ListType, ty.SetType, ty.TupleType)


def _sized(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    t = args[0]
    if not (is_any(t) or t == ty.STRING or isinstance(t, (*_LISTS, ty.MapType, ty.ObjectType))):
        message = f"`{source(call.args[0])}` is {show(t)}, but `length` needs a string, list or map"
        i.fail("OS301", message, call.args[0].span)
    return ty.NUMBER


def _text(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    i.need(call.args[0], args[0], ty.STRING, f"`{call.name}`")
    return ty.STRING


def _contains(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    collection = args[0]
    if collection == ty.STRING:
        i.need(call.args[1], args[1], ty.STRING, "`contains` on a string")
    elif not (is_any(collection) or isinstance(collection, _LISTS)):
        wanted = "`contains` needs a list or a string"
        message = f"`{source(call.args[0])}` is {show(collection)}, but {wanted}"
        i.fail("OS301", message, call.args[0].span)
    return ty.BOOL


def _numbers(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    if len(args) == 1 and (isinstance(args[0], _LISTS) or call.name == "sum"):
        i.need(call.args[0], args[0], ty.ListType(ty.NUMBER), f"`{call.name}`")
        return ty.NUMBER
    for expr, t in zip(call.args, args, strict=True):
        i.need(expr, t, ty.NUMBER, f"`{call.name}`")
    return ty.NUMBER


def _format(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    i.need(call.args[0], args[0], ty.STRING, "the template of `format`")
    for expr, t in zip(call.args[1:], args[1:], strict=True):
        i.printable(expr, t, "`format`")
    return ty.STRING


def _coalesce(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    found: ty.TypeExpr = ty.ANY
    for expr, t in zip(call.args, args, strict=True):
        joined = unify(found, t)
        if joined is None:
            others = f"the other values of `coalesce` are {show(found)}"
            message = f"`{source(expr)}` is {show(t)}, but {others}"
            return i.fail("OS301", message, expr.span)
        found = joined
    return found


def _mapping(i: Inferrer, call: ex.Call, t: ty.TypeExpr) -> bool:
    if is_any(t) or isinstance(t, ty.MapType | ty.ObjectType):
        return True
    message = f"`{source(call.args[0])}` is {show(t)}, but `{call.name}` needs a map"
    i.fail("OS301", message, call.args[0].span)
    return False


def _keys(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    _mapping(i, call, args[0])
    return ty.ListType(ty.STRING)


def _values(i: Inferrer, call: ex.Call, args: list[ty.TypeExpr]) -> ty.TypeExpr:
    t = args[0]
    if not _mapping(i, call, t):
        return ty.ListType(ty.ANY)
    if isinstance(t, ty.ObjectType):
        return ty.ListType(element_type(ty.TupleType(tuple(f.type for f in t.fields))))
    return ty.ListType(element_type(t))


_SIGNATURES = {
    "length": _sized,
    "lower": _text,
    "upper": _text,
    "contains": _contains,
    "min": _numbers,
    "max": _numbers,
    "sum": _numbers,
    "format": _format,
    "coalesce": _coalesce,
    "keys": _keys,
    "values": _values,
}
