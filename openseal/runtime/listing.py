"""The list flags every list shares, in the CLI and the API alike: ``limit``, the cursor
``after`` (the last id of the previous page), ``since`` (a moment or an age), ``status``
(checked against the statuses of what is listed) and ``workflow``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from enum import Enum

from openseal.errors import UsageError
from openseal.runtime.clock import utcnow
from openseal.runtime.store import ListQuery

_AGE = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
#: an age as the HTTP API takes it: no spaces, lower case, at most 9 digits a number
API_AGE = r"^([0-9]{1,9}[smhdw])+$"
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``since`` as an aware UTC moment: an age back from now (``90s``, ``30m``, ``2h``,
    ``7d``, ``1w``, combinable: ``1h30m``) or an ISO 8601 date or time (UTC unless it says
    otherwise).

    >>> parse_since("2026-12-01T09:30:00+01:00").isoformat()
    '2026-12-01T08:30:00+00:00'
    """
    value = text.strip()
    parts = _AGE.findall(value.lower())
    if parts and "".join(n + u for n, u in parts) == re.sub(r"\s+", "", value.lower()):
        try:
            age = sum((timedelta(**{_UNITS[u]: int(n)}) for n, u in parts), timedelta())
            return (now or utcnow()) - age
        except (OverflowError, ValueError):  # older than the calendar: everything
            return EARLIEST
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"since: expected an age (30m, 2h, 7d) or an ISO 8601 date or time, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # an offset past either end of the calendar
        return EARLIEST if moment.year == datetime.min.year else LATEST


def since_for_api(text: str) -> str:
    """``since`` as the HTTP API takes it (:data:`API_AGE`, or an RFC 3339 time): an age
    unchanged, anything else as the UTC moment :func:`parse_since` reads in it.

    >>> since_for_api("2h"), since_for_api("2026-12-01T09:30")
    ('2h', '2026-12-01T09:30:00+00:00')
    """
    compact = re.sub(r"\s+", "", text.lower())
    if re.fullmatch(API_AGE, compact):
        return compact
    return parse_since(text).isoformat()


def list_query(
    *,
    limit: int,
    after: str | None,
    since: str | None,
    workflow: str | None,
    status: str | None = None,
    statuses: type[Enum] | None = None,
    scopes: tuple[str, ...] | None = None,
) -> ListQuery:
    """The store's page request; ``status`` must name one of ``statuses`` (UsageError);
    ``scopes`` are those the caller sees (None: every scope)."""
    if status is not None and statuses is not None:
        try:
            status = str(statuses(status).value)
        except ValueError:
            names = ", ".join(str(s.value) for s in statuses)
            noun = statuses.__name__.removesuffix("Status").lower()  # RunStatus: "run"
            raise UsageError(f"unknown {noun} status {status!r} (one of {names})") from None
    return ListQuery(
        limit=limit,
        after=after,
        since=None if since is None else parse_since(since),
        status=status,
        workflow=workflow,
        scopes=scopes,
    )
