"""Time and identifiers for the store: aware UTC datetimes and time-sortable ids.

Every timestamp the runtime handles is a timezone-aware UTC ``datetime``. The schema stores it
as epoch seconds (a double) because that compares and orders identically on SQLite and
PostgreSQL; see :class:`openseal.runtime.store.tables.schema.UtcTimestamp`.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def to_utc(moment: datetime) -> datetime:
    """Normalise ``moment`` to aware UTC; a naive datetime is refused because it is ambiguous."""
    if moment.tzinfo is UTC:  # most are already (every timestamp the runtime makes)
        return moment
    if moment.tzinfo is None:
        raise ValueError("naive datetime given where an aware UTC datetime is required")
    return moment.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """Datetimes go into event payloads (JSON) as ISO 8601 strings."""
    return None if moment is None else moment.isoformat()


def new_id() -> str:
    """A 32-character lowercase hex id that sorts by creation time (millisecond prefix).

    Ids made by one process increase strictly, as ULIDs made monotonically do: within one
    millisecond (or when the clock steps back) the next id adds one to the last one's 80
    random bits, so "newest first" by id is exact for what one process created. Between
    processes the random bits make collisions negligible and the order within a millisecond
    arbitrary. A forked child starts afresh rather than continue its parent's sequence.
    """
    millis = time.time_ns() // 1_000_000
    with _last_lock:
        last_millis, last_random = _last
        if millis <= last_millis and last_random + 1 < _RANDOM_LIMIT:
            millis, random_bits = last_millis, last_random + 1
        else:
            millis = max(millis, last_millis + (millis <= last_millis))
            random_bits = _random_bits()
        _last[:] = [millis, random_bits]
    # The same digits as f"{millis:012x}{random_bits:020x}", formatted by one %-format, which
    # costs a third of that f-string's format specs.
    return "%032x" % ((millis << 80) | random_bits)


_RANDOM_LIMIT = 1 << 80
#: the last id's millisecond and random bits, so the next one of this process sorts after it
_last: list[int] = [0, 0]
_last_lock = threading.Lock()
#: random bytes drawn from the system ahead of use, 10 an id: one system call per few hundred
#: ids rather than per id (a call costs more than the rest of making an id)
_entropy = bytearray()
_ENTROPY_DRAWN = 4000


def _random_bits() -> int:
    """80 random bits from :data:`_entropy` (held under ``_last_lock``)."""
    if len(_entropy) < 10:
        _entropy[:] = os.urandom(_ENTROPY_DRAWN)
    bits = int.from_bytes(_entropy[-10:], "big")
    del _entropy[-10:]
    return bits


def _forget_last_id() -> None:
    global _last_lock
    _last[:] = [0, 0]
    _entropy.clear()  # the parent's next bits are not the child's too
    _last_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_last_id)
