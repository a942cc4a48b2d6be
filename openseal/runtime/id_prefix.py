"""Ids by unique prefix: ``openseal runs show 0191f0`` as git and docker accept short ids.

Every id openseal makes is 32 lowercase hex characters (:func:`openseal.runtime.clock.new_id`);
a reference of at least :data:`MIN_PREFIX` hex characters that starts exactly one id of its
kind names that id. Anything else is returned unchanged, so the caller's own lookup reports
"not found" (or finds the object by another name: a proposal hash, an action key).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from openseal.errors import OpenSealError

if TYPE_CHECKING:
    from openseal.runtime.store import Store

MIN_PREFIX = 4
#: the fewest hex digits of a proposal hash a decision may name
MIN_HASH_PREFIX = 10
#: a proposal hash or a prefix of one, as a decision names it (``sha256:`` optional)
HASH_PREFIX = re.compile(rf"(sha256:)?[0-9a-fA-F]{{{MIN_HASH_PREFIX},64}}")
_HEX = frozenset("0123456789abcdef")


class AmbiguousId(OpenSealError):
    code = "ambiguous_id"


def complete_id(store: Store, kind: str, reference: str) -> str:
    """The full id of the one ``kind`` whose id starts with ``reference``, else ``reference``."""
    prefix = id_prefix(reference)
    if prefix is None:
        return reference
    return choose_id(kind, reference, store.ids_starting_with(kind, prefix, limit=3))


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
            f"{kind} id prefix {reference!r} is ambiguous ({shown}); give more characters"
        )
    return found[0] if found else reference
