"""Capabilities as the API serves them: the list, and the guard that answers 501.

An operation whose capability is not available is **not served**: it stays in the OpenAPI
document, and calling it answers ``501 not_served`` with the reason, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, Request
from fastapi.params import Depends as DependsParam

from openseal.api.errors import ApiError
from openseal.api.state import state_of
from openseal.runtime.service import capability_of


def served(operation: str) -> Callable[[Request], None]:
    """A dependency that refuses ``operation`` with 501 when its capability is unavailable."""
    name = capability_of(operation)  # a typo in a route fails at import, not at request

    def check(request: Request) -> None:
        for capability in state_of(request).capabilities:
            if capability.name == name and not capability.available:
                raise ApiError(
                    501,
                    "not_served",
                    f"{operation} is not served: {capability.reason}",
                    {"capability": name, "operation": operation, "reason": capability.reason},
                )

    return check


def requires(operation: str) -> list[DependsParam]:
    """``dependencies=`` for a route implementing ``operation``."""
    return [Depends(served(operation))]
