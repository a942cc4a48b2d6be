"""Load HCL text into the spanned document tree (:mod:`openseal.compiler.syntax.document_tree`).

The grammar is python-hcl2's (``hcl2.lark``), driven through lark directly so
that every node keeps its source position; python-hcl2's own API drops them.
The parser and its syntax-error messages live in :mod:`openseal.compiler.syntax.hcl_parser`.
This module maps lark's tree to :mod:`~openseal.compiler.syntax.document_tree` nodes and adds
the checks that make the grammar agree with the reference Go implementation of
HCL (see ``docs/hcl-compatibility.md``): newlines between attributes and
blocks, single-line blocks and the closing line of multi-line ones, object
separators, string escapes, multi-line quoted strings, template sequences in
block labels, operators that start or end a line, UAX #31 identifiers. When
the grammar finds a syntax error, the checks still run on the lines before it.

Nothing here raises on bad input: every problem is a diagnostic.

>>> doc, diagnostics = load_hcl('agent "triage" {\\n  max_turns = 3\\n}\\n', "a.hcl")
>>> doc.body.blocks[0].labels[0].value, diagnostics
('triage', [])
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from hcl2.postlexer import OPERATOR_TYPES
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from openseal.compiler.diagnostics import Diagnostic, Related, error
from openseal.compiler.syntax.document_tree import (
    Attribute,
    Block,
    Body,
    Document,
    Entry,
    Expr,
    Label,
    ListNode,
    MapNode,
    Scalar,
    Value,
)
from openseal.compiler.syntax.file_text import read_source
from openseal.compiler.syntax.fold import underflow
from openseal.compiler.syntax.gc_pause import gc_paused
from openseal.compiler.syntax.hcl_chunks import CHUNK_SIZE, chunk_starts
from openseal.compiler.syntax.hcl_parser import (
    UNCLOSED_STRING,
    Positions,
    node_end,
    node_start,
    parse,
    parse_prefix,
    prepare,
    syntax_error,
)
from openseal.compiler.syntax.spans import Span

__all__ = ["MAX_NESTING", "load_hcl", "load_hcl_file"]

#: Deepest nesting of brackets, braces, parentheses and blocks accepted (``OS007``).
MAX_NESTING = 64

Node = Tree[Token] | Token

# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def load_hcl(text: str, file: str) -> tuple[Document | None, list[Diagnostic]]:
    """Parse HCL ``text`` (any HCL, not only openseal definitions).

    Returns the document and its diagnostics, sorted by position. The document
    is ``None`` only when the text cannot be parsed at all (``OS004``) or nests
    too deeply (``OS007``); with other errors (``OS006`` duplicates, ``OS004``
    compatibility checks) the document is returned so later stages can report
    more, and callers must check the diagnostics for errors.
    """
    with gc_paused():
        return _load(text, file)


def _load(
    text: str, file: str, chunk_size: int = CHUNK_SIZE
) -> tuple[Document | None, list[Diagnostic]]:
    source = prepare(text)
    starts = chunk_starts(source, chunk_size) if len(source) > chunk_size else None
    if starts is not None and len(starts) > 1:
        loaded = _load_chunks(text, file, source, starts)
        if loaded is not None:
            return loaded
    try:
        tree = parse(source)
    except UnexpectedInput as exc:
        first = syntax_error(exc, source, len(text), file)
        return None, [*_checks_before(first, file, source, text), first]
    except RecursionError:
        return None, [_too_deep(Span.whole_file(file))]
    except Exception as exc:  # lark internals: still a diagnostic, never a traceback
        message = f"the HCL parser failed: {exc.__class__.__name__}"
        return None, [error("OS004", message, Span.whole_file(file))]
    try:
        return _Loader(file, source, len(text)).load(tree, text)
    except RecursionError:
        return None, [_too_deep(Span.whole_file(file))]
    except Exception as exc:  # a loader bug must still not reach the user as a traceback
        message = f"internal error while loading HCL ({exc.__class__.__name__}); please report it"
        return None, [error("OS004", message, Span.whole_file(file))]


def _load_chunks(
    text: str, file: str, source: str, starts: list[int]
) -> tuple[Document, list[Diagnostic]] | None:
    """``source`` loaded a chunk of whole top-level items at a time (:mod:`.hcl_chunks`), each
    chunk's tree dropped once its items are converted; None when any chunk does not load
    cleanly (a syntax error, nesting too deep, a loader failure), for the whole file's parse
    to report it exactly as it would without chunks."""
    items: list[Attribute | Block] = []
    diagnostics: list[Diagnostic] = []
    line = 1
    for start, end in itertools.pairwise([*starts, len(source)]):
        chunk = source[start:end]
        final = end == len(source)
        length = len(chunk) - (len(source) - len(text)) if final else len(chunk)
        loader = _Loader(file, chunk, length, line)
        try:
            found = loader.top_level(parse(chunk))
        except Exception:  # a syntax error or any failure: the whole parse says what it is
            return None
        if isinstance(found, Diagnostic):
            return None
        items.extend(found)
        diagnostics.extend(loader.diagnostics)
        line += chunk.count("\n")
    body = _assemble(items, _whole_text(file, text), diagnostics)
    diagnostics.sort(key=lambda d: (d.span.line, d.span.column, d.code))
    return Document(file, "hcl", body, text), diagnostics


def _whole_text(file: str, text: str) -> Span:
    """The span of all of ``text``, as :class:`Positions` gives it."""
    last_line_start = text.rfind("\n") + 1
    return Span(file, 1, 1, text.count("\n") + 1, len(text) - last_line_start + 1)


def _assemble(items: list[Attribute | Block], span: Span, diagnostics: list[Diagnostic]) -> Body:
    """A body of converted ``items``; an attribute set twice is reported (``OS006``) and its
    second setting left out."""
    attributes: list[Attribute] = []
    blocks: list[Block] = []
    seen: dict[str, Attribute] = {}
    for item in items:
        if isinstance(item, Block):
            blocks.append(item)
            continue
        first = seen.get(item.name)
        if first is not None:
            diagnostics.append(
                error(
                    "OS006",
                    f"attribute `{item.name}` is already set in this block",
                    item.name_span,
                    related=[Related(first.name_span, "first set here")],
                    suggestion="remove one of them",
                )
            )
            continue
        seen[item.name] = item
        attributes.append(item)
    return Body(tuple(attributes), tuple(blocks), span)


def _checks_before(first: Diagnostic, file: str, source: str, text: str) -> list[Diagnostic]:
    """The loader's own errors that come before the syntax error ``first``.

    The grammar is more lenient than HCL, so a mistake only the loader's checks
    see (`a = 1 b = 2`) can come before the first one lark sees; HCL reports
    the earlier one first. The checks run on the lines before the syntax error.
    """
    line_start = sum(len(line) for line in source.splitlines(keepends=True)[: first.span.line - 1])
    tree = parse_prefix(source, line_start) if line_start else None
    if tree is None:
        return []
    loader = _Loader(file, source, len(text))
    try:
        if loader._check(tree) is not None:
            return []
    except Exception:  # a tree with tokens skipped may not have the shapes the checks expect
        return []
    where = (first.span.line, first.span.column)
    return sorted(
        (d for d in loader.diagnostics if (d.span.line, d.span.column) < where),
        key=lambda d: (d.span.line, d.span.column),
    )


def load_hcl_file(
    path: Path, display_name: str | None = None
) -> tuple[Document | None, list[Diagnostic]]:
    """Read ``path`` (size, encoding and binary checks included) and load it."""
    source, diagnostics = read_source(path, display_name)
    if source is None:
        return None, diagnostics
    document, more = load_hcl(source.text, source.file)
    return document, [*diagnostics, *more]


_HEREDOCS = frozenset({"HEREDOC_TEMPLATE", "HEREDOC_TEMPLATE_TRIM"})


def _children(tree: Tree[Token]) -> list[Node]:
    """Children without newline/comment nodes (and without lark's placeholders)."""
    return [c for c in tree.children if _is_content(c)]


def _subtrees(tree: Tree[Token]) -> list[Tree[Token]]:
    return [c for c in tree.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]


def _start(node: Node) -> int:
    while isinstance(node, Tree):
        for child in node.children:
            if _is_content(child):
                node = child
                break
        else:  # only newlines and comments: where they are
            return node_start(node)
    return int(node.start_pos or 0)


def _end(node: Node) -> int:
    """End offset of a node, excluding trailing newlines the grammar folds in."""
    while isinstance(node, Tree):
        for child in reversed(node.children):
            if _is_content(child):
                node = child
                break
        else:
            return node_end(node)
    end = int(node.end_pos or 0)
    if node.type in _HEREDOCS:
        # A heredoc token swallows the newline after its closing marker.
        end -= 2 if node.value.endswith("\r\n") else 1
    return end


def _is_content(node: object) -> bool:
    """Not a newline/comment node (nor one of lark's ``None`` placeholders)."""
    if type(node) is Token:
        return node.type != "NL_OR_COMMENT"
    if isinstance(node, Tree):
        return node.data != "new_line_or_comment"
    return node is not None


def _gap_marks(source: str, start: int, end: int) -> list[tuple[str, int]]:
    """Newlines and commas between two nodes, skipping comments.

    A ``#`` or ``//`` comment counts as the newline that ends it; a ``/* */``
    comment counts as nothing, as in HCL.
    """
    marks: list[tuple[str, int]] = []
    i = start
    while i < end:
        ch = source[i]
        if ch == "\n" or ch == ",":
            marks.append((ch, i))
        elif ch == "#" or source.startswith("//", i):
            i = source.find("\n", i, end)
            if i == -1:
                break
            marks.append(("\n", i))
        elif source.startswith("/*", i):
            close = source.find("*/", i + 2, end)
            i = end if close == -1 else close + 1
        i += 1
    return marks


def _first_newline(source: str, start: int, end: int) -> int | None:
    return next((at for kind, at in _gap_marks(source, start, end) if kind == "\n"), None)


# --------------------------------------------------------------------------
# Strings
# --------------------------------------------------------------------------

_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.?))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _escape_problems(raw: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, message)`` for each invalid escape in a quoted-string part."""
    for m in _ESCAPE.finditer(raw):
        short, long, other = m.groups()
        code = short or long
        if code is not None:
            value = int(code, 16)
            if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
                yield m.start(), m.end(), f"`{m.group()}` is not a valid Unicode character"
        elif other not in _SIMPLE_ESCAPES:
            if other in ("u", "U"):
                digits = 4 if other == "u" else 8
                message = f"`\\{other}` must be followed by {digits} hexadecimal digits"
            else:
                message = f"`\\{other}` is not a valid escape sequence"
            yield m.start(), m.end(), message


def _unescape(raw: str) -> str:
    """Decode HCL escapes; invalid ones are kept as written (reported elsewhere)."""

    def one(m: re.Match[str]) -> str:
        short, long, other = m.groups()
        code = short or long
        if code is not None:
            value = int(code, 16)
            return m.group() if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF else chr(value)
        return _SIMPLE_ESCAPES.get(other, m.group())

    return _ESCAPE.sub(one, raw)


def _heredoc_text(token: Token) -> str:
    """The content of a heredoc: the lines between the opening and closing markers."""
    raw = str(token)
    first_newline = raw.index("\n")
    after_marker = raw[first_newline + 1 :].rstrip("\n").rstrip("\r")
    last_newline = after_marker.rfind("\n")
    content = after_marker[: last_newline + 1]
    if token.type == "HEREDOC_TEMPLATE_TRIM":
        content = _strip_indent(content)
    return content


def _strip_indent(content: str) -> str:
    """``<<-`` heredocs: remove the indentation common to all non-blank lines."""
    lines = content.splitlines(keepends=True)
    widths = [len(line) - len(line.lstrip(" \t")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return "".join(line[cut:] if line.strip() else line.lstrip(" \t") for line in lines)


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------

# Nodes that open one level of nesting (brackets, braces, parentheses, blocks).
_NESTING = frozenset(
    {
        "block",
        "tuple",
        "object",
        "function_call",
        "braces_index",
        "interpolation",
        "for_tuple_expr",
        "for_object_expr",
    }
)
# Inside these, HCL ignores newlines, so an operator may start a line.
_NEWLINES_IGNORED = frozenset(
    {
        "tuple",
        "function_call",
        "braces_index",
        "interpolation",
        "for_tuple_expr",
        "for_object_expr",
        "template_if_start",
        "template_for_start",
    }
)
# Inside these, newlines matter again.
_NEWLINES_MATTER = frozenset({"object", "body", "attribute", "block"})
_LABEL_KINDS = frozenset({"identifier", "keyword", "literal_value", "string"})
# Nodes that _check_node looks at.
_CHECKED_KINDS = frozenset(
    {
        *("body", "block", "object", "string_part", "template_string"),
        *("binary_operator", "binary_term", "conditional", "identifier"),
    }
)
# Nodes the depth and newline walk in _Loader._check treats specially.
_WALK_KINDS = _NESTING | _NEWLINES_IGNORED | _NEWLINES_MATTER | _CHECKED_KINDS | {"expr_term"}


class _Loader:
    """Converts one parsed text — a whole file, or a chunk of one starting at ``first_line`` —
    with ``text_length`` the length of the text before :func:`prepare` added a newline."""

    def __init__(self, file: str, source: str, text_length: int, first_line: int = 1) -> None:
        self.file = file
        self.source = source
        self.text_length = text_length
        self.pos = Positions(file, source, first_line)
        self.diagnostics: list[Diagnostic] = []

    # -- entry ---------------------------------------------------------------

    def load(self, tree: Tree[Token], text: str) -> tuple[Document | None, list[Diagnostic]]:
        found = self.top_level(tree)
        if isinstance(found, Diagnostic):
            return None, [found]
        body = _assemble(found, self.pos.span(0, self.text_length), self.diagnostics)
        document = Document(self.file, "hcl", body, text)
        self.diagnostics.sort(key=lambda d: (d.span.line, d.span.column, d.code))
        return document, self.diagnostics

    def top_level(self, tree: Tree[Token]) -> list[Attribute | Block] | Diagnostic:
        """The checks on the whole tree, then its top-level items converted; the ``OS007``
        diagnostic instead when it nests too deeply."""
        too_deep = self._check(tree)
        if too_deep is not None:
            start = _start(too_deep)
            return _too_deep(self.pos.span(start, start + 1))
        if self.text_length < len(self.source):  # prepare() added the final newline
            self._check_final_heredoc(tree)
        return self.items(_subtrees(tree)[0])

    # -- helpers -------------------------------------------------------------

    def node_span(self, node: Node) -> Span:
        return self.pos.span(_start(node), _end(node))

    def text_of(self, node: Node) -> str:
        return self.source[_start(node) : _end(node)]

    def report(self, code: str, message: str, span: Span, **kwargs: object) -> None:
        self.diagnostics.append(error(code, message, span, **kwargs))  # type: ignore[arg-type]

    def syntax(self, message: str, start: int, end: int | None = None) -> None:
        self.report("OS004", message, self.pos.span(start, start + 1 if end is None else end))

    # -- depth ---------------------------------------------------------------

    # -- compatibility checks and depth (one iterative walk over the tree) ----

    def _check(self, tree: Tree[Token]) -> Tree[Token] | None:
        """Run the checks on every node; stop at and return one nested too deeply.

        The walk is iterative so that no input can exhaust Python's stack here,
        and the depth limit keeps the recursive conversion that follows safe.
        """
        stack: list[tuple[Tree[Token], int, bool]] = [(tree, 0, False)]
        push = stack.append
        while stack:
            node, depth, newlines_ignored = stack.pop()
            kind = node.data
            # Most nodes are none of the kinds below; the membership tests come first
            # because this loop visits every node of the file.
            if kind in _WALK_KINDS:
                paren = kind == "expr_term" and _is_paren(node)
                if kind in _NESTING or paren:
                    depth += 1
                    if depth > MAX_NESTING:
                        return node
                if kind in _NEWLINES_IGNORED or paren:
                    newlines_ignored = True
                elif kind in _NEWLINES_MATTER:
                    newlines_ignored = False
                if kind in _CHECKED_KINDS:
                    self._check_node(node, newlines_ignored)
            for child in node.children:
                if type(child) is Tree:
                    push((child, depth, newlines_ignored))
        return None

    def _check_node(self, node: Tree[Token], newlines_ignored: bool) -> None:
        kind = node.data
        if kind == "body":
            self._check_body_separators(node)
        elif kind == "block":
            self._check_block(node)
        elif kind == "object":
            self._check_object_separators(node)
        elif kind == "string_part":
            self._check_string_part(node)
        elif kind == "template_string":
            self.syntax(
                "unexpected character `\\`; a backslash is only valid inside a quoted string",
                _start(node),
            )
        elif kind == "identifier":
            self._check_name(node)
        if not newlines_ignored and kind in ("binary_operator", "conditional"):
            self._check_leading_operators(node)
        if not newlines_ignored and kind in ("binary_term", "conditional"):
            self._check_operator_newlines(node)

    def _check_final_heredoc(self, tree: Tree[Token]) -> None:
        # The grammar needs a newline after a heredoc's closing marker, and HCL
        # does too; the newline `_prepare` added must not complete one.
        for token in tree.scan_values(lambda v: isinstance(v, Token) and v.type in _HEREDOCS):
            if token.end_pos == len(self.source):
                self.syntax(
                    "the heredoc's closing marker must be followed by a newline",
                    self.text_length,
                    self.text_length,
                )

    def _check_body_separators(self, body: Tree[Token]) -> None:
        items = _subtrees(body)
        for previous, item in itertools.pairwise(items):
            if _first_newline(self.source, _end(previous), _start(item)) is None:
                what = "attribute" if previous.data == "attribute" else "block"
                self.syntax(
                    f"missing newline after {what}; each attribute and block starts on a new line",
                    _start(item),
                )

    def _check_block(self, block: Tree[Token]) -> None:
        for label in _block_labels(block)[1:]:
            if label.data == "string":
                self._check_label(label)
        lbrace, body, rbrace = _block_body(block)
        self._check_block_header(block, lbrace)
        items = _subtrees(body)
        if items and _first_newline(self.source, int(lbrace.end_pos or 0), _start(items[0])):
            self._check_block_close(items[-1], rbrace)
            return
        if not items:
            return
        # A single-line block: `name { attribute = value }`.
        first = items[0]
        if first.data == "block":
            self.syntax("a single-line block cannot contain another block", _start(first))
            return
        after = _start(items[1]) if len(items) > 1 else int(rbrace.start_pos or 0)
        newline = _first_newline(self.source, _end(first), after)
        if newline is not None:
            self.syntax(
                "a single-line block holds one attribute and closes on the same line; "
                "put a newline after `{` to write more",
                newline,
            )

    def _check_block_close(self, last: Tree[Token], rbrace: Token) -> None:
        # A block written over several lines closes with `}` on a line of its own.
        closing = int(rbrace.start_pos or 0)
        if _first_newline(self.source, _end(last), closing) is None:
            what = "argument" if last.data == "attribute" else "block definition"
            self.syntax(
                f"missing newline after {what}; the block's closing `}}` goes on a line of its own",
                closing,
            )

    def _check_block_header(self, block: Tree[Token], lbrace: Token) -> None:
        # python-hcl2 lets `{` start the next line; HCL wants it on the header's line.
        header = _block_labels(block)
        newline = _first_newline(self.source, _end(header[-1]), int(lbrace.start_pos or 0))
        if newline is None:
            return
        if len(header) == 1:
            name = self.text_of(header[0])
            self.syntax(
                f"`{name}` is neither an attribute (`{name} = value`) nor a block "
                f"(`{name} {{` on one line)",
                _start(header[0]),
                _end(header[0]),
            )
        else:
            self.syntax("a block's `{` must be on the same line as its type and labels", newline)

    def _check_label(self, label: Tree[Token]) -> None:
        for part in _subtrees(label):
            inner = part.children[0]
            if isinstance(inner, Tree):
                self.syntax(
                    "a block label cannot contain `${...}` or `%{...}`; "
                    "write `$${` for a literal `${`",
                    _start(inner),
                    _end(inner),
                )

    def _check_object_separators(self, obj: Tree[Token]) -> None:
        elems = [c for c in _subtrees(obj) if c.data == "object_elem"]
        if not elems:
            return
        closing = obj.children[-1]
        ends = [_start(e) for e in elems[1:]] + [
            int(closing.start_pos or 0) if isinstance(closing, Token) else _end(obj)
        ]
        for index, (elem, next_start) in enumerate(zip(elems, ends, strict=True)):
            marks = _gap_marks(self.source, _end(elem), next_start)
            kinds = [kind for kind, _ in marks]
            if "," in kinds and "\n" in kinds[: kinds.index(",")]:
                comma = marks[kinds.index(",")][1]
                self.syntax(
                    "unexpected `,` at the start of a line; put it after the element", comma
                )
            elif not marks and index < len(elems) - 1:
                self.syntax("missing `,` or newline between object elements", next_start)

    def _check_string_part(self, part: Tree[Token]) -> None:
        token = part.children[0]
        if not isinstance(token, Token) or token.type != "STRING_CHARS":
            return
        base = int(token.start_pos or 0)
        for start, end, message in _escape_problems(token.value):
            self.syntax(f"invalid escape sequence: {message}", base + start, base + end)
        newline = token.value.find("\n")
        if newline != -1:
            self.syntax(
                UNCLOSED_STRING,
                base + newline,
            )

    def _check_name(self, node: Tree[Token]) -> None:
        token = node.children[0]
        if not isinstance(token, Token) or token.value.isascii():
            return
        bad = _first_invalid_name_character(token.value)
        if bad is not None:
            at = int(token.start_pos or 0) + bad
            char = token.value[bad]
            self.syntax(
                f"invalid character `{char}` (U+{ord(char):04X}) in a name; names are "
                "Unicode letters, digits, `_` and `-` (UAX #31 identifiers)",
                at,
            )

    def _check_operator_newlines(self, node: Tree[Token]) -> None:
        # The grammar lets an operand (or a conditional's parts) follow on the next
        # line; HCL ends an expression at the newline unless brackets are open.
        for child in node.children:
            if isinstance(child, Tree) and child.data == "new_line_or_comment":
                at = node_start(child)  # the newline, or the comment that ends the line
                self.syntax(
                    "the expression continues on the next line; keep it on one line "
                    "or wrap it in `( )`",
                    at,
                )
                return

    def _check_leading_operators(self, node: Tree[Token]) -> None:
        # python-hcl2's post-lexer glues a newline onto the operator after it, so
        # `a = 1` / `+ 2` continues the expression; HCL ends it at the newline.
        for child in node.children:
            if isinstance(child, Token) and child.type in OPERATOR_TYPES and "\n" in child.value:
                start, end = int(child.start_pos or 0), int(child.end_pos or 0)
                self.syntax(
                    f"`{self.source[start:end]}` cannot start a line here; end the previous "
                    "line with the operator or wrap the expression in `( )`",
                    start,
                    end,
                )

    # -- conversion ----------------------------------------------------------

    def body(self, tree: Tree[Token], span: Span) -> Body:
        return _assemble(self.items(tree), span, self.diagnostics)

    def items(self, tree: Tree[Token]) -> list[Attribute | Block]:
        """A body's attributes and blocks, converted, in order."""
        return [
            self.attribute(child) if child.data == "attribute" else self.block(child)
            for child in _subtrees(tree)
            if child.data in ("attribute", "block")
        ]

    def attribute(self, tree: Tree[Token]) -> Attribute:
        name_tree, value_tree = _subtrees(tree)
        name = _name_token(name_tree)
        value = self.value(value_tree)
        return Attribute(
            sys.intern(name.value),
            self.node_span(name),
            value,
            self.pos.span(_start(tree), _end(tree)),
        )

    def block(self, tree: Tree[Token]) -> Block:
        type_tree, *label_trees = _block_labels(tree)
        type_token = _name_token(type_tree)
        labels = tuple(Label(self.label_value(t), self.node_span(t)) for t in label_trees)
        lbrace, body_tree, rbrace = _block_body(tree)
        body_span = self.pos.span(int(lbrace.start_pos or 0), int(rbrace.end_pos or 0))
        return Block(
            sys.intern(type_token.value),
            self.node_span(type_token),
            labels,
            self.body(body_tree, body_span),
            self.pos.span(_start(tree), int(rbrace.end_pos or 0)),
        )

    def label_value(self, tree: Tree[Token]) -> str:
        if tree.data == "string":
            return self.string_value(tree, template=False)
        return str(_name_token(tree))

    def value(self, tree: Tree[Token]) -> Value:
        literal = self.literal(tree)
        return literal if literal is not None else Expr(self.text_of(tree), self.node_span(tree))

    def literal(self, tree: Tree[Token]) -> Value | None:
        """The tree node for a literal, or ``None`` when it is an expression."""
        if tree.data == "unary_op":
            return self.negative_number(tree)
        if tree.data != "expr_term":
            return None
        kids = _children(tree)
        if len(kids) != 1 or not isinstance(kids[0], Tree):
            return None
        inner = kids[0]
        span = self.node_span(inner)
        kind = inner.data
        if kind in ("int_lit", "float_lit"):
            written = str(_name_token(inner))
            number = _number(written)
            if number is None:
                return None
            if (underflowed := underflow(number, written, span)) is not None:
                self.diagnostics.append(underflowed)
            return Scalar(number, span)
        if kind == "literal_value":
            return Scalar(_KEYWORD_VALUES[str(_name_token(inner))], span)
        if kind == "string":
            return Scalar(self.string_value(inner, template=True), span, quoted=True)
        if kind in ("heredoc_template", "heredoc_template_trim"):
            return Scalar(_heredoc_text(_name_token(inner)), span)
        if kind == "tuple":
            return ListNode(tuple(self.value(item) for item in _subtrees(inner)), span)
        if kind == "object":
            return self.mapping(inner, span)
        return None

    def negative_number(self, tree: Tree[Token]) -> Scalar | None:
        operator, operand = _children(tree)
        if not isinstance(operator, Token) or operator.type != "MINUS":
            return None
        if not isinstance(operand, Tree) or operand.data == "unary_op":
            return None  # `--1` stays an expression, as written
        inner = self.literal(operand)
        if not isinstance(inner, Scalar) or isinstance(inner.value, bool):
            return None
        if not isinstance(inner.value, int | float):
            return None
        return Scalar(-inner.value, self.node_span(tree))

    def mapping(self, tree: Tree[Token], span: Span) -> MapNode | None:
        entries: list[Entry] = []
        seen: dict[str, Entry] = {}
        for elem in _subtrees(tree):
            key_tree, value_tree = _subtrees(elem)
            key = self.object_key(key_tree)
            if key is None:
                return None  # a computed key: the whole object is an expression
            entry = Entry(key, self.node_span(key_tree), self.value(value_tree))
            first = seen.get(key)
            if first is not None:
                self.report(
                    "OS006",
                    f"key `{key}` appears twice in this object",
                    entry.key_span,
                    related=[Related(first.key_span, "first set here")],
                    suggestion="remove one of them",
                )
                continue
            seen[key] = entry
            entries.append(entry)
        return MapNode(tuple(entries), span)

    def object_key(self, tree: Tree[Token]) -> str | None:
        (node,) = _subtrees(tree)
        if node.data == "keyword":
            return str(_name_token(node))
        kids = _children(node) if node.data == "expr_term" else []
        if len(kids) != 1 or not isinstance(kids[0], Tree):
            return None
        inner = kids[0]
        if inner.data in ("identifier", "literal_value", "int_lit"):
            return str(_name_token(inner))
        if inner.data == "string" and all(
            isinstance(part.children[0], Token) for part in _subtrees(inner)
        ):
            return self.string_value(inner, template=False)
        return None

    def string_value(self, tree: Tree[Token], *, template: bool) -> str:
        """A quoted string's value: escapes decoded, template sequences as written.

        With ``template`` the result is template text: a ``${`` or ``%{`` that
        came from an escape is written ``$${`` / ``%%{`` so that the expression
        stage does not mistake it for interpolation.
        """
        out: list[str] = []
        for part in _subtrees(tree):
            inner = part.children[0]
            if isinstance(inner, Tree):
                out.append(self.text_of(inner))
            elif inner.type == "STRING_CHARS":
                decoded = _unescape(inner.value)
                if template:
                    decoded = decoded.replace("${", "$${").replace("%{", "%%{")
                out.append(decoded)
            else:  # ESCAPED_INTERPOLATION / ESCAPED_DIRECTIVE: `$${` or `%%{`
                out.append(inner.value if template else inner.value[1:])
        return "".join(out)


_KEYWORD_VALUES: dict[str, bool | None] = {"true": True, "false": False, "null": None}


def _first_invalid_name_character(name: str) -> int | None:
    """Where ``name`` stops being a UAX #31 identifier (with `-` allowed), if it does.

    ``str.isidentifier`` is Python's identifier rule: XID_Start or `_`, then
    XID_Continue, which is UAX #31's (the XID sets are ID_Start and ID_Continue
    made stable under NFKC, so they differ only in a handful of compatibility
    characters).
    """
    if not name[0].isidentifier():
        return 0
    for index, char in enumerate(name[1:], start=1):
        if char != "-" and not ("a" + char).isidentifier():
            return index
    return None


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None  # e.g. `-1-2.5`, which the grammar lexes as one token


def _name_token(tree: Tree[Token]) -> Token:
    token = tree.children[0]
    assert isinstance(token, Token), tree
    return token


def _is_paren(tree: Tree[Token]) -> bool:
    first = tree.children[0] if tree.children else None
    return isinstance(first, Token) and first.type == "LPAR"


def _block_labels(block: Tree[Token]) -> list[Tree[Token]]:
    """The block type followed by its labels."""
    out: list[Tree[Token]] = []
    for child in block.children:
        if isinstance(child, Token):
            break
        if isinstance(child, Tree) and child.data in _LABEL_KINDS:
            out.append(child)
    return out


def _block_body(block: Tree[Token]) -> tuple[Token, Tree[Token], Token]:
    tokens = [c for c in block.children if isinstance(c, Token)]
    body = next(c for c in block.children if isinstance(c, Tree) and c.data == "body")
    return tokens[0], body, tokens[-1]


def _too_deep(span: Span) -> Diagnostic:
    return error(
        "OS007",
        f"nesting is deeper than {MAX_NESTING} levels",
        span,
        suggestion="flatten the structure",
    )
