"""A compiled definition: its JSON document, canonical bytes and version id.

Kept apart from :mod:`openseal.compiler.output.emit` so that reading compiled
documents (from the compile cache, a bundle or the store) does not import what
producing them needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from openseal.compiler.syntax.spans import Span

Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CompiledDocument:
    """One compiled definition: its JSON document, canonical bytes and version id.

    Only the canonical bytes are held; :attr:`document` is read back from them when first
    asked for. A large project's documents as dicts take several times the memory of their
    bytes, and most commands (``validate``, writing a bundle) never read them.
    """

    kind: str
    name: str
    #: RFC 8785 canonical bytes of :attr:`document`
    canonical: bytes
    #: ``sha256:<hex>`` of ``canonical``: the version id
    digest: str
    #: where the definition is written (not part of the document)
    span: Span
    _document: Document | None = field(default=None, compare=False, repr=False)

    @property
    def document(self) -> Document:
        """The JSON document, as it reads back from ``canonical`` (no spans)."""
        document = self._document
        if document is None:
            document = json.loads(self.canonical)
            object.__setattr__(self, "_document", document)
        return document

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.name}"
