"""The one guard every operation passes: is it served here, and may this caller use it.

An operation whose capability is not available is **not served**: it stays in the OpenAPI
document, and calling it answers ``501 not_served`` with the reason, before anything runs. An
operation the caller's roles do not allow answers ``403 forbidden`` (the role × operation table
is :data:`openseal.runtime.service.PERMISSIONS`). Whether the caller may see the record it
names is the service's to say: another scope's record is ``404 not_found``, like an unknown one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam

from openseal.api.auth import Caller, caller
from openseal.api.errors import ApiError
from openseal.api.state import state_of
from openseal.runtime.service import capability_of, roles_for

#: whether the caller may use the operation on this request's record without the role
#: (the principal the record names, like an agent request's callee)
Named = Callable[[Request, Caller], bool]


def served(operation: str, named: Named | None = None) -> Callable[[Request, Caller], None]:
    """A dependency that refuses ``operation`` with 403 when the caller holds none of the roles
    that may use it (and is not the principal ``named`` accepts), then with 501 when its
    capability is unavailable."""
    name = capability_of(operation)  # a typo in a route fails at import, not at request

    def check(request: Request, who: Annotated[Caller, Depends(caller)]) -> None:
        if not who.grant.may(operation) and not (named is not None and named(request, who)):
            roles = sorted(roles_for(operation))
            raise ApiError(
                403,
                "forbidden",
                f"{who.principal} may not use {operation} (it needs one of the roles "
                f"{', '.join(roles)})",
                {"operation": operation, "roles": roles},
            )

        for capability in state_of(request).capabilities:
            if capability.name == name and not capability.available:
                raise ApiError(
                    501,
                    "not_served",
                    f"{operation} is not served: {capability.reason}",
                    {"capability": name, "operation": operation, "reason": capability.reason},
                )

    return check


def requires(operation: str, named: Named | None = None) -> list[DependsParam]:
    """``dependencies=`` for a route implementing ``operation``."""
    return [Depends(served(operation, named))]
