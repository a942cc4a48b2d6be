"""Canonical JSON (RFC 8785) and the digests that name compiled versions.

A compiled definition's version id is ``sha256:<hex>`` of its RFC 8785
canonical form: keys sorted by UTF-16 code units, no insignificant whitespace,
numbers in their shortest round-trip form (so ``10`` and ``10.0`` are the same
number, as HCL and YAML may disagree on which one they produce).

>>> digest_of({"b": 1, "a": 10.0}) == digest_of({"a": 10, "b": 1})
True
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

from openseal.errors import CompileError

DIGEST_PREFIX = "sha256:"


def canonical_bytes(document: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON-compatible value.

    Raises :class:`~openseal.errors.CompileError` for values JSON cannot carry
    exactly (NaN, infinities, integers beyond ±2**53-1), which a definition
    could otherwise smuggle in through a YAML or HCL literal.
    """
    try:
        return bytes(rfc8785.dumps(document))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CompileError(f"value cannot be written as canonical JSON: {exc}") from exc


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of raw bytes (used for documents and for source files)."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest_of(document: Any) -> str:
    """The version id of a JSON document: the sha256 of its canonical bytes."""
    return sha256_digest(canonical_bytes(document))


def normalise(document: Any) -> Any:
    """The document as it reads back from its canonical form.

    Integral floats become ints and tuples become lists, so two documents with
    one digest are also equal as Python values.
    """
    return json.loads(canonical_bytes(document))


def pretty(document: Any) -> str:
    """Deterministic, reviewable JSON text (sorted keys, two-space indent, final newline).

    It parses back to a value with the same canonical bytes as ``document``.
    """
    return json.dumps(normalise(document), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def is_digest(value: object) -> bool:
    if not isinstance(value, str) or not value.startswith(DIGEST_PREFIX):
        return False
    hexpart = value[len(DIGEST_PREFIX) :]
    return len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)
