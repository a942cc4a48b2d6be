"""A hand-written parser for well-formed expressions and templates.

Definitions hold thousands of small expressions (``state.review``, ``"Answer
${input.question}"``, ``x.score > 3``); driving lark's LALR parser and tree
builder for each one cost most of the decode stage. This module parses the
same grammar (``expressions.lark``) by recursive descent and builds the very
same nodes with the very same spans as :mod:`openseal.compiler.lang.expr_parse`.

It only ever answers for input it fully understands. Anything else (a syntax
error, a backslash escape, a duplicate object key, very deep nesting, a number
the builder would refuse) makes it give up with ``None``, and the lark parser
takes over and reports the diagnostics. ``tests/compiler/lang/test_expr_fast_parse.py``
checks, on generated expressions, that every tree it returns equals lark's,
spans included.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from openseal.compiler.lang.expr_ast import (
    MAX_DEPTH,
    Binary,
    Call,
    Conditional,
    Expression,
    Index,
    ListExpr,
    Literal,
    ObjectExpr,
    Ref,
    Template,
    Unary,
)
from openseal.compiler.syntax.fold import number_problem
from openseal.compiler.syntax.spans import Span

# The grammar's terminals, as written in expressions.lark.
_WS = re.compile(r"[ \t\f\r\n]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_STRING_TEXT = re.compile(r"(?:[^\"\\$]|\\.|\$\$\{|\$(?!\{))+")
_TEMPLATE_TEXT = re.compile(r"(?:[^$]|\$\$\{|\$(?!\{))+")
#: Operators, longest first so `<=` is not read as `<` then `=`.
_OPERATOR = re.compile(r"\|\||&&|==|!=|<=|>=|\$\{|[<>+\-*/%!?:.,\[\](){}=\"]")
#: Characters that are a whole operator on their own (no longer operator starts with them).
_SINGLE = frozenset('+-*/%?:.,[](){}"')
_KEYWORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}

#: Binary operators by level, loosest first (as the grammar's rule chain).
_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"||"}),
    frozenset({"&&"}),
    frozenset({"==", "!="}),
    frozenset({"<", "<=", ">", ">="}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "%"}),
)
#: Nesting beyond this is left to lark (which enforces the real limits: MAX_DEPTH
#: on the tree, and Python's stack).
_MAX_NESTING = 24
_MAX_HEIGHT = MAX_DEPTH // 2
#: As expr_parse: longer number literals are refused there.
_MAX_NUMBER_CHARS = 400


class _GiveUp(Exception):
    """Not something this parser answers for; lark decides."""


@dataclass(slots=True)
class _Node:
    """A built expression and the source range of the parse-tree node it came from.

    The range includes parentheses, brackets and quotes, as lark's node
    positions do; ``shape`` says which grammar rule made the node where the
    builder treats it specially (``paren``, ``number``).
    """

    expr: Expression
    start: int
    end: int
    #: parse-tree nodes on the longest path down (what expr_parse's depth limit counts)
    height: int = 1
    shape: str = ""
    #: a number literal's text (for ``-1``)
    text: str = ""


def parse_fast(source: str, origin: Span, start: str) -> Expression | None:
    """The expression ``source`` parses to, or ``None`` to leave it to lark.

    ``start`` is ``"expression"`` or ``"template"``, as for the lark parser.
    """
    try:
        parser = _Parser(source, origin)
        if start == "template":
            return parser.template()
        node = parser.expression(0)
        parser.skip_ws()
        if parser.pos != len(source):
            return None
        return node.expr
    except _GiveUp:
        return None


class _Parser:
    def __init__(self, source: str, origin: Span) -> None:
        self.source = source
        self.pos = 0
        self.origin = origin
        self._lines: list[int] | None = None if "\n" in source else []
        self._peeked_at, self._peeked_end, self._peeked = -1, -1, ""

    # -- positions -------------------------------------------------------------

    def _point(self, offset: int) -> tuple[int, int]:
        """File line and column of an offset (lark's line/column, then placed at ``origin``)."""
        if self._lines is None:
            self._lines = [i for i, c in enumerate(self.source) if c == "\n"]
        line = bisect.bisect_left(self._lines, offset)  # newlines before ``offset``
        if line == 0:
            return self.origin.line, self.origin.column + offset
        return self.origin.line + line, offset - self._lines[line - 1]

    def span(self, start: int, end: int) -> Span:
        line, column = self._point(start)
        end_line, end_column = self._point(end)
        return Span(self.origin.file, line, column, end_line, end_column)

    # -- tokens ----------------------------------------------------------------

    def skip_ws(self) -> None:
        match = _WS.match(self.source, self.pos)
        if match is not None:
            self.pos = match.end()

    def peek(self) -> str:
        """The next operator (or `"`), after whitespace; ``""`` for anything else."""
        # Each operand is followed by a peek at every precedence level; answer those
        # from the last look while the position has not moved.
        if self.pos == self._peeked_at:
            self.pos = self._peeked_end
            return self._peeked
        before = self.pos
        self.skip_ws()
        char = self.source[self.pos : self.pos + 1]
        if char in _SINGLE:
            found = char
        else:
            match = _OPERATOR.match(self.source, self.pos)
            found = match.group() if match is not None else ""
        self._peeked_at, self._peeked_end, self._peeked = before, self.pos, found
        return found

    def take(self, operator: str) -> int:
        """Consume ``operator`` (the caller peeked it); returns its start offset."""
        start = self.pos
        self.pos += len(operator)
        return start

    def expect(self, operator: str) -> int:
        if self.peek() != operator:
            raise _GiveUp
        return self.take(operator)

    def name(self) -> tuple[str, int, int]:
        """The next name (an identifier or a keyword, as the grammar's ``_name``)."""
        self.skip_ws()
        match = _IDENT.match(self.source, self.pos)
        if match is None:
            raise _GiveUp
        self.pos = match.end()
        # Names repeat all over a file (`state`, `output`, ...): one string each, interned.
        return sys.intern(match.group()), match.start(), match.end()

    # -- expressions (one method per grammar level) ----------------------------

    def expression(self, depth: int) -> _Node:
        if depth > _MAX_NESTING:
            raise _GiveUp
        condition = self.binary(0, depth)
        if self.peek() != "?":
            return condition
        self.take("?")
        then = self.expression(depth + 1)
        self.expect(":")
        otherwise = self.expression(depth + 1)
        span = self.span(condition.start, otherwise.end)
        return _node(
            Conditional(condition.expr, then.expr, otherwise.expr, span),
            condition.start,
            otherwise.end,
            (condition, then, otherwise),
        )

    def binary(self, level: int, depth: int) -> _Node:
        if level == len(_LEVELS):
            return self.unary(depth)
        operators = _LEVELS[level]
        left = self.binary(level + 1, depth)
        while (operator := self.peek()) in operators:
            self.take(operator)
            right = self.binary(level + 1, depth)
            span = self.span(left.start, right.end)
            binary = Binary(operator, left.expr, right.expr, span)
            left = _node(binary, left.start, right.end, (left, right))
        return left

    def unary(self, depth: int) -> _Node:
        operator = self.peek()
        if operator not in ("!", "-"):
            return self.postfix(depth)
        if depth > _MAX_NESTING:
            raise _GiveUp
        start = self.take(operator)
        operand = self.unary(depth + 1)
        span = self.span(start, operand.end)
        if operator == "-" and operand.shape == "number":
            # `-1` is the number -1; `-(1)` stays an operation (as expr_parse).
            return _Node(_number("-" + operand.text, span), start, operand.end, 2)
        return _node(Unary(operator, operand.expr, span), start, operand.end, (operand,))

    def postfix(self, depth: int) -> _Node:
        node = self.primary(depth)
        while True:
            operator = self.peek()
            if operator == ".":
                self.take(".")
                name, name_start, name_end = self.name()
                index = _Node(Literal(name, self.span(name_start, name_end)), name_start, name_end)
                node = self._step(node, index, name_end)
            elif operator == "[":
                self.take("[")
                index_node = self.expression(depth + 1)
                end = self.expect("]") + 1
                node = self._step(node, index_node, end)
            else:
                return node

    def _step(self, target: _Node, index: _Node, end: int) -> _Node:
        span = self.span(target.start, end)
        key = index.expr
        if isinstance(target.expr, Ref) and target.shape != "paren" and isinstance(key, Literal):
            value = key.value
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                ref = Ref(target.expr.root, (*target.expr.path, value), span)
                return _node(ref, target.start, end, (target, index))
        return _node(Index(target.expr, key, span), target.start, end, (target, index))

    def primary(self, depth: int) -> _Node:
        self.skip_ws()
        start = self.pos
        number = _NUMBER.match(self.source, start)
        if number is not None:
            self.pos = number.end()
            text = number.group()
            literal = _number(text, self.span(start, self.pos))
            return _Node(literal, start, self.pos, 1, "number", text)
        ident = _IDENT.match(self.source, start)
        if ident is not None:
            return self._named(sys.intern(ident.group()), start, ident.end(), depth)
        operator = self.peek()
        if operator == "(":
            self.take("(")
            inner = self.expression(depth + 1)
            end = self.expect(")") + 1
            return _Node(inner.expr, start, end, inner.height + 1, "paren")
        if operator == "[":
            self.take("[")
            items, end = self._items("]", depth)
            expr = ListExpr(tuple(i.expr for i in items), self.span(start, end))
            return _node(expr, start, end, items)
        if operator == "{":
            return self._object(start, depth)
        if operator == '"':
            return self._string(start, depth)
        raise _GiveUp

    def _named(self, name: str, start: int, end: int, depth: int) -> _Node:
        self.pos = end
        if name in _KEYWORDS:
            return _Node(Literal(_KEYWORDS[name], self.span(start, end)), start, end)
        if self.peek() != "(":
            return _Node(Ref(name, (), self.span(start, end)), start, end)
        self.take("(")
        args, close = self._items(")", depth)
        call = Call(name, tuple(a.expr for a in args), self.span(start, close))
        return _node(call, start, close, args)

    def _items(self, closer: str, depth: int) -> tuple[list[_Node], int]:
        """Comma-separated expressions up to ``closer`` (a trailing comma allowed)."""
        items: list[_Node] = []
        while self.peek() != closer:
            items.append(self.expression(depth + 1))
            if self.peek() != ",":
                break
            self.take(",")
        end = self.expect(closer) + 1
        return items, end

    def _object(self, start: int, depth: int) -> _Node:
        self.take("{")
        pairs: list[tuple[str, Expression]] = []
        values: list[_Node] = []
        seen: set[str] = set()
        while self.peek() != "}":
            if self.peek() == '"':
                key_node = self._string(self.pos, depth)
                if not isinstance(key_node.expr, Literal) or not isinstance(
                    key_node.expr.value, str
                ):
                    raise _GiveUp
                key = key_node.expr.value
            else:
                key = self.name()[0]
            if key in seen:
                raise _GiveUp  # a diagnostic: lark's builder words it
            seen.add(key)
            separator = self.peek()
            if separator not in ("=", ":"):
                raise _GiveUp
            self.take(separator)
            values.append(self.expression(depth + 1))
            pairs.append((key, values[-1].expr))
            if self.peek() == ",":
                self.take(",")
        end = self.expect("}") + 1
        return _node(ObjectExpr(tuple(pairs), self.span(start, end)), start, end, values)

    # -- strings and templates -------------------------------------------------

    def _string(self, start: int, depth: int) -> _Node:
        self.take('"')
        parts: list[str | Expression] = []
        inner: list[_Node] = []
        while True:
            if self.source.startswith('"', self.pos):
                self.pos += 1
                break
            if self.source.startswith("${", self.pos):
                inner.append(self._interpolation(depth))
                parts.append(inner[-1].expr)
                continue
            text = _STRING_TEXT.match(self.source, self.pos)
            if text is None:
                raise _GiveUp  # the end of the input: an unclosed string
            raw = text.group()
            if "\\" in raw or "\n" in raw or "%{" in raw:
                raise _GiveUp  # escapes and directives are decoded and checked by expr_parse
            parts.append(raw.replace("$${", "${"))
            self.pos = text.end()
        expr = template_node(parts, self.span(start, self.pos))
        return _node(expr, start, self.pos, inner, shape="string")

    def _interpolation(self, depth: int) -> _Node:
        self.pos += 2  # `${`
        inner = self.expression(depth + 1)
        self.expect("}")
        inner.height += 1  # the interpolation's own tree node
        return inner

    def template(self) -> Expression:
        parts: list[str | Expression] = []
        while self.pos < len(self.source):
            if self.source.startswith("${", self.pos):
                parts.append(self._interpolation(0).expr)
                continue
            text = _TEMPLATE_TEXT.match(self.source, self.pos)
            assert text is not None  # anything but `${` is template text
            if "%{" in text.group():
                raise _GiveUp  # `%%{` and directives: see expr_parse
            parts.append(text.group().replace("$${", "${"))
            self.pos = text.end()
        # An empty template has no tokens, so lark gives its node no position.
        span = self.span(0, self.pos) if self.source else self.origin
        return template_node(parts, span)


def _node(
    expr: Expression, start: int, end: int, children: Sequence[_Node], shape: str = ""
) -> _Node:
    height = 1 + max((c.height for c in children), default=0)
    if height > _MAX_HEIGHT:
        raise _GiveUp
    return _Node(expr, start, end, height, shape)


def template_node(parts: list[str | Expression], span: Span) -> Expression:
    """Normalise template parts: string literals interpolated are text, adjacent
    text merges, and one lone interpolation is the expression itself."""
    if len(parts) == 1 and not isinstance(parts[0], str):
        return parts[0]
    merged: list[str | Expression] = []
    for part in parts:
        if isinstance(part, Literal) and isinstance(part.value, str):
            part = part.value
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    if not merged:
        return Literal("", span)
    if len(merged) == 1 and isinstance(merged[0], str):
        return Literal(merged[0], span)
    return Template(tuple(merged), span)


def _number(text: str, span: Span) -> Literal:
    if len(text) > _MAX_NUMBER_CHARS:
        raise _GiveUp
    value = float(text) if any(c in text for c in ".eE") else int(text)
    if number_problem(value, text) is not None:
        raise _GiveUp  # the full parser says why
    return Literal(value, span)
