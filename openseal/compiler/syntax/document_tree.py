"""The format-neutral document tree both loaders produce.

HCL and YAML files load into the same node types, and every node carries the
:class:`~openseal.compiler.syntax.spans.Span` it came from, so any later stage can point
a diagnostic at the exact block, label, attribute, list item or scalar.

Conventions shared by both loaders:

* A string stays a :class:`Scalar` even when it contains ``${...}``
  interpolation; ``$${`` is kept as written (it is the template escape for a
  literal ``${``). Templates are parsed by the expression stage.
* An HCL expression that is not a literal (a reference, an operation, a call,
  a conditional) is an :class:`Expr` holding its exact source text.
* YAML has no blocks: a YAML file is a :class:`Body` of attributes whose
  values are maps and lists. The definition decoder reads nested maps the way
  it reads labelled blocks, so both syntaxes describe the same model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from openseal.compiler.syntax.spans import Span

ScalarValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Scalar:
    value: ScalarValue
    span: Span
    #: a string written between quotes: its text starts a column after ``span``
    quoted: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class Expr:
    """A non-literal HCL expression, kept as its source text."""

    source: str
    span: Span


@dataclass(frozen=True, slots=True)
class ListNode:
    items: tuple[Value, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Entry:
    key: str
    key_span: Span
    value: Value


@dataclass(frozen=True, slots=True)
class MapNode:
    entries: tuple[Entry, ...]
    span: Span

    def get(self, key: str) -> Entry | None:
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None


Value = Scalar | Expr | ListNode | MapNode


@dataclass(frozen=True, slots=True)
class Label:
    value: str
    span: Span


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    name_span: Span
    value: Value
    span: Span


@dataclass(frozen=True, slots=True)
class Block:
    type: str
    type_span: Span
    labels: tuple[Label, ...]
    body: Body
    span: Span


@dataclass(frozen=True, slots=True)
class Body:
    attributes: tuple[Attribute, ...]
    blocks: tuple[Block, ...]
    span: Span

    def items(self) -> Iterator[Attribute | Block]:
        """Attributes and blocks in source order."""
        merged: list[Attribute | Block] = [*self.attributes, *self.blocks]
        merged.sort(key=lambda item: (item.span.line, item.span.column))
        return iter(merged)


Syntax = Literal["hcl", "yaml"]


@dataclass(frozen=True, slots=True)
class Document:
    """One loaded file."""

    file: str
    syntax: Syntax
    body: Body
    text: str
