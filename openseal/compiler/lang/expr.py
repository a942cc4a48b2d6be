"""Expressions: parse, print, serialise and inspect.

This is the public face of the expression language; the pieces live in
``expr_ast`` (nodes, JSON), ``expr_parse`` (lark grammar to nodes, with the
hand-written fast path of ``expr_fast_parse``), ``expr_print`` (pretty-printer)
and ``expr_errors`` (syntax-error wording).

>>> from openseal.compiler.syntax.spans import Span
>>> expr, _ = parse_expression("input.request.quantity * 2", Span.point("w.hcl"))
>>> to_source(expr), [r.dotted for r in references(expr)]
('input.request.quantity * 2', ['input.request.quantity'])
"""

from __future__ import annotations

from openseal.compiler.lang.expr_ast import (
    MAX_DEPTH,
    NO_SPAN,
    Binary,
    Call,
    Conditional,
    Expression,
    ExpressionFormatError,
    Index,
    ListExpr,
    Literal,
    LiteralValue,
    ObjectExpr,
    PathPart,
    Ref,
    Template,
    Unary,
    children,
    from_json,
    references,
    to_json,
    walk,
)
from openseal.compiler.lang.expr_parse import parse_expression, parse_template
from openseal.compiler.lang.expr_print import to_source


def same(a: Expression, b: Expression) -> bool:
    """Whether two trees are equal ignoring spans (the same as ``a == b``)."""
    return a == b


__all__ = [
    "MAX_DEPTH",
    "NO_SPAN",
    "Binary",
    "Call",
    "Conditional",
    "Expression",
    "ExpressionFormatError",
    "Index",
    "ListExpr",
    "Literal",
    "LiteralValue",
    "ObjectExpr",
    "PathPart",
    "Ref",
    "Template",
    "Unary",
    "children",
    "from_json",
    "parse_expression",
    "parse_template",
    "references",
    "same",
    "to_json",
    "to_source",
    "walk",
]
