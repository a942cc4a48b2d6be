"""Time and identifiers for the store: aware UTC datetimes and time-sortable ids.

Every timestamp the runtime handles is a timezone-aware UTC ``datetime``. The schema stores it
as epoch seconds (a double) because that compares and orders identically on SQLite and
PostgreSQL; see :class:`openseal.runtime.store.schema.UtcTimestamp`.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def to_utc(moment: datetime) -> datetime:
    """Normalise ``moment`` to aware UTC; a naive datetime is refused because it is ambiguous."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime given where an aware UTC datetime is required")
    return moment.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """Datetimes go into event payloads (JSON) as ISO 8601 strings."""
    return None if moment is None else moment.isoformat()


def new_id() -> str:
    """A 32-character lowercase hex id that sorts by creation time (millisecond prefix).

    The 80 random bits make collisions between processes negligible; ordering within the same
    millisecond is arbitrary, which is fine because ids are only used for pagination.
    """
    millis = time.time_ns() // 1_000_000
    return f"{millis:012x}{int.from_bytes(os.urandom(10), 'big'):020x}"
