"""The canonical pretty-printer: one spelling per expression tree.

``parse_expression(to_source(e))`` gives back ``e`` (spans aside), so the
printed form is safe to show in diffs and messages and to parse again.
Parentheses appear only where precedence needs them.
"""

from __future__ import annotations

import re

from openseal.compiler.lang.expr_ast import (
    PRECEDENCE,
    Binary,
    Call,
    Conditional,
    Expression,
    Index,
    ListExpr,
    Literal,
    LiteralValue,
    ObjectExpr,
    PathPart,
    Ref,
    Template,
    Unary,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")

# Precedence levels beyond the binary operators.
_CONDITIONAL = 0
_UNARY = 7
_POSTFIX = 8


def to_source(expr: Expression) -> str:
    """The canonical source text of ``expr``, e.g. ``a.b * (c + 1)``."""
    match expr:
        case Literal(value=value):
            return literal_source(value)
        case ListExpr(items=items):
            return "[" + ", ".join(to_source(i) for i in items) + "]"
        case ObjectExpr(items=pairs):
            if not pairs:
                return "{}"
            body = ", ".join(f"{key_source(k)} = {to_source(v)}" for k, v in pairs)
            return "{ " + body + " }"
        case Ref(root=root, path=path):
            return ref_source(root, path)
        case Index():
            return _index_source(expr)
        case Unary(op=op, operand=operand):
            return op + _unary_operand(op, operand)
        case Binary(op=op, left=left, right=right):
            level = PRECEDENCE[op]
            lhs = _wrap(left, _level(left) < level)
            rhs = _wrap(right, _level(right) <= level)
            return f"{lhs} {op} {rhs}"
        case Conditional(condition=c, then=t, otherwise=o):
            cond = _wrap(c, _level(c) == _CONDITIONAL)
            return f"{cond} ? {to_source(t)} : {to_source(o)}"
        case Call(name=name, args=args):
            return name + "(" + ", ".join(to_source(a) for a in args) + ")"
        case Template(parts=parts):
            return '"' + _template_body(parts) + '"'
    raise TypeError(f"not an expression: {expr!r}")  # pragma: no cover - exhaustive match


def literal_source(value: LiteralValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return '"' + quote_text(value) + '"'


def ref_source(root: str, path: tuple[PathPart, ...]) -> str:
    return root + "".join(_path_part(p) for p in path)


def quote_text(text: str) -> str:
    """``text`` escaped for use between double quotes (``${`` becomes ``$${``, ``%{`` ``%%{``)."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out).replace("${", "$${").replace("%{", "%%{")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _path_part(part: PathPart) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    if _NAME.match(part):
        return "." + part
    return '["' + quote_text(part) + '"]'


def key_source(key: str) -> str:
    """An object key: bare when it is a name, quoted otherwise."""
    return key if _NAME.match(key) else '"' + quote_text(key) + '"'


def _level(expr: Expression) -> int:
    match expr:
        case Conditional():
            return _CONDITIONAL
        case Binary(op=op):
            return PRECEDENCE[op]
        case Unary():
            return _UNARY
        case Literal(value=value) if _is_negative_number(value):
            return _UNARY  # prints with a leading minus, like a unary operation
    return _POSTFIX


def _is_negative_number(value: LiteralValue) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (
            value < 0 or str(value).startswith("-")  # -0.0 too
        )
    )


def _wrap(expr: Expression, needed: bool) -> str:
    text = to_source(expr)
    return f"({text})" if needed else text


def _unary_operand(op: str, operand: Expression) -> str:
    # The parser reads `-1` as the literal -1, so a minus applied to a number
    # literal is written `-(1)` to keep the tree exact.
    number = (
        isinstance(operand, Literal)
        and isinstance(operand.value, int | float)
        and not isinstance(operand.value, bool)
    )
    return _wrap(operand, _level(operand) < _UNARY or (op == "-" and number))


def _index_source(expr: Index) -> str:
    target, index = expr.target, expr.index
    # `a["b"]` on a reference parses as the static reference `a.b`; parentheses
    # keep an explicit Index over a Ref distinct.
    static = isinstance(index, Literal) and _is_path_value(index.value)
    text = _wrap(target, _level(target) < _POSTFIX or (isinstance(target, Ref) and static))
    if isinstance(index, Literal) and isinstance(index.value, str) and _NAME.match(index.value):
        return f"{text}.{index.value}"
    return f"{text}[{to_source(index)}]"


def _is_path_value(value: LiteralValue) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _template_body(parts: tuple[str | Expression, ...]) -> str:
    out = []
    for i, part in enumerate(parts):
        if not isinstance(part, str):
            out.append("${" + to_source(part) + "}")
            continue
        followed_by_expr = i + 1 < len(parts) and not isinstance(parts[i + 1], str)
        stripped = part.rstrip("$") if followed_by_expr else part
        out.append(quote_text(stripped))
        if stripped != part:
            # A `$` right before `${` would read as the `$${` escape; spell the
            # trailing dollars as an interpolated string literal instead.
            out.append("${" + literal_source(part[len(stripped) :]) + "}")
    return "".join(out)
