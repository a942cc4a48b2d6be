"""A restricted evaluator for expression trees (never Python ``eval``).

Only the roots present in the scope can be read (``input``, ``state``,
``step``...); ``a.b`` is a key lookup in a mapping and never a Python
attribute, so ``input.__class__`` is simply a missing key. Values are
JSON-like. Every failure is an :class:`EvaluationError` with a stable code and
the span of the sub-expression that failed:

``unknown_reference``   a root that is not in scope
``missing_key``         a key absent from a map
``type_error``          an operation on the wrong kind of value
``division_by_zero``    ``/`` or ``%`` by zero
``index_out_of_range``  a list index outside the list
``unknown_function``    a call to a function that does not exist
``invalid_argument``    wrong argument count or value for a function
``number_out_of_range`` a non-finite or enormous number
``too_large``           a string result beyond the size limit

>>> from openseal.compiler.lang.expr import parse_expression
>>> from openseal.compiler.syntax.spans import Span
>>> expr, _ = parse_expression("input.n * 2 > 5", Span.point("<doc>"))
>>> evaluate(expr, {"input": {"n": 3}})
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from openseal.compiler.diagnostics import did_you_mean
from openseal.compiler.lang import functions
from openseal.compiler.lang.expr_ast import (
    Binary,
    Call,
    Conditional,
    Expression,
    Index,
    ListExpr,
    Literal,
    ObjectExpr,
    PathPart,
    Ref,
    Template,
    Unary,
)
from openseal.compiler.lang.expr_print import ref_source, to_source
from openseal.compiler.lang.functions import FunctionError, equal, is_number, kind
from openseal.compiler.syntax.spans import Span
from openseal.errors import OpenSealError


class EvaluationError(OpenSealError):
    """An expression could not be evaluated; ``code`` says why, ``span`` where."""

    code = "evaluation_error"

    def __init__(self, message: str, *, code: str, span: Span) -> None:
        super().__init__(message, code=code)
        self.span = span


def evaluate(expr: Expression, scope: Mapping[str, object]) -> object:
    """The value of ``expr`` with the roots in ``scope``; raises :class:`EvaluationError`."""
    return _Evaluator(scope).eval(expr)


class _Evaluator:
    def __init__(self, scope: Mapping[str, object]) -> None:
        self.scope = scope

    def eval(self, expr: Expression) -> object:
        try:
            return self._eval(expr)
        except FunctionError as exc:
            raise EvaluationError(exc.message, code=exc.code, span=expr.span) from None

    def _eval(self, expr: Expression) -> object:
        match expr:
            case Literal(value=value):
                return value
            case ListExpr(items=items):
                return [self.eval(item) for item in items]
            case ObjectExpr(items=pairs):
                return {key: self.eval(value) for key, value in pairs}
            case Ref():
                return self._ref(expr)
            case Index(target=target, index=index):
                return self._step(self.eval(target), self.eval(index), expr, target)
            case Unary(op=op, operand=operand):
                return self._unary(op, self.eval(operand), expr)
            case Binary():
                return self._binary(expr)
            case Conditional(condition=condition, then=then, otherwise=otherwise):
                chosen = self._bool(self.eval(condition), "a condition", condition)
                return self.eval(then if chosen else otherwise)
            case Call(name=name, args=args):
                return self._call(name, args, expr)
            case Template(parts=parts):
                return self._template(parts)
        raise TypeError(f"not an expression: {expr!r}")  # pragma: no cover - exhaustive match

    # --- references and indexing ---------------------------------------------

    def _ref(self, ref: Ref) -> object:
        if ref.root not in self.scope:
            hint = did_you_mean(ref.root, self.scope)
            roots = ", ".join(sorted(self.scope)) or "none"
            message = f"unknown reference `{ref.root}` (available here: {roots})"
            raise EvaluationError(
                f"{message}; {hint}" if hint else message, code="unknown_reference", span=ref.span
            )
        value = self.scope[ref.root]
        for position, part in enumerate(ref.path):
            # The usual step, a key its map has, needs no description of where it failed.
            if type(value) is dict and type(part) is str and part in value:
                value = value[part]
            else:
                value = self._path_step(value, part, ref, ref.path[:position])
        return value

    def _path_step(
        self, value: object, part: PathPart, ref: Ref, before: tuple[PathPart, ...]
    ) -> object:
        where = ref_source(ref.root, before)
        if isinstance(part, int):
            return self._list_item(value, part, where, ref.span)
        return self._map_item(value, part, where, ref.span)

    def _step(self, value: object, index: object, expr: Index, target: Expression) -> object:
        if type(value) is dict and type(index) is str and index in value:
            return value[index]  # as in _ref: the usual step, described only if it fails
        if isinstance(value, Mapping):
            if not isinstance(index, str):
                raise _type_error(f"a map is indexed by a string, not a {kind(index)}", expr.span)
            return self._map_item(value, index, to_source(target), expr.span)
        if isinstance(index, float) and index.is_integer():
            index = int(index)
        if isinstance(index, int) and not isinstance(index, bool):
            return self._list_item(value, index, to_source(target), expr.span)
        raise _type_error(f"cannot index a {kind(value)} with a {kind(index)}", expr.span)

    def _map_item(self, value: object, key: str, where: str, span: Span) -> object:
        if not isinstance(value, Mapping):
            raise _type_error(
                f"`{where}` is a {kind(value)}, not a map; it has no key `{key}`", span
            )
        if key not in value:
            keys = [k for k in value if isinstance(k, str)]
            hint = did_you_mean(key, keys)
            message = f"`{where}` has no key `{key}`"
            raise EvaluationError(
                f"{message}; {hint}" if hint else message, code="missing_key", span=span
            )
        return value[key]

    def _list_item(self, value: object, index: int, where: str, span: Span) -> object:
        if not functions.is_list(value):
            raise _type_error(
                f"`{where}` is a {kind(value)}, not a list; it has no index {index}", span
            )
        assert isinstance(value, Sequence)
        if not 0 <= index < len(value):
            raise EvaluationError(
                f"index {index} is out of range for `{where}` (length {len(value)})",
                code="index_out_of_range",
                span=span,
            )
        return value[index]

    # --- operators --------------------------------------------------------------

    def _unary(self, op: str, value: object, expr: Unary) -> object:
        if op == "!":
            return not self._bool(value, "`!`", expr)
        if not is_number(value):
            raise _type_error(f"unary `-` needs a number, got {kind(value)}", expr.span)
        assert isinstance(value, int | float)
        return functions.check_number(-value)

    def _binary(self, expr: Binary) -> object:
        op = expr.op
        left = self.eval(expr.left)
        if op in ("&&", "||"):
            # Short-circuit, so `x != null && x.n > 0` is safe.
            if self._bool(left, f"`{op}`", expr.left) == (op == "||"):
                return op == "||"
            return self._bool(self.eval(expr.right), f"`{op}`", expr.right)
        right = self.eval(expr.right)
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if not (is_number(left) and is_number(right)):
            hint = '; join strings with a template: "${a}${b}"' if op == "+" else ""
            message = f"`{op}` needs numbers, got {kind(left)} and {kind(right)}{hint}"
            raise _type_error(message, expr.span)
        assert isinstance(left, int | float) and isinstance(right, int | float)
        return _arithmetic(op, left, right, expr.span)

    def _bool(self, value: object, what: str, expr: Expression) -> bool:
        if not isinstance(value, bool):
            raise _type_error(f"{what} needs true or false, got {kind(value)}", expr.span)
        return value

    # --- calls and templates --------------------------------------------------------

    def _call(self, name: str, args: tuple[Expression, ...], expr: Call) -> object:
        if name not in functions.FUNCTIONS:
            hint = did_you_mean(name, functions.FUNCTIONS)
            message = f"unknown function `{name}`"
            raise EvaluationError(
                f"{message}; {hint}" if hint else message, code="unknown_function", span=expr.span
            )
        values = [self.eval(arg) for arg in args]
        try:
            return functions.call(name, values)
        except FunctionError as exc:
            raise EvaluationError(exc.message, code=exc.code, span=expr.span) from None

    def _template(self, parts: tuple[str | Expression, ...]) -> str:
        out: list[str] = []
        size = 0
        for part in parts:
            if isinstance(part, str):
                text = part
            else:
                value = self.eval(part)
                try:
                    text = functions.to_text(value)
                except FunctionError:
                    message = f"cannot interpolate a {kind(value)} into a string"
                    raise _type_error(message, part.span) from None
            size += len(text)
            if size > functions.MAX_STRING_CHARS:
                raise functions.too_large()
            out.append(text)
        return "".join(out)


_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _arithmetic(op: str, left: int | float, right: int | float, span: Span) -> object:
    if op in _COMPARE:
        return _COMPARE[op](left, right)
    if op in ("/", "%") and right == 0:
        raise EvaluationError(f"`{op}` by zero", code="division_by_zero", span=span)
    try:
        result = _apply(op, left, right)
    except OverflowError:
        raise EvaluationError(
            "result is too large", code="number_out_of_range", span=span
        ) from None
    try:
        return functions.check_number(result)
    except FunctionError as exc:
        raise EvaluationError(exc.message, code=exc.code, span=span) from None


def _apply(op: str, left: int | float, right: int | float) -> int | float:
    result: int | float
    if op == "+":
        result = left + right
    elif op == "-":
        result = left - right
    elif op == "*":
        result = left * right
    elif op == "%":
        result = left % right
    elif isinstance(left, int) and isinstance(right, int) and left % right == 0:
        result = left // right  # exact integer division stays an integer
    else:
        result = left / right
    return result


def _type_error(message: str, span: Span) -> EvaluationError:
    return EvaluationError(message, code="type_error", span=span)
