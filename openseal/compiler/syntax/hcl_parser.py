"""The HCL parser: python-hcl2's grammar driven through lark, and its syntax errors.

Building the LALR tables takes seconds, so the parser is built on first use and
its tables are kept in the user cache directory
(:func:`openseal.compiler.cache.load_parser`; python-hcl2 caches inside
site-packages, which is often read-only). Syntax errors become ``OS004``
diagnostics with friendly messages; see :mod:`openseal.compiler.syntax.load_hcl` for
the public entry points.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import hcl2
from hcl2.postlexer import PostLexer
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from openseal.compiler.cache import load_parser
from openseal.compiler.diagnostics import Diagnostic, error
from openseal.compiler.syntax.spans import Span


class Positions:
    """Offsets to 1-based lines and columns for one text; ``first_line`` is the line of its
    first character in the file (a chunk of a file starts at the start of a line)."""

    def __init__(self, file: str, text: str, first_line: int = 1) -> None:
        self.file = file
        self.text = text
        self._starts = [0, *(m.end() for m in re.finditer("\n", text))]
        # One int per line, shared by every span on it: a large file's spans would
        # otherwise hold two fresh ints each.
        self._numbers = list(range(first_line - 1, first_line + len(self._starts)))

    def point(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return self._numbers[line], offset - self._starts[line - 1] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.point(start)
        end_line, end_column = self.point(max(start, end))
        return Span(self.file, line, column, end_line, end_column)


# --------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------

_GRAMMAR_FILE = Path(hcl2.__file__).with_name("hcl2.lark")
# HCL identifiers are Unicode (UAX #31: ID_Start, then ID_Continue or `-`);
# python-hcl2 accepts ASCII only. The pattern below is the same on ASCII input
# and takes any other non-space character into a name, so that the loader can
# check the name against UAX #31 itself (``load_hcl._check_name``): Python's
# regular expressions know no ID_Start, and `\w` is not ID_Continue (`²` is in
# one and not the other, `·` the other way round).
_ASCII_NAME = "NAME : /[a-zA-Z_][a-zA-Z0-9_-]*/"
_UNICODE_NAME = r"NAME : /(?:[a-zA-Z_]|[^\x00-\x7f\s])(?:[a-zA-Z0-9_-]|[^\x00-\x7f\s])*/"
# Go's HCL applies `-` and `!` to any unary expression (`--1`, `!!true`).
_UNARY = "!unary_op : (MINUS | NOT) expr_term"
_NESTED_UNARY = "!unary_op : (MINUS | NOT) (expr_term | unary_op)"


class _PostLexer(PostLexer):
    """python-hcl2's post-lexer, plus dropping ``/* */`` comments.

    In HCL an inline comment is not a newline, so it may sit anywhere a space
    can (``a = /* x */ 1``, between block labels). python-hcl2 lexes it as a
    newline token; asking lark to lex that token in every parser state and
    dropping it here makes it whitespace again.
    """

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return super().process(t for t in stream if not _is_inline_comment(t))

    @property
    def always_accept(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("NL_OR_COMMENT",)


def _is_inline_comment(token: Token) -> bool:
    return token.type == "NL_OR_COMMENT" and token.value.startswith("/*")


def _grammar() -> str:
    grammar = _GRAMMAR_FILE.read_text(encoding="utf-8")
    for old, new in ((_ASCII_NAME, _UNICODE_NAME), (_UNARY, _NESTED_UNARY)):
        if old not in grammar:  # python-hcl2 changed its grammar: see pyproject's pin
            raise RuntimeError(f"python-hcl2's grammar no longer has `{old}`")
        grammar = grammar.replace(old, new)
    return grammar


#: Options the parser is built with. Trees carry no positions of their own
#: (lark's ``propagate_positions`` costs about 40 % of the parse); a node's
#: offsets are those of its first and last tokens (:func:`node_start`).
_OPTIONS: dict[str, object] = {"parser": "lalr", "propagate_positions": False}


@functools.cache
def parser() -> Lark:
    # Built once per machine: the tables are kept, signed, in the user cache directory.
    return load_parser("hcl", _grammar(), {**_OPTIONS, "postlex": _PostLexer()})


def node_start(node: Tree[Token] | Token) -> int:
    """Start offset of a node: that of its first token (0 for a tree with none)."""
    while isinstance(node, Tree):
        first = next((c for c in node.children if isinstance(c, Tree | Token)), None)
        if first is None:
            return 0
        node = first
    return int(node.start_pos or 0)


def node_end(node: Tree[Token] | Token) -> int:
    """End offset of a node: that of its last token (0 for a tree with none)."""
    while isinstance(node, Tree):
        last = next((c for c in reversed(node.children) if isinstance(c, Tree | Token)), None)
        if last is None:
            return 0
        node = last
    return int(node.end_pos or 0)


def parse(source: str) -> Tree[Token]:
    """Parse prepared text (see :func:`prepare`); lark's exceptions propagate."""
    return parser().parse(source)


def parse_prefix(source: str, end: int) -> Tree[Token] | None:
    """A tree of ``source[:end]`` with the brackets still open there closed, or ``None``.

    For looking at what comes before the first syntax error, which starts at
    or after ``end``: the text up to it is complete but for closing brackets.
    """
    text = source[:end]
    for _ in range(MAX_CLOSERS):
        try:
            return parser().parse(text)
        except UnexpectedToken as exc:
            opener = _unclosed_opener(exc) if exc.token.type == "$END" else None
            if opener is None or opener.type not in ("LBRACE", "LSQB", "LPAR"):
                return None
            text += "\n" + _OPENERS[opener.type] + "\n"
        except Exception:  # any other failure: no tree, and nothing more to say
            return None
    return None


#: Most brackets :func:`parse_prefix` closes (deeper text is refused anyway).
MAX_CLOSERS = 70


def prepare(text: str) -> str:
    """Text the grammar accepts with positions unchanged.

    A byte-order mark becomes a space (ignored, same column count) and a final
    newline is added, because the grammar's line comments need one.
    """
    if text.startswith("\ufeff"):
        text = " " + text[1:]
    return text if text.endswith("\n") else text + "\n"


# --------------------------------------------------------------------------
# Syntax errors from lark
# --------------------------------------------------------------------------

_OPENERS = {"LBRACE": "}", "LSQB": "]", "LPAR": ")", "INTERP_START": "}", "DBLQUOTE": '"'}
_CLOSERS = {"RBRACE", "RSQB", "RPAR"}

# Malformed inputs that identify a common mistake (the idea of lark's
# ``match_examples``): an error in the same parser state on the same kind of
# token gets the hint, which explains it better than a list of tokens.
_EXAMPLES: dict[str, list[str]] = {
    "attributes are separated by newlines, not commas": [
        "a = 1, b = 2\n",
        'a = "x", b = 2\n',
        "a { b = 1, c = 2 }\n",
    ],
    "an attribute ends at the end of its line": ['a = "x" "y"\n', 'a = 1 "y"\n', "a = b c\n"],
    "an attribute needs a value after `=`": ["a =\n", "a = \nb = 1\n", "a { b = }\n"],
    "a block needs `{` after its type and labels": ["a b\n", 'a "b"\n', "a b c\n"],
    "there is no open block here to close": ["}\n", "a = 1\n}\n"],
    "block labels are names or quoted strings": ["a 1 {}\n", 'a "b" 1 {}\n', "a [x] {}\n"],
    "list items are separated by commas": ["a = [1 2]\n", 'a = ["x" "y"]\n', "a = [b c]\n"],
    "function arguments are separated by commas": ["a = f(1 2)\n", "a = f(b c)\n"],
}

_EXPRESSION_STARTS = frozenset(
    {
        *("DBLQUOTE", "INT_LITERAL", "FLOAT_LITERAL", "LSQB", "LBRACE", "NAME", "LPAR"),
        *("MINUS", "NOT", "TRUE", "FALSE", "NULL", "TEMPLATE_STRING"),
        *("HEREDOC_TEMPLATE", "HEREDOC_TEMPLATE_TRIM"),
    }
)
_HEREDOC_START = re.compile(r"<<-?([A-Za-z][A-Za-z0-9._-]*)")
#: Message for a quoted string with a raw newline (also used by the loader's checks).
UNCLOSED_STRING = 'a quoted string cannot span lines; close it with `"`, or use `\\n` or a heredoc'
# On lark's value stack a block type or bare label is still `_attribute_name`.
_HEADER_PARTS = frozenset({"_attribute_name", "identifier", "keyword", "literal_value", "string"})
_KEYWORDS = frozenset(
    {"IN", "FOR", "IF", "FOR_EACH", "ELSE", "ENDIF", "ENDFOR", "TRUE", "FALSE", "NULL"}
)
_TOKEN_NAMES = {
    "NAME": "a name",
    "NL_OR_COMMENT": "a newline",
    "$END": "the end of the file",
    "DBLQUOTE": "a quoted string",
    "STRING_CHARS": "string text",
    "INT_LITERAL": "a number",
    "FLOAT_LITERAL": "a number",
    "HEREDOC_TEMPLATE": "a heredoc",
    "HEREDOC_TEMPLATE_TRIM": "a heredoc",
    "EQ": "`=`",
    "COLON": "`:`",
}


def syntax_error(exc: UnexpectedInput, source: str, text_length: int, file: str) -> Diagnostic:
    pos = Positions(file, source)
    if isinstance(exc, UnexpectedToken):
        return _unexpected_token(exc, pos, text_length)
    if isinstance(exc, UnexpectedCharacters):
        offset = int(exc.pos_in_stream or 0)
        char = source[offset] if offset < len(source) else ""
        message = f"unexpected character {_quote(char)}"
        if char == "\\":
            message += "; a backslash is only valid inside a quoted string"
        return error("OS004", message, pos.span(offset, offset + 1))
    line, column = max(1, exc.line), max(1, exc.column)
    return error("OS004", "syntax error", Span(file, line, column, line, column))


def _unexpected_token(exc: UnexpectedToken, pos: Positions, text_length: int) -> Diagnostic:
    earlier = _earlier_problem(exc, pos)
    if earlier is not None:
        return earlier
    token = exc.token
    if token.type == "$END":
        opener = _unclosed_opener(exc)
        if opener is not None:
            closer = _OPENERS[opener.type]
            return error(
                "OS004",
                f"`{opener.value.strip()}` is never closed; "
                f"expected `{closer}` before the end of the file",
                pos.span(int(opener.start_pos or 0), int(opener.end_pos or 0)),
            )
        hint = _hint(exc) or "expected " + _summarise(exc.expected)
        return error(
            "OS004", f"unexpected end of the file; {hint}", pos.span(text_length, text_length)
        )
    start = int(token.start_pos or 0)
    heredoc = _HEREDOC_START.match(pos.text, start)
    if heredoc is not None:
        marker = heredoc.group(1)
        message = (
            f"heredoc `{heredoc.group()}` is never closed; "
            f"expected a line holding only `{marker}`, followed by a newline"
        )
        return error("OS004", message, pos.span(start, heredoc.end()))
    if token.type == "NL_OR_COMMENT" and token.value.startswith("\n"):
        end = start  # point at the end of the line, not across it
    elif token.type == "STRING_CHARS":
        end = start + 1  # lark's fallback lexer: only the first character is known bad
    else:
        end = int(token.end_pos or start + 1)
    what = _describe(token)
    hint = _hint(exc) or "expected " + _summarise(exc.expected)
    newline = _line_end_before(pos.text, start) if _EXPRESSION_STARTS & set(exc.expected) else None
    if newline is not None:
        # An expression was wanted and the line ended first (`version =⏎}`): HCL
        # reports the end of that line, not the token on a later one.
        hint = _hint(exc) or "expected " + _summarise(set(exc.expected) - {"NL_OR_COMMENT"})
        return error("OS004", f"unexpected newline; {hint}", pos.span(newline, newline))
    return error("OS004", f"unexpected {what}; {hint}", pos.span(start, max(end, start)))


#: Characters after which HCL needs the expression to go on, on the same line.
_WANTS_MORE = frozenset("=+-*/%&|<>!?:")


def _line_end_before(text: str, start: int) -> int | None:
    """The newline ending the line of an `=` or operator that ``start`` should follow."""
    at = start
    while at > 0 and text[at - 1] in " \t\r\n":
        at -= 1
    if at == 0 or text[at - 1] not in _WANTS_MORE:
        return None
    newline = text.find("\n", at, start)
    return newline if newline != -1 else None


def _earlier_problem(exc: UnexpectedToken, pos: Positions) -> Diagnostic | None:
    """A mistake before the token lark tripped on, that explains the error better.

    HCL reports these first, too: a quoted string left open runs on over the
    following lines, and a name alone on its line is read as a block header.
    """
    stack = _value_stack(exc)
    for item in stack:
        if isinstance(item, Tree):
            tokens: Iterable[Token] = item.scan_values(lambda v: isinstance(v, Token))
        else:
            tokens = [item] if isinstance(item, Token) else []
        for token in tokens:
            if token.type == "STRING_CHARS" and "\n" in token.value:
                at = int(token.start_pos or 0) + token.value.index("\n")
                return error("OS004", UNCLOSED_STRING, pos.span(at, at + 1))
    return _dangling_header(stack, pos)


def _dangling_header(stack: list[object], pos: Positions) -> Diagnostic | None:
    """`name` or `name "label"` followed by a newline: not an attribute, not a block."""
    newlines = 0
    while newlines < len(stack) and _is_newline(stack[-1 - newlines]):
        newlines += 1
    if not newlines:
        return None
    header: list[Tree[Token]] = []
    for item in reversed(stack[: len(stack) - newlines]):
        if isinstance(item, Tree) and str(item.data).startswith("__block_star"):
            header[:0] = [c for c in item.children if isinstance(c, Tree)]  # the labels
        elif isinstance(item, Tree) and item.data in _HEADER_PARTS:
            header.insert(0, item)
        else:
            break
    if not header:
        return None
    if len(header) == 1:
        start, end = node_start(header[0]), node_end(header[0])
        name = pos.text[start:end]
        message = f"`{name}` is neither an attribute (`{name} = value`) nor a block (`{name} {{`)"
        return error("OS004", message, pos.span(start, end))
    newline = node_end(header[-1])
    message = "a block's `{` must be on the same line as its type and labels"
    return error("OS004", message, pos.span(newline, newline + 1))


def _is_newline(item: object) -> bool:
    if isinstance(item, Tree):
        return bool(item.data == "new_line_or_comment")
    return isinstance(item, Token) and item.type == "NL_OR_COMMENT"


def _value_stack(exc: UnexpectedToken) -> list[object]:
    parser = exc.interactive_parser
    return list(parser.parser_state.value_stack) if parser is not None else []


def _unclosed_opener(exc: UnexpectedToken) -> Token | None:
    """The innermost bracket still open when the file ended."""
    depth = 0
    for item in reversed(_value_stack(exc)):
        if not isinstance(item, Token):
            continue
        if item.type in _CLOSERS:
            depth += 1
        elif item.type in _OPENERS:
            if depth == 0:
                return item
            depth -= 1
    return None


def _hint(exc: UnexpectedToken) -> str | None:
    """The hint of the first example failing in the same parser state on the same token."""
    for hint, examples in _EXAMPLES.items():
        for example in examples:
            try:
                parser().parse(example)
            except UnexpectedToken as other:
                if other.state == exc.state and other.token.type == exc.token.type:
                    return hint
            except Exception:  # a failing hint must never hide the real error
                continue
    return None


def _describe(token: Token) -> str:
    if token.type == "NL_OR_COMMENT":
        return "newline" if token.value.startswith("\n") else "comment"
    value = token.value.strip() or token.value
    if token.type == "STRING_CHARS":
        # Outside a string this is lark's fallback lexer grabbing the rest of
        # the line; only its first character is the unexpected one.
        value = value[:1]
    return _quote(value[:20] + ("…" if len(value) > 20 else ""))


def _summarise(expected: Iterable[str]) -> str:
    names = set(expected)
    words: set[str] = set()
    if {"DBLQUOTE", "INT_LITERAL", "LSQB"} <= names:
        names -= _EXPRESSION_STARTS
        words.add("an expression")
    if "NAME" in names:
        names -= _KEYWORDS  # HCL does not reserve them: they are names too
    for name in names:
        words.add(_terminal_name(name))
    listed = sorted(words)
    if not listed:
        return "something else"
    if len(listed) > 6:
        listed = [*listed[:6], "…"]
    return listed[0] if len(listed) == 1 else "one of " + ", ".join(listed)


def _terminal_name(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    try:
        pattern = parser().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return _quote(pattern.value)
    return name.lower().replace("_", " ")


def _quote(text: str) -> str:
    if not text:
        return "end of input"
    return f"`{text}`" if "`" not in text else repr(text)
