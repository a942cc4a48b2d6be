"""``GET /capabilities``: what this server serves, and why not when it does not."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from openseal.api import documents
from openseal.api.errors import responses
from openseal.api.routes.common import State

router = APIRouter(tags=["capabilities"], route_class=documents.Documented)


@router.get(
    "/capabilities",
    operation_id="capabilities.list",
    responses=responses(ok=documents.Capabilities),
)
def list_capabilities(state: State) -> dict[str, Any]:
    """Each capability with its version, operations and availability (with the reason when it
    is not available). Operations of an unavailable capability answer 501 ``not_served``."""
    return {"capabilities": [c.to_dict() for c in state.capabilities]}
