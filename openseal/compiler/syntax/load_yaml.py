"""Load a YAML definition file into the spanned, format-neutral document tree.

A YAML file is a :class:`~openseal.compiler.syntax.document_tree.Body` whose attributes are the
entries of its top-level mapping; their values are :class:`MapNode`,
:class:`ListNode` and :class:`Scalar` (YAML never produces ``Expr``). Several
documents in one stream (``---``) are concatenated into one body.

How YAML is read, and why:

* **Safe composition only.** PyYAML's *compose* step builds a node graph that
  keeps every start and end mark; we convert those nodes ourselves, so no
  Python object is ever constructed from a tag and no position is lost. The C
  loader (libyaml) is used when PyYAML was built with it, else the pure-Python
  one.
* **Core-schema scalars, not YAML 1.1.** A plain scalar is ``null`` for empty,
  ``~`` or ``null``/``Null``/``NULL``; a bool only for ``true``/``false`` in
  lower, title or upper case; an int for decimal, ``0o`` octal or ``0x`` hex
  digits; a float for decimal fractions and exponents, and for ``.inf``,
  ``-.inf`` and ``.nan`` (in lower, title or upper case). Everything else is a
  string: ``on``, ``off``, ``yes``, ``no``, ``y``, ``n``, dates such as
  ``2024-01-01``, ``1_000``. Quoted and block scalars are always strings.
  A number that overflows (``1e400``, an integer of thousands of digits) is
  infinite, as in HCL; folding refuses it, ``.nan`` and integers JSON cannot
  carry exactly, with ``OS104`` (see :mod:`openseal.compiler.syntax.fold`).
* **Keys** must be scalars and are kept as written (``1: x`` has the key
  ``"1"``). A duplicate key is an ``OS006`` error pointing at the first one.
* **Tags.** Only ``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``,
  ``!!map`` and ``!!seq`` are accepted; any other tag is refused with
  ``OS008``. A scalar that does not match its explicit tag (``!!int abc``) is
  ``OS104``.
* **Spans** come from PyYAML's marks (0-based) made 1-based; a node's span
  includes its anchor or tag (``&a {x: 1}``). A block mapping or list ends
  where its last value ends, not at the next token after trailing comments.
* **Anchors and aliases** resolve. An aliased value keeps the spans of the
  anchored node (the place where the value is actually written); the alias
  site itself is not recorded by PyYAML's composer. Aliases may expand to at
  most :data:`MAX_ALIAS_EXPANSION` nodes in total (a "billion laughs" file is
  refused with ``OS008`` without being expanded); a recursive alias is
  ``OS008``.
* **Merge keys** (plain ``<<``) are supported: ``<<: *base`` or
  ``<<: [*a, *b]`` copies the entries of the merged mappings that the mapping
  does not set itself, earlier sources winning, at the position of ``<<``.
  Merged entries keep the spans of the mapping they came from.
* **Nesting** deeper than :data:`MAX_NESTING_DEPTH` collections (counting
  through aliases) is ``OS007``, so no later stage can hit Python's recursion
  limit. libyaml stops at 1,000 levels on its own; that is ``OS007`` too, at
  the place it stopped.
* **Errors never raise.** Syntax errors are ``OS005`` at PyYAML's problem
  mark. When any error is reported the document is ``None``; otherwise the
  caller gets the document and an empty list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import yaml

from openseal.compiler.diagnostics import Diagnostic, DiagnosticBag, Related, error
from openseal.compiler.syntax.document_tree import (
    Attribute,
    Body,
    Document,
    Entry,
    ListNode,
    MapNode,
    Scalar,
    ScalarValue,
    Value,
)
from openseal.compiler.syntax.file_text import read_source
from openseal.compiler.syntax.fold import underflow
from openseal.compiler.syntax.gc_pause import gc_paused
from openseal.compiler.syntax.spans import Span

__all__ = ["MAX_ALIAS_EXPANSION", "MAX_NESTING_DEPTH", "load_yaml", "load_yaml_file"]

#: Collections nested deeper than this are refused (OS007).
MAX_NESTING_DEPTH: Final = 128
#: Total nodes that aliases may add by re-use before the file is refused (OS008).
MAX_ALIAS_EXPANSION: Final = 100_000

_CORE = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_CORE + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = _CORE + "map", _CORE + "seq"
#: Our resolver gives untagged plain scalars this private tag, so "written
#: without a tag" stays distinguishable from an explicit ``!!str``/``!!bool``.
_PLAIN = "tag:openseal,2024:plain"
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL})
_MERGE_KEY = "<<"

_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_DECIMAL = re.compile(r"[-+]?[0-9]+")
_OCTAL = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_RE = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN_RE = re.compile(r"\.(?:nan|NaN|NAN)")


class _Mark(Protocol):
    """The part of PyYAML's (and libyaml's) marks we use; both are 0-based."""

    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...


class _CoreResolver:
    """Replaces PyYAML's YAML 1.1 implicit resolution; scalars are typed by us."""

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP


_C_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)


class _PyLoader(_CoreResolver, yaml.SafeLoader):
    pass


@dataclass(frozen=True)
class _Backend:
    loader: type[Any]
    #: libyaml reports reader errors as UTF-8 byte offsets, PyYAML as characters.
    byte_offsets: bool
    #: The pure-Python composer recurses; its nesting is checked before composing.
    prescan_depth: bool


def _default_backend() -> _Backend:
    if _C_LOADER is not None:
        loader = type("_CLoader", (_CoreResolver, _C_LOADER), {})
        return _Backend(loader, byte_offsets=True, prescan_depth=False)
    return _Backend(_PyLoader, byte_offsets=False, prescan_depth=True)


_BACKEND = _default_backend()
_PY_BACKEND = _Backend(_PyLoader, byte_offsets=False, prescan_depth=True)


class _Abort(Exception):
    """Stops loading after an error that leaves nothing sensible to convert."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def load_yaml(text: str, file: str) -> tuple[Document | None, list[Diagnostic]]:
    """Load YAML ``text`` (the contents of ``file``) into a :class:`Document`.

    Returns ``(document, [])`` on success and ``(None, diagnostics)`` when any
    error was found; it never raises for bad input.

    >>> doc, diags = load_yaml("agent:\\n  writer:\\n    model: small\\n", "a.yaml")
    >>> [a.name for a in doc.body.attributes], diags
    (['agent'], [])
    """
    return _load(text, file, _BACKEND)


def load_yaml_file(
    path: Path, display_name: str | None = None
) -> tuple[Document | None, list[Diagnostic]]:
    """Read ``path`` (see :func:`~openseal.compiler.syntax.file_text.read_source`) and load it."""
    source, diagnostics = read_source(path, display_name)
    if source is None:
        return None, diagnostics
    return load_yaml(source.text, source.file)


def _load(text: str, file: str, backend: _Backend) -> tuple[Document | None, list[Diagnostic]]:
    bag = DiagnosticBag()
    #: values refused where they are written; the document still loads, like HCL's
    values = DiagnosticBag()
    try:
        with gc_paused():
            attributes = _load_attributes(text, file, backend, bag, values)
    except _Abort as abort:
        bag.add(abort.diagnostic)
    except yaml.YAMLError as exc:
        bag.add(_yaml_error(exc, text, file, backend))
    except UnicodeEncodeError as exc:
        bag.add(_lone_surrogate(exc, text, file))
    except RecursionError:
        # Only reachable if a composer recursed despite the depth checks.
        bag.error("OS007", "YAML nesting is too deep to load", Span.whole_file(file))
    if bag.has_errors:
        return None, bag.items
    body = Body(tuple(attributes), (), _text_span(text, file))
    return Document(file, "yaml", body, text), values.items


def _load_attributes(
    text: str, file: str, backend: _Backend, bag: DiagnosticBag, values: DiagnosticBag
) -> list[Attribute]:
    if backend.prescan_depth:
        _check_event_depth(text, file, backend)
    attributes: list[Attribute] = []
    first_seen: dict[str, Span] = {}
    converter = _Converter(file, bag, values)
    for root in _compose_documents(text, backend):
        for entry in _document_entries(root, file, converter, bag):
            first = first_seen.get(entry.key)
            if first is not None:
                bag.add(_duplicate(entry.key, entry.key_span, first))
                continue
            first_seen[entry.key] = entry.key_span
            attributes.append(Attribute(entry.key, entry.key_span, entry.value, _entry_span(entry)))
    return attributes


def _compose_documents(text: str, backend: _Backend) -> Iterator[yaml.Node]:
    loader = backend.loader(text)
    try:
        while loader.check_node():
            yield loader.get_node()
    finally:
        loader.dispose()


def _document_entries(
    root: yaml.Node, file: str, converter: _Converter, bag: DiagnosticBag
) -> tuple[Entry, ...]:
    if isinstance(root, yaml.ScalarNode) and root.tag == _PLAIN and root.value in _NULLS:
        return ()  # an empty document, or one holding only comments
    if not isinstance(root, yaml.MappingNode):
        what = "a list" if isinstance(root, yaml.SequenceNode) else "a single value"
        bag.error(
            "OS103",
            f"a definition file must be a mapping of kinds (`workflow:`, `skill:`, …), not {what}",
            _node_span(root, file),
        )
        return ()
    value = converter.convert(root)
    return value.entries if isinstance(value, MapNode) else ()


@dataclass(frozen=True, slots=True)
class _Converted:
    value: Value
    #: Nodes in the fully expanded value (aliases counted every time they are used).
    size: int
    #: Collections nested inside and including this value (0 for a scalar).
    height: int


@dataclass(slots=True)
class _Frame:
    """One collection being converted on the explicit stack."""

    node: yaml.CollectionNode
    depth: int
    children: list[yaml.Node]
    done: list[_Converted] = field(default_factory=list)


class _Converter:
    """Turns composed YAML nodes into tree values without recursion.

    Results are memoised per node, so an aliased node is converted once and
    shared; its expanded size still counts against the alias budget each time
    it is used.
    """

    def __init__(self, file: str, bag: DiagnosticBag, values: DiagnosticBag) -> None:
        self.file = file
        self.bag = bag
        self.values = values
        self.memo: dict[int, _Converted] = {}
        self.in_progress: set[int] = set()
        self.alias_expansion = 0

    def convert(self, root: yaml.Node) -> Value:
        """Convert one document's root. Memo keys are node ids, valid only while
        that document's nodes are alive, so each document starts afresh (anchors
        do not cross documents); the alias budget is shared by the whole file."""
        self.memo = {}
        first = self._visit(root, 1)
        if isinstance(first, _Converted):
            return first.value
        stack = [first]
        while True:
            frame = stack[-1]
            if len(frame.done) < len(frame.children):
                child = self._visit(frame.children[len(frame.done)], frame.depth + 1)
                if isinstance(child, _Frame):
                    stack.append(child)
                else:
                    frame.done.append(child)
                continue
            stack.pop()
            finished = self._finish(frame)
            if not stack:
                return finished.value
            stack[-1].done.append(finished)

    def _visit(self, node: yaml.Node, depth: int) -> _Converted | _Frame:
        """Convert a scalar or a reused node at once; start a frame for a new collection."""
        key = id(node)
        reused = self.memo.get(key)
        if reused is not None:
            self._count_reuse(node, reused, depth)
            return reused
        if key in self.in_progress:
            raise _Abort(error("OS008", "recursive YAML alias", _node_span(node, self.file)))
        if isinstance(node, yaml.ScalarNode):
            converted = _Converted(self._scalar(node), 1, 0)
            self.memo[key] = converted
            return converted
        if depth > MAX_NESTING_DEPTH:
            raise _Abort(_too_deep(_node_span(node, self.file)))
        assert isinstance(node, yaml.CollectionNode)
        self.in_progress.add(key)
        if isinstance(node, yaml.MappingNode):
            children = [value for _, value in node.value]
        else:
            children = list(node.value)
        return _Frame(node, depth, children)

    def _count_reuse(self, node: yaml.Node, reused: _Converted, depth: int) -> None:
        self.alias_expansion += reused.size
        if self.alias_expansion > MAX_ALIAS_EXPANSION:
            raise _Abort(
                error(
                    "OS008",
                    f"YAML aliases expand to more than {MAX_ALIAS_EXPANSION:,} nodes",
                    _node_span(node, self.file),
                    suggestion="write the repeated values out, or reuse fewer large anchors",
                )
            )
        if depth - 1 + reused.height > MAX_NESTING_DEPTH:
            raise _Abort(_too_deep(_node_span(node, self.file)))

    def _finish(self, frame: _Frame) -> _Converted:
        node = frame.node
        self.in_progress.discard(id(node))
        size = 1 + sum(c.size for c in frame.done)
        height = 1 + max((c.height for c in frame.done), default=0)
        if isinstance(node, yaml.MappingNode):
            self._check_tag(node, _MAP)
            items = [(k, c.value) for (k, _), c in zip(node.value, frame.done, strict=True)]
            value: Value = self._mapping(node, items)
        else:
            self._check_tag(node, _SEQ)
            span = self._collection_span(node, [c.value for c in frame.done])
            value = ListNode(tuple(c.value for c in frame.done), span)
        converted = _Converted(value, size, height)
        self.memo[id(node)] = converted
        return converted

    def _mapping(self, node: yaml.MappingNode, items: list[tuple[yaml.Node, Value]]) -> MapNode:
        own: dict[str, Span] = {}
        keyed: list[tuple[Entry, bool]] = []
        for key_node, value in items:
            key = self._key(key_node)
            if key is None:
                continue
            key_span = _node_span(key_node, self.file)
            first = own.get(key)
            if first is not None:
                self.bag.add(_duplicate(key, key_span, first))
                continue
            own[key] = key_span
            # Only a plain `<<` merges; a quoted one is an ordinary key.
            is_merge = key == _MERGE_KEY and key_node.tag == _PLAIN
            keyed.append((Entry(key, key_span, value), is_merge))
        entries: list[Entry] = []
        merged: set[str] = set()
        for entry, is_merge in keyed:
            if not is_merge:
                entries.append(entry)
                continue
            for inherited in self._merge_sources(entry.value):
                if inherited.key not in own and inherited.key not in merged:
                    merged.add(inherited.key)
                    entries.append(inherited)
        values = [entry.value for entry in entries]
        return MapNode(tuple(entries), self._collection_span(node, values))

    def _merge_sources(self, value: Value) -> Iterator[Entry]:
        sources = value.items if isinstance(value, ListNode) else (value,)
        for source in sources:
            if not isinstance(source, MapNode):
                self.bag.error(
                    "OS008",
                    "a merge key `<<` takes a mapping or a list of mappings",
                    source.span,
                )
                continue
            yield from source.entries

    def _key(self, node: yaml.Node) -> str | None:
        if not isinstance(node, yaml.ScalarNode):
            kind = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
            self.bag.error(
                "OS103",
                f"a mapping key must be a plain name, not a {kind}",
                _node_span(node, self.file),
            )
            return None
        if node.tag not in (_PLAIN, *_SCALAR_TAGS):
            self._refuse_tag(node)
            return None
        return str(node.value)

    def _scalar(self, node: yaml.ScalarNode) -> Scalar:
        span = _node_span(node, self.file)
        text = str(node.value)
        if node.tag == _PLAIN:
            return self._number_checked(Scalar(_resolve_plain(text), span), text)
        if node.tag == _STR:
            return Scalar(text, span, quoted=node.style in ('"', "'"))
        if node.tag not in _SCALAR_TAGS:
            self._refuse_tag(node)
            return Scalar(None, span)
        value = _resolve_tagged(node.tag, text)
        if value is _INVALID:
            self.bag.error("OS104", f"`{text}` is not a valid {_short_tag(node.tag)} value", span)
            return Scalar(None, span)
        assert not isinstance(value, _Invalid)
        return self._number_checked(Scalar(value, span), text)

    def _number_checked(self, scalar: Scalar, text: str) -> Scalar:
        if (underflowed := underflow(scalar.value, text, scalar.span)) is not None:
            self.values.add(underflowed)
        return scalar

    def _check_tag(self, node: yaml.CollectionNode, expected: str) -> None:
        if node.tag != expected:
            self._refuse_tag(node)

    def _refuse_tag(self, node: yaml.Node) -> None:
        tag = _short_tag(node.tag)
        if node.tag in _SCALAR_TAGS or node.tag in (_MAP, _SEQ):
            message = f"the tag {tag} cannot be used on a {_kind_name(node)}"
        else:
            message = f"unsupported YAML tag {tag}; only plain YAML values are allowed"
        self.bag.error(
            "OS008",
            message,
            _node_span(node, self.file),
            suggestion="remove the tag; definitions use strings, numbers, booleans, lists, maps",
        )

    def _collection_span(self, node: yaml.CollectionNode, values: list[Value]) -> Span:
        span = _node_span(node, self.file)
        if node.flow_style or not values:
            return span
        # A block collection's end mark is the next token, often lines later
        # after comments; end it where its last value ends instead.
        last = max(values, key=lambda v: (v.span.end_line, v.span.end_column)).span
        if (last.end_line, last.end_column) <= (span.line, span.column):
            return span  # only aliased values, written earlier in the file
        return Span(self.file, span.line, span.column, last.end_line, last.end_column)


class _Invalid:
    pass


_INVALID: Final = _Invalid()


def _resolve_plain(text: str) -> ScalarValue:
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    number = _number(text, allow_int=True)
    return text if isinstance(number, _Invalid) else number


def _resolve_tagged(tag: str, text: str) -> ScalarValue | _Invalid:
    if tag == _NULL:
        return None if text in _NULLS else _INVALID
    if tag == _BOOL:
        return _BOOLS.get(text, _INVALID)
    if tag == _INT:
        number = _number(text, allow_int=True)
        return number if isinstance(number, int) else _INVALID
    number = _number(text, allow_int=False)
    return number if isinstance(number, float) else _INVALID


def _number(text: str, *, allow_int: bool) -> int | float | _Invalid:
    """A core-schema number, or ``_INVALID``; ints become floats unless ``allow_int``."""
    try:
        if _DECIMAL.fullmatch(text):
            return int(text, 10) if allow_int else float(text)
        if _OCTAL.fullmatch(text) or _HEX.fullmatch(text):
            number = int(text[2:], 8 if text[1] == "o" else 16)
            return number if allow_int else float(number)
        if _FLOAT_RE.fullmatch(text) or _INF_RE.fullmatch(text):
            return float(text.replace(".", "", 1) if _INF_RE.fullmatch(text) else text)
        if _NAN_RE.fullmatch(text):
            return math.nan
    except (ValueError, OverflowError):
        # Python refuses ints with thousands of digits (or as floats): infinite, as in HCL.
        return -math.inf if text.startswith("-") else math.inf
    return _INVALID


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


def _kind_name(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "list" if isinstance(node, yaml.SequenceNode) else "scalar"


def _node_span(node: yaml.Node, file: str) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(file, start.line + 1, start.column + 1, end.line + 1, end.column + 1)


def _entry_span(entry: Entry) -> Span:
    key, value = entry.key_span, entry.value.span
    if (value.line, value.column) < (key.line, key.column):
        return key  # an aliased value written before its key
    return Span(key.file, key.line, key.column, value.end_line, value.end_column)


def _text_span(text: str, file: str) -> Span:
    lines = text.split("\n")
    return Span(file, 1, 1, len(lines), len(lines[-1]) + 1)


def _duplicate(key: str, span: Span, first: Span) -> Diagnostic:
    return error(
        "OS006",
        f"duplicate key `{key}`",
        span,
        related=[Related(first, f"`{key}` first set here")],
        suggestion="remove or rename one of them; YAML would silently keep only the last",
    )


def _too_deep(span: Span) -> Diagnostic:
    return error(
        "OS007",
        f"YAML nesting is deeper than {MAX_NESTING_DEPTH} levels",
        span,
        suggestion="flatten the structure",
    )


def _check_event_depth(text: str, file: str, backend: _Backend) -> None:
    """Refuse deep nesting from the event stream, which PyYAML produces without recursion."""
    depth = 0
    for event in yaml.parse(text, Loader=backend.loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING_DEPTH:
                mark = event.start_mark
                span = _mark_span(mark, file) if mark is not None else Span.whole_file(file)
                raise _Abort(_too_deep(span))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _yaml_error(exc: yaml.YAMLError, text: str, file: str, backend: _Backend) -> Diagnostic:
    if isinstance(exc, yaml.reader.ReaderError):
        return _reader_error(exc, text, file, backend)
    if not isinstance(exc, yaml.MarkedYAMLError):
        return error("OS005", _one_line(str(exc)), Span.whole_file(file))
    problem = _one_line(exc.problem or exc.context or "invalid YAML")
    mark = exc.problem_mark or exc.context_mark
    span = _mark_span(mark, file) if mark is not None else Span.whole_file(file)
    if "maximum nesting depth" in problem:
        return _too_deep(span)  # libyaml's own nesting limit
    related: list[Related] = []
    if exc.context and exc.problem:
        context = _one_line(exc.context)
        context_span = _mark_span(exc.context_mark, file) if exc.context_mark else None
        if context_span is not None and context_span != span:
            related.append(Related(context_span, context))
        else:
            problem = f"{problem} ({context})"
    suggestion = None
    if mark is not None and _char_at(text, mark.line, mark.column) == "\t":
        suggestion = "indent YAML with spaces; tabs are not allowed"
    elif mark is not None and exc.context and "flow" in exc.context:
        suggestion = _unquoted_interpolation(text, mark.line, mark.column)
    return error("OS005", problem, span, related=related, suggestion=suggestion)


def _unquoted_interpolation(text: str, line: int, column: int) -> str | None:
    """A hint when a flow collection (``{...}``, ``[...]``) holds an unquoted ``${...}``.

    YAML reads the ``{`` of ``${`` as the start of a nested mapping there, so
    ``{value: ${x}}`` is a syntax error; ``{value: "${x}"}`` is the expression ``x``.
    """
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return None
    row = lines[line]
    start = next((i for i in (column - 1, column) if row.startswith("${", max(i, 0))), None)
    if start is None or start < 0:
        return None
    depth, end = 0, len(row)
    for index in range(start + 1, len(row)):
        depth += {"{": 1, "}": -1}.get(row[index], 0)
        if depth == 0:
            end = index + 1
            break
    written = row[start:end]
    return (
        f'quote it: `"{written}"`; inside `{{...}}` or `[...]` YAML needs a `${{...}}` in '
        "quotes, and a quoted string that is exactly one `${...}` is still that expression"
    )


def _reader_error(
    exc: yaml.reader.ReaderError, text: str, file: str, backend: _Backend
) -> Diagnostic:
    position = int(exc.position)
    if backend.byte_offsets:
        prefix = text.encode("utf-8", "surrogatepass")[:position]
        position = len(prefix.decode("utf-8", "ignore"))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    character = exc.character
    code = ord(character) if isinstance(character, str) else int(character)
    span = Span(file, line, column, line, column + 1)
    if 0xD800 <= code <= 0xDFFF:
        return _surrogate_diagnostic(code, span)
    reason = _one_line(str(exc.reason))
    return error("OS005", f"unacceptable character U+{code:04X}: {reason}", span)


def _lone_surrogate(exc: UnicodeEncodeError, text: str, file: str) -> Diagnostic:
    line = text.count("\n", 0, exc.start) + 1
    column = exc.start - (text.rfind("\n", 0, exc.start) + 1) + 1
    return _surrogate_diagnostic(ord(text[exc.start]), Span(file, line, column, line, column + 1))


def _surrogate_diagnostic(code: int, span: Span) -> Diagnostic:
    # Only reachable through load_yaml(text): decoded files cannot hold one.
    return error("OS002", f"text contains an unpaired surrogate U+{code:04X}", span)


def _mark_span(mark: _Mark, file: str) -> Span:
    return Span(file, mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 2)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    if 0 <= line < len(lines) and 0 <= column < len(lines[line]):
        return lines[line][column]
    return ""


def _one_line(message: str) -> str:
    return " ".join(message.split())
