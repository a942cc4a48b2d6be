"""A compiled definition: its JSON document, canonical bytes and version id.

Kept apart from :mod:`openseal.compiler.output.emit` so that reading compiled
documents (from the compile cache, a bundle or the store) does not import what
producing them needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openseal.compiler.syntax.spans import Span

Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CompiledDocument:
    """One compiled definition: its JSON document, canonical bytes and version id."""

    kind: str
    name: str
    #: the JSON document, as it reads back from ``canonical`` (no spans)
    document: Document
    #: RFC 8785 canonical bytes of ``document``
    canonical: bytes
    #: ``sha256:<hex>`` of ``canonical``: the version id
    digest: str
    #: where the definition is written (not part of the document)
    span: Span

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.name}"
