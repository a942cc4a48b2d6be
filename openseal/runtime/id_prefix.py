"""Ids by handle or unique prefix: ``openseal runs show k7q9x2ad`` or ``... 0191f0``.

Every id openseal makes is 32 lowercase hex characters (:func:`openseal.runtime.clock.new_id`),
and ids sort by time, so ids made minutes apart share their first eight characters or more.
Every id therefore also has a **handle**: its last 40 bits (the random end of the id) written
in 8 characters of Crockford's base32 alphabet (``0-9a-z`` without ``i l o u``), e.g.
``k7q9x2ad`` — :func:`handle`. A handle is one-to-one with the id's last ten hex digits, so
it is found by the id itself, with no column of its own (docs/decisions/0019-handles.md has
the collision arithmetic).

A reference resolves, for its kind, as: a handle that ends exactly one id names that id; else
a reference of at least :data:`MIN_PREFIX` hex characters that starts exactly one id names
that id. Both matching different ids is ambiguous. Anything else is returned unchanged, so the
caller's own lookup reports "not found" (or finds the object by another name: a proposal
hash, an action key).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from openseal.errors import OpenSealError

if TYPE_CHECKING:
    from openseal.runtime.store import Store

MIN_PREFIX = 4
#: Crockford's base32 alphabet, lowercase: no ``i``, ``l``, ``o`` or ``u`` to misread
HANDLE_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
#: characters of a handle (5 bits each: the id's last 40 bits, its last ten hex digits)
HANDLE_LENGTH = 8
_SUFFIX_HEX = HANDLE_LENGTH * 5 // 4
#: what a person may type for a handle's character: Crockford's readings of look-alikes
_READINGS = str.maketrans({"i": "1", "l": "1", "o": "0"})
#: the fewest hex digits of a proposal hash a decision may name
MIN_HASH_PREFIX = 10
#: a proposal hash or a prefix of one, as a decision names it (``sha256:`` optional)
HASH_PREFIX = re.compile(rf"(sha256:)?[0-9a-fA-F]{{{MIN_HASH_PREFIX},64}}")
_HEX = frozenset("0123456789abcdef")


class AmbiguousId(OpenSealError):
    code = "ambiguous_id"


def handle(record_id: str) -> str:
    """The handle of an id: its last ten hex digits in :data:`HANDLE_LENGTH` base32 characters.

    >>> handle("01a24f1973f253bef751d1286c90d720")
    '51p91ns0'
    """
    value = int(record_id[-_SUFFIX_HEX:], 16)
    chars = [HANDLE_ALPHABET[(value >> shift) & 31] for shift in range(35, -1, -5)]
    return "".join(chars)


def handle_suffix(reference: str) -> str | None:
    """The last ten hex digits of the ids ``reference`` is the handle of, or None when it
    cannot be a handle (look-alikes read as Crockford's base32 reads them: ``i``/``l`` as
    ``1``, ``o`` as ``0``; any case)."""
    ref = reference.strip().lower().translate(_READINGS)
    if len(ref) != HANDLE_LENGTH or not set(ref) <= set(HANDLE_ALPHABET):
        return None
    value = 0
    for char in ref:
        value = value << 5 | HANDLE_ALPHABET.index(char)
    return f"{value:0{_SUFFIX_HEX}x}"


def complete_id(store: Store, kind: str, reference: str) -> str:
    """The full id of the one ``kind`` whose handle is ``reference`` or whose id starts with
    it, else ``reference``."""
    suffix, prefix = handle_suffix(reference), id_prefix(reference)
    by_handle = [] if suffix is None else store.ids_ending_with(kind, suffix, limit=3)
    by_prefix = [] if prefix is None else store.ids_starting_with(kind, prefix, limit=3)
    return choose_id(kind, reference, list(dict.fromkeys([*by_handle, *by_prefix])))


def matching(ids: Sequence[str], reference: str) -> list[str]:
    """Those of ``ids`` whose handle is ``reference`` or that start with it (in order): what
    :func:`complete_id` finds, among ids already read (a server's list)."""
    suffix, prefix = handle_suffix(reference), id_prefix(reference)
    return [
        i
        for i in ids
        if (suffix is not None and i.endswith(suffix))
        or (prefix is not None and i.startswith(prefix))
    ]


def id_prefix(reference: str) -> str | None:
    """``reference`` as an id prefix to look up, or None when it cannot be one."""
    ref = reference.strip().lower()
    if len(ref) < MIN_PREFIX or len(ref) >= 32 or not set(ref) <= _HEX:
        return None
    return ref


def choose_id(kind: str, reference: str, found: Sequence[str]) -> str:
    """The one id of ``found`` (ids starting with ``reference``), else ``reference``."""
    if len(found) > 1:
        shown = ", ".join(found[:2]) + (", ..." if len(found) > 2 else "")
        raise AmbiguousId(
            f"{kind} handle or id prefix {reference!r} is ambiguous ({shown}); give the id"
        )
    return found[0] if found else reference
