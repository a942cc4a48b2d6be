"""How values are stored, in one place the schema's types and the reads without SQLAlchemy
(:mod:`openseal.runtime.store.sqlite_reads`) share: timestamps as epoch seconds, and the scope
of a record when none is configured (JSON text is :mod:`openseal.runtime.store.db.json_text`).
It imports no SQLAlchemy.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from openseal.runtime.clock import to_utc

#: the scope of every record when none is configured
DEFAULT_SCOPE = "default"


def store_key(digest: str) -> str:
    """The key a definition version is stored under: its digest as bare hex (``sha256:``
    dropped)."""
    return digest.removeprefix("sha256:")


def epoch_seconds(moment: datetime | None) -> float | None:
    """An aware datetime as the epoch seconds a timestamp column holds."""
    global _last_converted
    last, seconds = _last_converted
    if moment is last:
        return seconds
    if moment is None:
        return None
    # Every timestamp the runtime makes is UTC already: no call to normalise it.
    seconds = (moment if moment.tzinfo is UTC else to_utc(moment)).timestamp()
    _last_converted = (moment, seconds)
    return seconds


#: the datetime :func:`epoch_seconds` converted last, and its epoch seconds: a transaction
#: writes its one ``now`` into several columns and rows in a row (two conversions in three
#: are of the same object). A datetime cannot change, so the same object has the same value;
#: the pair is replaced whole, so a thread never reads one's moment with another's seconds.
_last_converted: tuple[datetime | None, float | None] = (None, None)


def from_epoch_seconds(value: Any) -> datetime | None:
    """A timestamp column's epoch seconds as an aware UTC datetime."""
    return None if value is None else datetime.fromtimestamp(float(value), UTC)
