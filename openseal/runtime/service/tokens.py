"""Bearer tokens of principals: make one (its secret is shown once, only its sha256 is kept),
list them, revoke one. Administering tokens needs the ``admin`` role in every scope (``*``):
a token may reach any scope, so an admin limited to some could otherwise mint a way out of
them. The CLI on the machine holding the store, as the local operator, has both."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from openseal.errors import UsageError
from openseal.runtime.access import ADMIN, ANY_SCOPE, ROLES, Forbidden, is_principal, is_scope
from openseal.runtime.caller import LOCAL_OPERATOR, Caller
from openseal.runtime.clock import iso
from openseal.runtime.id_prefix import complete_id
from openseal.runtime.requests import NewToken
from openseal.runtime.store import AccessToken, Store

#: a token's visible prefix, so a leaked one is recognisable in logs and secret scanners
TOKEN_PREFIX = "oseal_"


@dataclass(frozen=True)
class IssuedToken:
    """A token just made: ``secret`` is the bearer token, shown this once and never again."""

    token: AccessToken
    secret: str


def create_token(store: Store, request: NewToken, caller: Caller) -> IssuedToken:
    """Make a token for ``request.principal``; only its sha256 is stored."""
    _check_admin(caller)
    if not is_principal(request.principal):
        raise UsageError(f"{request.principal!r} is not a principal such as user:alice")
    if request.principal == LOCAL_OPERATOR:
        raise UsageError(f"{LOCAL_OPERATOR} is the local operator; name the person instead")
    roles = tuple(dict.fromkeys(request.roles))
    if not roles:
        raise UsageError(f"name at least one role (--role; one of {', '.join(ROLES)})")
    for role in roles:
        if role not in ROLES:
            raise UsageError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
    scopes = tuple(dict.fromkeys(request.scopes)) or ("default",)
    for scope in scopes:
        if not is_scope(scope):
            raise UsageError(
                f"{scope!r} is not a scope: lowercase letters, digits, `_`, `.`, `-` (or `*`)"
            )
    if ANY_SCOPE in scopes:
        scopes = (ANY_SCOPE,)
    expires_at = None
    if request.expires_in is not None:
        if request.expires_in <= 0:
            raise UsageError("a token must expire in the future")
        expires_at = store.now() + timedelta(seconds=request.expires_in)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    digest = hashlib.sha256(secret.encode("utf-8")).hexdigest()
    token = store.tokens.create(
        request.principal, digest, roles=roles, scopes=scopes, created_by=caller.actor,
        expires_at=expires_at, note=request.note,
    )  # fmt: skip
    return IssuedToken(token, secret)


def list_tokens(store: Store, caller: Caller, *, principal: str | None = None) -> list[AccessToken]:
    """Every token (never a secret), oldest first."""
    _check_admin(caller)
    return store.tokens.list(principal=principal)


def revoke_token(store: Store, token_id: str, caller: Caller) -> AccessToken:
    """Revoke a token by id (or unique prefix); it stops working at once."""
    _check_admin(caller)
    return store.tokens.revoke(complete_id(store, "token", token_id), caller.actor)


def token_view(store: Store, token: AccessToken) -> dict[str, Any]:
    """A token as shown: everything but its hash, with its state now."""
    return {
        "id": token.id,
        "principal": token.principal,
        "roles": list(token.roles),
        "scopes": list(token.scopes),
        "state": token.state(store.now()),
        "note": token.note,
        "created_by": token.created_by,
        "created_at": iso(token.created_at),
        "expires_at": iso(token.expires_at),
        "revoked_at": iso(token.revoked_at),
        "revoked_by": token.revoked_by,
    }


def _check_admin(caller: Caller) -> None:
    if ADMIN not in caller.grant.roles or not caller.grant.everywhere:
        raise Forbidden("administering tokens needs the admin role in every scope (*)")
