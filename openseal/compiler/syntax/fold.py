"""Fold a spanned document tree into plain data for model validation.

Blocks become nested mappings keyed by their labels (``state "draft" {..}`` is
``{"state": {"draft": {..}}}``), which is exactly how the YAML form is written,
so both syntaxes reach the model as the same data. Strings keep their span by
being :class:`SpannedStr`; HCL expressions become :class:`ExprSource`. Every
path into the data is recorded with its span so a validation error can point
at the key or value it is about.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from openseal.compiler.diagnostics import Diagnostic, Related, error
from openseal.compiler.syntax.document_tree import (
    Block,
    Body,
    Entry,
    Expr,
    ListNode,
    MapNode,
    Scalar,
    Value,
)
from openseal.compiler.syntax.spans import Span

Path = tuple[str | int, ...]

#: The largest integer JSON numbers (IEEE doubles) carry exactly: 2**53 - 1.
MAX_SAFE_INTEGER = 2**53 - 1


def number_problem(value: float, written: str = "") -> tuple[str, str] | None:
    """Why a number a compiled (canonical JSON) document cannot hold exactly is refused, and
    a hint; ``None`` when it can. With ``written``, the literal's text, a non-zero literal
    that underflows to 0 (``1e-400``) is refused too: it would silently mean nothing."""
    hint = "write a number within range, or quote it to mean the text"
    if isinstance(value, float) and math.isnan(value):
        return "NaN is not a number a definition can hold", (
            "write a number, or quote it to mean the text"
        )
    if isinstance(value, float) and math.isinf(value):
        return "this number is too large: it overflows a 64-bit float (about ±1.8e308)", hint
    if isinstance(value, float) and value == 0 and _nonzero_mantissa(written):
        return (
            f"the number {written} is too small: it underflows a 64-bit float to 0 "
            "(the smallest is about ±4.9e-324)",
            "write 0 if zero is meant, or a number within range; quote it to mean the text",
        )
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        return (
            f"the integer {value} is beyond ±{MAX_SAFE_INTEGER}, the largest a compiled "
            "definition holds exactly",
            "quote it to keep every digit, or write it as a float such as 1.5e19",
        )
    return None


def underflow(value: object, written: str, span: Span) -> Diagnostic | None:
    """``OS104`` for a number literal ``written`` that underflows to 0, else ``None``.

    The loaders call it where they still have the literal's text; every other
    number a document cannot hold is refused by :func:`fold`.
    """
    if not isinstance(value, float) or value != 0:
        return None
    problem = number_problem(value, written)
    return None if problem is None else error("OS104", problem[0], span, suggestion=problem[1])


def _nonzero_mantissa(written: str) -> bool:
    return any(c in "123456789" for c in written.lower().partition("e")[0])


class SpannedStr(str):
    """A string that remembers where it was written."""

    __slots__ = ("origin", "span")
    span: Span
    #: where the text itself starts (after an opening quote), for spans inside it
    origin: Span

    def __new__(cls, value: str, span: Span, origin: Span | None = None) -> SpannedStr:
        self = super().__new__(cls, value)
        self.span = span
        self.origin = span if origin is None else origin
        return self


@dataclass(frozen=True, slots=True)
class ExprSource:
    """An HCL expression that is not a literal, not yet parsed."""

    source: str
    span: Span


@dataclass
class Folded:
    """Plain data plus spans by path: ``keys`` where a key was written, ``values`` for values."""

    data: object
    values: dict[Path, Span] = field(default_factory=dict)
    keys: dict[Path, Span] = field(default_factory=dict)
    #: blocks dropped as duplicates (OS011): their path and the keys written in them, so the
    #: decoder can still report a misspelt key inside one (OS101)
    dropped: list[tuple[Path, dict[str, Span]]] = field(default_factory=list)

    def span_for(self, path: Path, *, prefer_key: bool = False) -> Span | None:
        """The span of ``path`` or of its nearest recorded ancestor."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            first, second = (self.keys, self.values) if prefer_key else (self.values, self.keys)
            if prefix in first:
                return first[prefix]
            if prefix in second:
                return second[prefix]
        return None


class LabelCount(Protocol):
    """At least ``least`` labels, at most ``most`` (``None``: any number)."""

    @property
    def least(self) -> int: ...
    @property
    def most(self) -> int | None: ...


#: The labels a block of a type takes where it is written (data path of its parent), if known.
LabelRule = Callable[[Path, str], LabelCount | None]


class _Folder:
    def __init__(self, labels: LabelRule | None) -> None:
        self.folded = Folded(None)
        self.diagnostics: list[Diagnostic] = []
        self.labels = labels

    def body(self, body: Body, path: Path) -> dict[str, object]:
        self.folded.values[path] = body.span
        out: dict[str, object] = {}
        repeated = _repeated_blocks(body)
        for item in body.items():
            if isinstance(item, Block):
                block = self._fit_labels(item, path)
                if block is None:
                    continue  # reported: a required label is missing
                if block.type in repeated:
                    self._list_item(block, out, path)
                else:
                    self._block(block, out, path)
            else:
                self._put(
                    out, path, item.name, item.name_span, self.value(item.value, (*path, item.name))
                )
        return out

    def _block(self, block: Block, out: dict[str, object], path: Path) -> None:
        # Walk (or create) one nested mapping per label; the block body goes at the leaf.
        target = out
        where: Path = path
        key, key_span = block.type, block.type_span
        for label in block.labels:
            existing = target.get(key)
            if existing is None:
                existing = {}
                self._put(target, where, key, key_span, existing)
                self.folded.values[(*where, key)] = block.span
            elif not isinstance(existing, dict) or (*where, key, "__leaf__") in self.folded.values:
                self._duplicate(block.type, key_span, (*where, key))
                return
            target, where = existing, (*where, key)
            key, key_span = label.value, label.span
        body_path = (*where, key)
        if key in target and not block.labels:
            self._repeat(target, key, block, body_path)
            return
        if key in target:
            self._duplicate(block.type, key_span, body_path)
            self.folded.dropped.append((body_path, _written(block.body)))
            return
        self._put(target, where, key, key_span, self.body(block.body, body_path))
        self.folded.values[body_path] = block.span
        self.folded.values[(*body_path, "__leaf__")] = block.span

    def _fit_labels(self, block: Block, path: Path) -> Block | None:
        """``block`` with the labels it may have, or ``None`` when a required one is missing.

        A missing or extra label is reported at the block, so it does not shift
        every key below it into a cascade of unrelated errors.
        """
        wanted = self.labels(path, block.type) if self.labels is not None else None
        if wanted is None:
            return block
        kind = block.type
        if len(block.labels) < wanted.least:
            what = "a definition is" if not path else "it is"
            self.diagnostics.append(
                error(
                    "OS111",
                    f'`{kind}` block has no name; {what} written `{kind} "name" {{ ... }}`',
                    block.type_span,
                    suggestion=f'name it: `{kind} "<name>" {{`',
                )
            )
            return None
        if wanted.most is not None and len(block.labels) > wanted.most:
            extra = block.labels[wanted.most :]
            listing = " ".join(f'"{label.value}"' for label in extra)
            first, last = extra[0].span, extra[-1].span
            span = Span(first.file, first.line, first.column, last.end_line, last.end_column)
            takes = "one label, its name" if wanted.most == 1 else f"{wanted.most} labels"
            self.diagnostics.append(
                error(
                    "OS111",
                    f"`{kind}` block takes {takes}; `{listing}` is one label too many"
                    if len(extra) == 1
                    else f"`{kind}` block takes {takes}; `{listing}` are too many",
                    span,
                    suggestion=f"remove `{listing}`",
                )
            )
            return replace(block, labels=block.labels[: wanted.most])
        return block

    def _list_item(self, block: Block, out: dict[str, object], path: Path) -> None:
        """One of several unlabelled blocks of one type: an item of the list they form.

        Known before the first of them is folded (:func:`_repeated_blocks`), so its
        spans are recorded where they belong and never moved; the result is what
        :meth:`_repeat` gives, without its scan over every span recorded so far.
        """
        key, list_path = block.type, (*path, block.type)
        items = out.get(key)
        if not isinstance(items, list):
            items = []
            self._put(out, path, key, block.type_span, items)
            self.folded.values[list_path] = block.span
            index = 0
        else:
            self.folded.values.setdefault((*list_path, "__repeated__"), block.span)
            index = len(items)
        items.append(self.body(block.body, (*list_path, index)))
        self.folded.values[(*list_path, index)] = block.span
        self.folded.keys[(*list_path, index)] = block.type_span
        if index == 0:
            self.folded.values[(*list_path, 0, "__leaf__")] = block.span

    def _repeat(self, target: dict[str, object], key: str, block: Block, path: Path) -> None:
        """Unlabelled blocks of one type written again form a list (``branch {..} branch {..}``)."""
        existing = target[key]
        if isinstance(existing, list) and (*path, "__repeated__") in self.folded.values:
            items = existing
        else:
            items = [existing]
            target[key] = items
            self._move(path, (*path, 0))
            self.folded.values[(*path, "__repeated__")] = block.span
        index = len(items)
        items.append(self.body(block.body, (*path, index)))
        self.folded.values[(*path, index)] = block.span
        self.folded.keys[(*path, index)] = block.type_span

    def _move(self, old: Path, new: Path) -> None:
        """Re-key recorded spans under ``old`` to sit under ``new``."""
        for table in (self.folded.values, self.folded.keys):
            moved = {new + k[len(old) :]: v for k, v in table.items() if k[: len(old)] == old}
            for k in [k for k in table if k[: len(old)] == old and k != old]:
                del table[k]
            table.update(moved)

    def _duplicate(self, kind: str, span: Span, path: Path) -> None:
        first = self.folded.keys.get(path)
        related = [Related(first, "first defined here")] if first else []
        name = ".".join(str(p) for p in path)
        self.diagnostics.append(
            error("OS011", f"duplicate {kind} block `{name}`", span, related=related)
        )

    def _put(self, out: dict[str, object], path: Path, key: str, span: Span, value: object) -> None:
        if key in out:
            self._duplicate_key(key, span, (*path, key))
            return
        out[key] = value
        self.folded.keys[(*path, key)] = span

    def _duplicate_key(self, key: str, span: Span, path: Path) -> None:
        first = self.folded.keys.get(path)
        related = [Related(first, "first defined here")] if first else []
        self.diagnostics.append(error("OS006", f"`{key}` is defined twice", span, related=related))

    def value(self, node: Value, path: Path) -> object:
        self.folded.values[path] = node.span
        if isinstance(node, Scalar):
            if isinstance(node.value, str):
                span = node.span
                origin = replace(span, column=span.column + 1) if node.quoted else span
                return SpannedStr(node.value, span, origin)
            if isinstance(node.value, int | float) and not isinstance(node.value, bool):
                self._check_number(node.value, node.span)
            return node.value
        if isinstance(node, Expr):
            return ExprSource(node.source, node.span)
        if isinstance(node, ListNode):
            return [self.value(item, (*path, i)) for i, item in enumerate(node.items)]
        return self._map(node, path)

    def _check_number(self, value: float, span: Span) -> None:
        """Refuse a number a compiled (canonical JSON) document cannot hold exactly."""
        problem = number_problem(value)
        if problem is not None:
            self.diagnostics.append(error("OS104", problem[0], span, suggestion=problem[1]))

    def _map(self, node: MapNode, path: Path) -> dict[str, object]:
        out: dict[str, object] = {}
        entry: Entry
        for entry in node.entries:
            self._put(
                out, path, entry.key, entry.key_span, self.value(entry.value, (*path, entry.key))
            )
        return out


def _written(body: Body) -> dict[str, Span]:
    """The keys written directly in ``body`` (attributes and block types) and where."""
    written: dict[str, Span] = {}
    for item in body.items():
        name, span = (
            (item.type, item.type_span) if isinstance(item, Block) else (item.name, item.name_span)
        )
        written.setdefault(name, span)
    return written


def _repeated_blocks(body: Body) -> frozenset[str]:
    """Block types written unlabelled more than once in ``body``, and nowhere else in it.

    A type that is also an attribute or a labelled block of the same body keeps
    the general path (:meth:`_Folder._repeat`), which reports or merges those.
    """
    unlabelled: dict[str, int] = {}
    other: set[str] = set()
    for item in body.items():
        if isinstance(item, Block) and not item.labels:
            unlabelled[item.type] = unlabelled.get(item.type, 0) + 1
        else:
            other.add(item.type if isinstance(item, Block) else item.name)
    return frozenset(t for t, count in unlabelled.items() if count > 1 and t not in other)


def fold(body: Body, labels: LabelRule | None = None) -> tuple[Folded, list[Diagnostic]]:
    """Fold a document body into plain data with spans, reporting duplicate blocks and keys.

    With ``labels`` (see :func:`openseal.compiler.definitions.labels.block_labels`) a block
    with a missing or extra label is reported (``OS111``) where it is written.
    """
    folder = _Folder(labels)
    folder.folded.data = folder.body(body, ())
    return folder.folded, folder.diagnostics
