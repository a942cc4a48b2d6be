"""What every route module uses: path parameters, the store, the caller."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from openseal.api.auth import Caller, caller
from openseal.api.parameters import SinceText
from openseal.api.state import ApiState, state_of
from openseal.runtime import service
from openseal.wire import jsonable

Id = Annotated[str, Path(min_length=1, max_length=200, description="An id (or a unique prefix)")]
Limit = Annotated[int, Query(ge=1, le=1000, description="At most this many items")]
After = Annotated[
    str | None,
    Query(min_length=1, max_length=200, description="The next page: items older than this id"),
]
Since = Annotated[
    SinceText | None,
    Query(
        description="Only items created since: an age (30m, 2h, 7d, combinable: 1h30m), "
        "a date (2026-12-01) or an RFC 3339 time (2026-12-01T09:30:00Z)",
    ),
]
Workflow = Annotated[
    str | None, Query(min_length=1, max_length=200, description="Only items of this workflow")
]
OfRun = Annotated[
    str | None, Query(min_length=1, max_length=200, description="Only items of this run")
]
#: ``status`` of each kind of record, one of its statuses
RunStatusQuery = Annotated[service.RunStatus | None, Query(description="Only this status")]
ObjectiveStatusQuery = Annotated[
    service.ObjectiveStatus | None, Query(description="Only this status")
]
ApprovalStatusQuery = Annotated[
    service.ApprovalStatus | None, Query(description="Only this status")
]
ActionStatusQuery = Annotated[service.ActionStatus | None, Query(description="Only this status")]
AgentRequestStatusQuery = Annotated[
    service.AgentRequestStatus | None, Query(description="Only this status")
]
Who = Annotated[Caller, Depends(caller)]


def next_after(found: Sequence[Any], limit: int) -> str | None:
    """The cursor of the page after ``found`` (None when it was the last page)."""
    return found[-1].id if found and len(found) >= limit else None


@dataclass(frozen=True)
class Listing:
    """What every list of runtime records is asked for besides its status: one workflow,
    created since a moment, and the page (``after`` a cursor, at most ``limit`` items)."""

    workflow: str | None
    since: str | None
    after: str | None
    limit: int

    def filters(self, status: StrEnum | None) -> dict[str, Any]:
        """As the service's list functions take them, with the ``status`` asked for."""
        return {"status": None if status is None else str(status), **asdict(self)}

    def page(self, name: str, found: Sequence[Any]) -> dict[str, Any]:
        """The answer: ``found`` under ``name``, and the cursor of the next page (``next_after``,
        null on the last page)."""
        return {name: jsonable(found), "next_after": next_after(found, self.limit)}


def _listing(
    workflow: Workflow = None,
    since: Since = None,
    after: After = None,
    limit: Limit = 100,
) -> Listing:
    return Listing(workflow, since, after, limit)


Listed = Annotated[Listing, Depends(_listing)]


def _state(request: Request) -> ApiState:
    return state_of(request)


State = Annotated[ApiState, Depends(_state)]


def runtime_caller(state: ApiState, who: Caller) -> service.Caller:
    """The runtime's view of who asks: the principal a token identified (none: the local
    operator), whether the connection comes from this machine (a loopback peer with no proxy
    in between), and the roles and scopes it holds. The runtime never sees the address."""
    return service.Caller(who.decider, local=who.local and state.settings.local, grant=who.grant)


def scoped(who: Caller) -> service.Caller:
    """The caller as reads need it: which scopes it sees."""
    return service.Caller(who.decider, local=who.local, grant=who.grant)
