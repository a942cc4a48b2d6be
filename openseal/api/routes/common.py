"""What every route module uses: path parameters, the store, the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query, Request

from openseal.api.auth import Caller, caller
from openseal.api.state import ApiState, state_of
from openseal.runtime import service

Id = Annotated[str, Path(min_length=1, max_length=200, description="An id (or a unique prefix)")]
Limit = Annotated[int, Query(ge=1, le=1000, description="At most this many items")]
Status = Annotated[str | None, Query(min_length=1, max_length=40, description="Only this status")]
Who = Annotated[Caller, Depends(caller)]


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
