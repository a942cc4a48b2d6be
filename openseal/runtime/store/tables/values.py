"""How values are stored, in one place the schema's types and the reads without SQLAlchemy
(:mod:`.sqlite_reads`) share: timestamps as epoch seconds, JSON as compact text, and the scope
of a record when none is configured. It imports no SQLAlchemy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
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


#: JSON columns are written without spaces: smaller rows, same values
_COMPACT = json.JSONEncoder(separators=(",", ":"))
#: the C encoder ``_COMPACT.encode`` builds afresh on every call (in ``iterencode``), built
#: once. It keeps no circular-reference markers: a markers dict shared by threads, and left
#: with stale entries by an encoding that failed, would report cycles that are not there.
_encode_chunks: Callable[[Any, int], list[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _COMPACT.default, encode_basestring_ascii, None, ":", ",", False, False, True
    )
)


def compact_json(value: Any) -> str:
    """``value`` as compact JSON text, exactly as ``json.dumps(value, separators=(",", ":"))``
    writes it (and with the same errors), for a few calls less: JSON columns are written
    several times a turn (``None``, an empty column, without the encoder)."""
    if value is None:
        return "null"
    if _encode_chunks is None:
        return _COMPACT.encode(value)
    try:
        return "".join(_encode_chunks(value, 0))
    except RecursionError:
        # A value nested too deep, or one that contains itself: the encoder with markers
        # raises what json.dumps raises (ValueError for a cycle).
        return _COMPACT.encode(value)


_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads_json(text: Any) -> Any:
    """``json.loads(text)``, for fewer calls on the compact text a JSON column holds: one scan
    from its first character that ends at its last; anything else (leading or trailing
    white space, an error) is left to ``json.loads``."""
    if type(text) is str:
        try:
            value, end = _scan_json(text, 0)
        except StopIteration:
            pass
        else:
            if end == len(text):
                return value
    return json.loads(text)
