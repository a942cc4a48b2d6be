"""Tokens: list, create (the secret is in this one answer only), revoke. Admin in every scope.

The documents are the CLI's (``openseal tokens ... -o json``). A token's secret is never
logged, and is not kept for replays: a create is not idempotent, and sending it twice makes
two tokens.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import TokenCreate
from openseal.api.routes.common import Id, State, Who, runtime_caller
from openseal.runtime import service

router = APIRouter(tags=["tokens"], route_class=documents.Documented)

Principal = Annotated[
    str | None, Query(min_length=1, max_length=200, description="Only this principal's tokens")
]


@router.get(
    "/tokens",
    operation_id="tokens.list",
    dependencies=requires("tokens.list"),
    responses=responses(ok=documents.Tokens),
)
def list_tokens(state: State, who: Who, principal: Principal = None) -> dict[str, Any]:
    """Every token, oldest first, with its state (``active``, ``expired``, ``revoked``); never
    a secret, nor its hash."""
    store = state.store
    found = service.tokens.list_tokens(store, runtime_caller(state, who), principal=principal)
    return {"tokens": [service.tokens.token_view(store, token) for token in found]}


@router.post(
    "/tokens",
    operation_id="tokens.create",
    dependencies=requires("tokens.create"),
    responses=responses(ok=documents.TokenIssued, ok_statuses=(201,)),
    status_code=201,
)
def create_token(body: TokenCreate, state: State, who: Who) -> dict[str, Any]:
    """Make a token; ``secret`` is the bearer token, shown in this answer only (the store keeps
    its sha256)."""
    request = service.NewToken(
        body.principal, tuple(body.roles), tuple(body.scopes), body.expires_in, body.note
    )
    issued = service.tokens.create_token(state.store, request, runtime_caller(state, who))
    return {"token": service.tokens.token_view(state.store, issued.token), "secret": issued.secret}


@router.post(
    "/tokens/{token_id}/revoke",
    operation_id="tokens.revoke",
    dependencies=requires("tokens.revoke"),
    responses=responses(404, ok=documents.TokenChanged),
)
def revoke_token(token_id: Id, state: State, who: Who) -> dict[str, Any]:
    """Revoke a token by id (or unique prefix): it stops working at once. Revoking a revoked
    token changes nothing."""
    token_id = service.complete_id(state.store, "token", token_id)
    token = service.tokens.revoke_token(state.store, token_id, runtime_caller(state, who))
    return {"token": service.tokens.token_view(state.store, token)}
