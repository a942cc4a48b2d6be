"""Parameter and field types whose OpenAPI declaration is exactly what the server enforces.

Each type here is validated by the request's own validation (``422 invalid_request`` with the
one error shape) against the same rule its schema declares, so what a client generates from the
document is accepted and nothing else reaches a service function.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

from openseal.runtime.service import API_AGE as AGE
from openseal.runtime.service import HASH_PREFIX, MIN_HASH_PREFIX

#: an RFC 3339 time: a date, ``T``, a time, an offset (``Z`` or ``+01:00``)
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _since(text: str) -> str:
    if re.fullmatch(AGE, text):
        return text
    try:
        if _DATE.fullmatch(text):
            date.fromisoformat(text)
            return text
        if _RFC3339.fullmatch(text):
            datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
            return text
    except ValueError:
        pass
    raise ValueError("expected an age (30m, 2h, 7d), a date or an RFC 3339 time")


#: ``since``: an age, a date or an RFC 3339 time (:func:`openseal.runtime.listing.parse_since`
#: reads each)
SinceText = Annotated[
    str,
    AfterValidator(_since),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": AGE},
                {"type": "string", "format": "date"},
                {"type": "string", "format": "date-time"},
            ]
        }
    ),
]


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: put after an integer's bounds (``Annotated[int, Field(ge=0), WHOLE]``), in a strict body:
#: JSON Schema counts ``3.0`` as the integer 3, so it is one here too, but ``true`` and ``"3"``
#: are not
WHOLE = BeforeValidator(_whole)

#: a sha256 digest: 64 hex digits, ``sha256:`` optional
DIGEST = r"^(sha256:)?[0-9a-fA-F]{64}$"

#: a proposal hash as a decision names it: whole, or its first :data:`MIN_HASH_PREFIX` or more
#: hex digits
ProposalHash = Annotated[
    str,
    Field(
        pattern=f"^{HASH_PREFIX.pattern}$",
        description="The proposal hash you were shown, or its first "
        f"{MIN_HASH_PREFIX} or more hex digits (`sha256:` optional)",
    ),
]
