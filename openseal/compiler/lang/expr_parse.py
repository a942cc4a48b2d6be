"""Parsing expressions and templates with the lark grammar ``expressions.lark``.

The parser is built on first use (never at import time) and its tables are
kept, signed, in the user cache directory
(:func:`openseal.compiler.cache.load_parser`), so later processes skip the LALR
table construction. Syntax errors become ``OS107`` diagnostics in file
coordinates; nothing here raises on bad input.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from openseal.compiler.cache import load_parser
from openseal.compiler.diagnostics import Diagnostic, error
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
    Unary,
)
from openseal.compiler.lang.expr_errors import describe_syntax_error
from openseal.compiler.lang.expr_fast_parse import parse_fast, template_node
from openseal.compiler.syntax.fold import number_problem
from openseal.compiler.syntax.spans import Span

#: Longer expressions are refused rather than parsed (they are never hand-written).
MAX_SOURCE_CHARS = 100_000
_MAX_NUMBER_CHARS = 400

_GRAMMAR_FILE = "expressions.lark"
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([nrt"\\]))|\\(.)|\$\$\{|%%\{|%\{')
#: In template text: the two escapes (``$${``, ``%%{``) and the start of a directive (``%{``).
_TEMPLATE_SEQUENCE = re.compile(r"\$\$\{|%%\{|%\{")
_DIRECTIVE_HINT = (
    'for a choice, interpolate a conditional such as `${input.urgent ? "now" : "soon"}`; '
    "for a literal `%{`, write `%%{`"
)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def parse_expression(source: str, span: Span) -> tuple[Expression | None, list[Diagnostic]]:
    """Parse one expression; ``span`` is where ``source`` starts in its file.

    >>> from openseal.compiler.syntax.spans import Span
    >>> expr, diags = parse_expression("a.b + 1", Span.point("w.hcl", 3, 9))
    >>> expr.span.line, expr.span.column, diags
    (3, 9, [])
    """
    return _parse(source, span, "expression")


def parse_template(text: str, span: Span) -> tuple[Expression | None, list[Diagnostic]]:
    """Parse string content that may hold ``${...}`` interpolations.

    ``span`` is where ``text`` starts (after any opening quote). ``$${`` is a
    literal ``${``. Text without interpolation gives a string :class:`Literal`;
    text that is exactly one interpolation (``"${x}"``) gives the inner
    expression itself, so ``x`` and ``"${x}"`` parse to equal trees.
    """
    return _parse(text, span, "template")


def _parse(source: str, span: Span, start: str) -> tuple[Expression | None, list[Diagnostic]]:
    if len(source) > MAX_SOURCE_CHARS:
        message = (
            f"expression is too long ({len(source)} characters; the limit is {MAX_SOURCE_CHARS})"
        )
        return None, [error("OS107", message, span)]
    # Well-formed input needs no lark; expr_fast_parse gives up on anything else.
    fast = parse_fast(source, span, start)
    if fast is not None:
        return fast, []
    return _parse_lark(source, span, start)


def _parse_lark(source: str, span: Span, start: str) -> tuple[Expression | None, list[Diagnostic]]:
    try:
        tree = parser().parse(source, start=start)
    except UnexpectedInput as exc:
        return None, [_syntax_diagnostic(exc, source, span)]
    builder = _Builder(span)
    try:
        expr = builder.build(tree, 0)
    except _TooDeep:
        message = f"expression is nested too deeply (more than {MAX_DEPTH} levels)"
        return None, [error("OS107", message, span)]
    if builder.diagnostics:
        return None, builder.diagnostics
    return expr, []


# --- the lark parser ----------------------------------------------------------


@functools.cache
def parser() -> Lark:
    """The shared LALR parser (built once per process, its tables kept per machine)."""
    grammar = resources.files("openseal.compiler.lang").joinpath(_GRAMMAR_FILE).read_text("utf-8")
    options: dict[str, object] = {
        "parser": "lalr",
        "lexer": "contextual",
        "propagate_positions": True,
        "maybe_placeholders": False,
        "start": ["expression", "template"],
    }
    return load_parser("expressions", grammar, options)


# --- errors -------------------------------------------------------------------


def _syntax_diagnostic(exc: UnexpectedInput, source: str, span: Span) -> Diagnostic:
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        offset, expected = len(source.rstrip()), set(exc.expected)
    elif isinstance(exc, UnexpectedToken):
        offset, expected = exc.token.start_pos or 0, set(exc.expected)
    elif isinstance(exc, UnexpectedCharacters):
        offset, expected = exc.pos_in_stream or 0, set(exc.allowed)
    else:  # pragma: no cover - LALR raises only the two kinds above
        offset, expected = 0, set()
    # The lexer's sets over-approximate (LALR states merge lookaheads); the
    # interactive parser knows exactly which terminals could come next.
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        expected = set(interactive.accepts())
    message, suggestion = describe_syntax_error(source, offset, expected)
    line, column = _line_column(source, offset)
    at = _Positions(span).point(line, column)
    return error("OS107", message, at, suggestion=suggestion)


def _line_column(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset in ``source``."""
    before = source[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1


class _TooDeep(Exception):
    pass


# --- tree to AST --------------------------------------------------------------


class _Positions:
    """Maps positions inside the parsed text to file coordinates."""

    def __init__(self, origin: Span) -> None:
        self.origin = origin

    def at(self, line: int, column: int) -> tuple[int, int]:
        if line == 1:
            return self.origin.line, self.origin.column + column - 1
        return self.origin.line + line - 1, column

    def point(self, line: int, column: int) -> Span:
        file_line, file_column = self.at(line, column)
        return Span.point(self.origin.file, file_line, file_column)

    def range(self, line: int, column: int, end_line: int, end_column: int) -> Span:
        start, end = self.at(line, column), self.at(end_line, end_column)
        return Span(self.origin.file, start[0], start[1], end[0], end[1])


class _Builder:
    def __init__(self, origin: Span) -> None:
        self.positions = _Positions(origin)
        self.origin = origin
        self.diagnostics: list[Diagnostic] = []

    def span(self, node: Tree[Token] | Token) -> Span:
        if isinstance(node, Token):
            if node.line is None or node.column is None:
                return self.origin
            end_line = node.end_line if node.end_line is not None else node.line
            end_column = node.end_column if node.end_column is not None else node.column
            return self.positions.range(node.line, node.column, end_line, end_column)
        meta = node.meta
        if meta.empty:
            return self.origin
        return self.positions.range(meta.line, meta.column, meta.end_line, meta.end_column)

    def fail(self, message: str, span: Span, suggestion: str | None = None) -> Literal:
        self.diagnostics.append(error("OS107", message, span, suggestion=suggestion))
        return Literal(None, span)

    def build(self, node: Tree[Token] | Token, depth: int) -> Expression:
        if depth > MAX_DEPTH:
            raise _TooDeep
        if isinstance(node, Token):  # pragma: no cover - every token sits in a rule
            return self.fail(f"unexpected {node.value!r}", self.span(node))
        method = getattr(self, "_" + str(node.data))
        result: Expression = method(node, depth + 1)
        return result

    def _expression(self, node: Tree[Token], depth: int) -> Expression:
        return self.build(node.children[0], depth)

    def _paren(self, node: Tree[Token], depth: int) -> Expression:
        return self.build(node.children[0], depth)

    def _string_interp(self, node: Tree[Token], depth: int) -> Expression:
        return self.build(node.children[0], depth)

    _template_interp = _string_interp

    def _number(self, node: Tree[Token], depth: int) -> Expression:
        token = _token(node.children[0])
        return self._number_literal(token.value, self.span(node))

    def _number_literal(self, text: str, span: Span) -> Literal:
        if len(text) > _MAX_NUMBER_CHARS:
            return self.fail("number is too long", span)
        value = float(text) if any(c in text for c in ".eE") else int(text)
        problem = number_problem(value, text)
        if problem is not None:
            # A number a document cannot hold: the same refusal as a literal value's.
            self.diagnostics.append(error("OS104", problem[0], span, suggestion=problem[1]))
            return Literal(None, span)
        return Literal(value, span)

    def _true(self, node: Tree[Token], depth: int) -> Expression:
        return Literal(True, self.span(node))

    def _false(self, node: Tree[Token], depth: int) -> Expression:
        return Literal(False, self.span(node))

    def _null(self, node: Tree[Token], depth: int) -> Expression:
        return Literal(None, self.span(node))

    def _var(self, node: Tree[Token], depth: int) -> Expression:
        return Ref(_token(node.children[0]).value, (), self.span(node))

    def _call(self, node: Tree[Token], depth: int) -> Expression:
        name, *args = node.children
        return Call(_token(name).value, tuple(self.build(a, depth) for a in args), self.span(node))

    def _list(self, node: Tree[Token], depth: int) -> Expression:
        return ListExpr(tuple(self.build(item, depth) for item in node.children), self.span(node))

    def _object(self, node: Tree[Token], depth: int) -> Expression:
        pairs: list[tuple[str, Expression]] = []
        seen: set[str] = set()
        for item in node.children:
            assert isinstance(item, Tree)
            key_node, value_node = item.children
            key = self._key(key_node, depth)
            if key is not None and key in seen:
                self.fail(f"duplicate object key `{key}`", self.span(key_node))
            if key is not None:
                seen.add(key)
                pairs.append((key, self.build(value_node, depth)))
        return ObjectExpr(tuple(pairs), self.span(node))

    def _key(self, node: Tree[Token] | Token, depth: int) -> str | None:
        if isinstance(node, Token):
            return str(node.value)
        key = self.build(node, depth)
        if isinstance(key, Literal) and isinstance(key.value, str):
            return key.value
        self.fail("object keys must be names or plain strings", self.span(node))
        return None

    def _attr(self, node: Tree[Token], depth: int) -> Expression:
        target_node, name = node.children
        target = self.build(target_node, depth)
        return self._step(target, target_node, Literal(_token(name).value, self.span(name)), node)

    def _index(self, node: Tree[Token], depth: int) -> Expression:
        target_node, index_node = node.children
        target = self.build(target_node, depth)
        return self._step(target, target_node, self.build(index_node, depth), node)

    def _step(
        self,
        target: Expression,
        target_node: Tree[Token] | Token,
        index: Expression,
        node: Tree[Token],
    ) -> Expression:
        # A literal key or index on a reference extends the reference; in
        # parentheses, `(a)["b"]`, it stays an explicit Index.
        parenthesised = isinstance(target_node, Tree) and target_node.data == "paren"
        if isinstance(target, Ref) and not parenthesised and isinstance(index, Literal):
            value = index.value
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return Ref(target.root, (*target.path, value), self.span(node))
        return Index(target, index, self.span(node))

    def _unary(self, node: Tree[Token], depth: int) -> Expression:
        op, operand_node = node.children
        # `-1` is the number -1; `-(1)` stays an operation (see expr_source).
        if (
            _token(op).value == "-"
            and isinstance(operand_node, Tree)
            and operand_node.data == "number"
        ):
            return self._number_literal(
                "-" + _token(operand_node.children[0]).value, self.span(node)
            )
        operand = self.build(operand_node, depth)
        return Unary(_token(op).value, operand, self.span(node))

    def _binary(self, node: Tree[Token], depth: int) -> Expression:
        left, op, right = node.children
        return Binary(
            _token(op).value, self.build(left, depth), self.build(right, depth), self.span(node)
        )

    def _cond(self, node: Tree[Token], depth: int) -> Expression:
        c, t, o = (self.build(child, depth) for child in node.children)
        return Conditional(c, t, o, self.span(node))

    def _string(self, node: Tree[Token], depth: int) -> Expression:
        return self._template_parts(node, depth, escapes=True)

    def _template(self, node: Tree[Token], depth: int) -> Expression:
        return self._template_parts(node, depth, escapes=False)

    def _template_parts(self, node: Tree[Token], depth: int, *, escapes: bool) -> Expression:
        parts: list[str | Expression] = []
        for child in node.children:
            if isinstance(child, Token):
                parts.append(self._decode(child) if escapes else self._template_text(child))
            else:
                parts.append(self.build(child, depth))
        return template_node(parts, self.span(node))

    def _template_text(self, token: Token) -> str:
        """Template text with ``$${`` and ``%%{`` as the ``${`` and ``%{`` they stand for."""

        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "%{":
                self._directive(token, match.start())
            return match.group(0)[1:]

        return _TEMPLATE_SEQUENCE.sub(replace, token.value)

    def _directive(self, token: Token, offset: int) -> None:
        """Refuse the template directive (``%{ if }``, ``%{ for }``) at ``offset`` of ``token``."""
        before = token.value[:offset]
        newlines = before.count("\n")
        line = (token.line or 1) + newlines
        column = (token.column or 1) + offset if not newlines else offset - before.rfind("\n")
        self.fail(
            "template directives (`%{ if }`, `%{ for }`) are not supported",
            self.positions.range(line, column, line, column + 2),
            suggestion=_DIRECTIVE_HINT,
        )

    def _decode(self, token: Token) -> str:
        """Resolve backslash escapes, ``$${`` and ``%%{`` in quoted-string text."""
        newline = token.value.find("\n")
        if newline >= 0:
            line, column = token.line or 1, (token.column or 1) + newline
            self.fail(
                "unterminated string",
                self.positions.range(line, column, line, column + 1),
                suggestion='close the string with `"` on the same line; write \\n for a line break',
            )
            return ""

        def replace(match: re.Match[str]) -> str:
            short, long, simple, bad = match.groups()
            if simple is not None:
                return _SIMPLE_ESCAPES[simple]
            code = short or long
            if code is not None and _is_scalar_value(int(code, 16)):
                return chr(int(code, 16))
            if match.group(0) in ("$${", "%%{"):
                return match.group(0)[1:]
            if match.group(0) == "%{":
                self._directive(token, match.start())
                return ""
            line, column = token.line or 1, (token.column or 1) + match.start()
            where = self.positions.range(line, column, line, column + len(match.group(0)))
            shown = match.group(0) if bad is None else "\\" + bad
            self.fail(
                f"invalid escape sequence `{shown}` in string",
                where,
                suggestion='use one of \\n \\r \\t \\" \\\\ \\uXXXX \\UXXXXXXXX',
            )
            return ""

        return _ESCAPE.sub(replace, token.value)


def _is_scalar_value(code: int) -> bool:
    return code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF


def _token(node: Tree[Token] | Token) -> Token:
    assert isinstance(node, Token)
    return node
