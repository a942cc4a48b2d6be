"""How values are stored, in one place the schema's types and the reads without SQLAlchemy
(:mod:`.sqlite_reads`) share: timestamps as epoch seconds, JSON as compact text, and the scope
of a record when none is configured. It imports no SQLAlchemy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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
    return None if moment is None else to_utc(moment).timestamp()


def from_epoch_seconds(value: Any) -> datetime | None:
    """A timestamp column's epoch seconds as an aware UTC datetime."""
    return None if value is None else datetime.fromtimestamp(float(value), UTC)


#: JSON columns are written without spaces: smaller rows, same values. One encoder serves
#: every call (``json.dumps`` with any non-default argument builds a new one each time); its
#: ``encode`` keeps no state between calls, so threads share it.
compact_json: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode
