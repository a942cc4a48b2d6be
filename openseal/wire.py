"""The JSON vocabulary of records: what the API answers, what the CLI prints with
``--output json|yaml``, and what the CLI reads back from a server.

A record travels as its fields, by name, and nothing else: datetimes as ISO 8601, enums as
their value, tuples and sets as lists. Reading a document back into its record
(:func:`openseal.cli.client.record`) gives the record again, so a command prints the same
whether it read the store or asked a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import datetime
from enum import Enum
from pathlib import PurePath
from typing import Any


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses as objects of their fields."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | frozenset | set):
        return [jsonable(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, PurePath):
        return str(value)
    return value
