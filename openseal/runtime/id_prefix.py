"""Ids by unique prefix: ``openseal runs show 0191f0`` as git and docker accept short ids.

Every id openseal makes is 32 lowercase hex characters (:func:`openseal.runtime.clock.new_id`);
a reference of at least :data:`MIN_PREFIX` hex characters that starts exactly one id of its
kind names that id. Anything else is returned unchanged, so the caller's own lookup reports
"not found" (or finds the object by another name: a proposal hash, an action key).
"""

from __future__ import annotations

from openseal.errors import OpenSealError
from openseal.runtime.store import Store

MIN_PREFIX = 4
_HEX = frozenset("0123456789abcdef")


class AmbiguousId(OpenSealError):
    code = "ambiguous_id"


def complete_id(store: Store, kind: str, reference: str) -> str:
    """The full id of the one ``kind`` whose id starts with ``reference``, else ``reference``."""
    ref = reference.strip().lower()
    if len(ref) < MIN_PREFIX or len(ref) >= 32 or not set(ref) <= _HEX:
        return reference
    found = store.ids_starting_with(kind, ref, limit=3)
    if len(found) > 1:
        shown = ", ".join(found[:2]) + (", ..." if len(found) > 2 else "")
        raise AmbiguousId(
            f"{kind} id prefix {reference!r} is ambiguous ({shown}); give more characters"
        )
    return found[0] if found else reference
