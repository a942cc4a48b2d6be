"""JSON as the store's columns hold it: compact text, written and read with fewer calls than
``json.dumps`` and ``json.loads`` take, and exactly what they give. It imports no SQLAlchemy
(the reads without it use it too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

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


def column_writer(
    *, none_as_null: bool, json_null: object, sql_null: type
) -> Callable[[Any], str | None]:
    """What a JSON column's bind processor does with :func:`compact_json` as its serialiser,
    in one call per value rather than two (the processor, then the serialiser): ``None`` is
    JSON ``null`` (SQL NULL with ``none_as_null``), ``json_null`` (the type's marker of JSON
    ``null``) is ``null`` and an instance of ``sql_null`` (the marker of SQL NULL) is NULL;
    anything else is its compact JSON text. A dict or list is encoded here; other values go to
    :func:`compact_json`."""
    none_text = None if none_as_null else "null"
    encode = _encode_chunks

    def write(value: Any) -> str | None:
        kind = type(value)
        if encode is not None and (kind is dict or kind is list):
            try:
                return "".join(encode(value, 0))
            except RecursionError:
                return _COMPACT.encode(value)  # as compact_json: the encoder with markers
        if value is None:
            return none_text
        if value is json_null:
            return "null"
        if isinstance(value, sql_null):
            return None
        return compact_json(value)

    return write


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
