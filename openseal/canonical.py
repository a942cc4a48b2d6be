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
        return rfc8785_bytes(document)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CompileError(f"value cannot be written as canonical JSON: {exc}") from exc


def canonical_json(document: Any) -> str:
    """RFC 8785 canonical JSON text: the stored form, byte-identical for equal documents."""
    return rfc8785_bytes(document).decode("utf-8")


def rfc8785_bytes(document: Any) -> bytes:
    """What ``rfc8785.dumps`` writes, raising what it raises, written by the standard
    library's encoder where the two agree (below): for the runtime's own hashes (objective
    requests, activity inputs), whose values are not a definition's."""
    try:
        return _fast_bytes(document if _unchanged(document) else _plain(document))
    except _NotPlain:
        return bytes(rfc8785.dumps(document))


# --------------------------------------------------------------------------- the fast path
#
# rfc8785 is pure Python and writes byte by byte; the standard library's JSON
# encoder is in C. For the values below the two write the same bytes, which
# tests/test_canonical.py checks property by property against rfc8785:
#
# * strings: both escape exactly `"`, `\\` and U+0000-U+001F, with the same
#   short forms (\b \f \n \r \t) and lowercase `\u00xx` for the rest, and
#   write everything else as UTF-8 (U+2028/2029 and U+007F included). A lone
#   surrogate cannot be encoded; that string goes to rfc8785, which refuses it.
# * keys: RFC 8785 sorts by UTF-16 code units, Python by code points; the two
#   orders agree while every key is within the Basic Multilingual Plane.
# * integers within ±(2**53-1) are written in decimal by both.
# * a float that is a whole number below 2**53 is written by RFC 8785 as that
#   integer, so it is handed to the encoder as an int; any other float between
#   1e-4 and 1e16 has the same shortest round-trip digits in both and no exponent.
#
# Anything else (other floats, big integers, non-string or astral keys, other
# types, subclasses) takes rfc8785's path, which decides and raises as before.

_SAFE_INT = 2**53 - 1
_BMP_MAX = "\uffff"
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


class _NotPlain(Exception):
    """The value holds something only rfc8785 may decide how to write."""


def _fast_bytes(value: Any) -> bytes:
    try:
        return _encode(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        raise _NotPlain from None


def _unchanged(value: Any) -> bool:
    """Whether ``value`` can be handed to the encoder as it is: it holds no float and nothing
    :func:`_plain` would change or refuse. Most documents the runtime hashes hold none, and
    one loop over them costs less than :func:`_plain`'s call per container and its copies."""
    pending = [value]
    while pending:
        current = pending.pop()
        kind = type(current)
        if kind is dict:
            for key in current:
                if type(key) is not str or (not key.isascii() and max(key) > _BMP_MAX):
                    return False
            items: Any = current.values()
        elif kind is list or kind is tuple:
            items = current
        elif kind is int:
            if not -_SAFE_INT <= current <= _SAFE_INT:
                return False
            continue
        elif kind is str or kind is bool or current is None:
            continue
        else:
            return False  # a float (or anything else): _plain decides
        # leaves are checked here rather than pushed: they are most of a document's values
        for item in items:
            leaf = type(item)
            if leaf is int:
                if not -_SAFE_INT <= item <= _SAFE_INT:
                    return False
            elif not (leaf is str or leaf is bool or item is None):
                pending.append(item)
    return True


def _plain(value: Any) -> Any:
    """``value`` with whole floats as ints; raises :class:`_NotPlain` when it needs rfc8785."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    # Strings, booleans and nulls are kept where they stand instead of being
    # passed to a call each: they are most of a document's values.
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str or (not key.isascii() and max(key) > _BMP_MAX):
                raise _NotPlain
            leaf = type(item)
            out[key] = item if leaf is str or leaf is bool or item is None else _plain(item)
        return out
    if kind is list or kind is tuple:
        return [
            item if type(item) is str or type(item) is bool or item is None else _plain(item)
            for item in value
        ]
    if kind is int:
        if -_SAFE_INT <= value <= _SAFE_INT:
            return value
        raise _NotPlain
    if kind is float:
        if value.is_integer():
            if abs(value) <= _SAFE_INT:
                return int(value)
        elif 1e-4 <= abs(value) < 1e16:
            return value
    raise _NotPlain


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
