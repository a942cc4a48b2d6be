"""A compiled definition: its JSON document, canonical bytes and version id.

Kept apart from :mod:`openseal.compiler.output.emit` so that reading compiled
documents (from the compile cache, a bundle or the store) does not import what
producing them needs.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from openseal.compiler.syntax.spans import Span

Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CompiledDocument:
    """One compiled definition: its JSON document, canonical bytes and version id.

    Only the canonical bytes are held, deflated against :attr:`dictionary` (by the emit stage,
    an earlier document of the same kind, whose frame and field names this one shares); the
    bytes and :attr:`document` are read back from them when asked for. A large project's
    documents as dicts take several times the memory of their bytes, their bytes several
    times that of the deflated bytes, and most commands (``validate``, writing a bundle)
    read neither. The digest is the canonical bytes', as always.
    """

    kind: str
    name: str
    #: RFC 8785 canonical bytes of :attr:`document`, deflated (raw, no header) against
    #: :attr:`dictionary`
    packed: bytes
    #: ``sha256:<hex>`` of :attr:`canonical`: the version id
    digest: str
    #: where the definition is written (not part of the document)
    span: Span
    #: the preset dictionary :attr:`packed` was deflated against (shared by many documents)
    dictionary: bytes = b""
    _document: Document | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        kind: str,
        name: str,
        canonical: bytes,
        digest: str,
        span: Span,
        dictionary: bytes = b"",
    ) -> CompiledDocument:
        """The document whose canonical bytes are ``canonical``, held deflated."""
        return cls(kind, name, pack(canonical, dictionary), digest, span, dictionary)

    @property
    def canonical(self) -> bytes:
        """RFC 8785 canonical bytes of :attr:`document`; ``digest`` is their sha256."""
        unpacker = zlib.decompressobj(-zlib.MAX_WBITS, zdict=self.dictionary)
        return unpacker.decompress(self.packed) + unpacker.flush()

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


def pack(data: bytes, dictionary: bytes = b"") -> bytes:
    """``data`` deflated against ``dictionary``: at the fastest level, which on documents
    deflates almost as well as the default and takes half the time."""
    packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=dictionary)
    return packer.compress(data) + packer.flush()
