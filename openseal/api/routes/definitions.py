"""``GET /definitions/{digest}``: a stored, immutable definition version."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.parameters import DIGEST
from openseal.api.routes.common import State
from openseal.runtime import service
from openseal.wire import jsonable

router = APIRouter(tags=["definitions"], route_class=documents.Documented)

Digest = Annotated[str, Path(pattern=DIGEST, description="A sha256 digest (`sha256:` optional)")]


@router.get(
    "/definitions/{digest}",
    operation_id="definitions.get",
    dependencies=requires("definitions.get"),
    responses=responses(404, ok=documents.DefinitionDocument),
)
def get_definition(digest: Digest, state: State) -> dict[str, Any]:
    """The compiled document stored under ``digest``, with its kind and name."""
    version = service.get_version(state.store, digest)
    return {
        "digest": version.digest,
        "kind": version.kind,
        "name": version.name,
        "created_at": jsonable(version.created_at),
        "document": version.document,
    }
