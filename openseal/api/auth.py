"""Who is calling: bearer tokens (from the store, a token file, the approval authority), else
the local operator.

Tokens made with ``openseal tokens create`` live in the store (their sha256 only) with the
principal's roles, scopes and expiry. A token file (``--tokens FILE``) maps token hashes to
principals, optionally with roles and scopes::

    tokens:
      "sha256:2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90": user:alice
      user:bob: {sha256: 81b637d8fcd2c6da6359e6963113a1170de795e4b725b84d1e0b4cfd9ec58ce9,
                 roles: [operator], scopes: [procurement]}

A key is the sha256 of a token (hex, ``sha256:`` optional), or a principal with
``{sha256: ..., roles: [...], scopes: [...]}``; a file entry without ``roles`` is ``admin`` in
every scope (what every token could do before roles), one without ``scopes`` reaches every
scope. The approval authority's own ``tokens`` are approvers (``viewer`` and ``approver``) in
every scope. A plain token as a key is accepted but discouraged (the file then holds the
secret itself).

Every request carries ``Authorization: Bearer <token>``: a token of the store, a file or the
authority, or — on a server started with ``--local-operator`` — that start's secret, which
makes the caller the local operator, ``user:local``, only from this machine (see
:mod:`openseal.api.local`; the console presents it as a cookie). Without either nobody is
served, unless ``--insecure-no-auth`` serves anonymous callers as ``user:local`` (never as a
local connection). Presented tokens are hashed and compared in constant time against every
file entry, looked up by hash in the store, and are never logged or echoed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import yaml
from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from openseal.api.errors import ApiError
from openseal.errors import UsageError
from openseal.local_operator import cookie_name, secret_file
from openseal.runtime.service import (
    FULL,
    LOCAL_OPERATOR,
    ROLES,
    ApprovalAuthority,
    Grant,
    approver_grant,
    is_principal,
)
from openseal.runtime.store import Store

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class TokenTable:
    """sha256 digests of tokens, the principal each stands for and what it may do."""

    entries: tuple[tuple[bytes, str, Grant], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entries)

    def lookup(self, token: str) -> tuple[str, Grant] | None:
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found: tuple[str, Grant] | None = None
        for digest, principal, grant in self.entries:  # no early exit: time tells nothing
            if hmac.compare_digest(digest, presented):
                found = (principal, grant if found is None else found[1].union(grant))
        return found

    def principal(self, token: str) -> str | None:
        found = self.lookup(token)
        return None if found is None else found[0]

    def merged(self, authority: ApprovalAuthority | None) -> TokenTable:
        """This table plus the approval authority's tokens (approvers in every scope)."""
        if authority is None or not authority.tokens:
            return self
        approver = approver_grant()
        extra = tuple((bytes.fromhex(h), p, approver) for h, p in sorted(authority.tokens.items()))
        return TokenTable(self.entries + extra)


@dataclass(frozen=True)
class Caller:
    """The principal a request acts as and what it may do; ``via_token`` is False for the local
    operator (and an anonymous ``--insecure-no-auth`` caller); ``local``: the local operator,
    with this start's secret, from this machine (:mod:`openseal.api.local`)."""

    principal: str
    via_token: bool
    grant: Grant = FULL
    local: bool = False

    @property
    def decider(self) -> str | None:
        """The principal to hand to approval decisions (None: the local operator's path)."""
        return self.principal if self.via_token else None


def load_tokens(path: Path) -> TokenTable:
    """Read a token file; a one-line :class:`UsageError` when it is unreadable or malformed."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "unreadable"
        raise UsageError(f"cannot read token file {path}: {reason}") from None
    except yaml.YAMLError:
        raise UsageError(f"token file {path} is not valid YAML") from None
    return parse_tokens(raw, str(path))


def parse_tokens(raw: object, where: str = "token file") -> TokenTable:
    if isinstance(raw, dict) and set(raw) == {"tokens"}:
        raw = raw["tokens"]
    if not isinstance(raw, dict) or not raw:
        raise UsageError(f"{where}: expected a mapping of token hashes to principals")
    entries = []
    for key, value in raw.items():
        digest, principal, grant = _entry(str(key), value, where)
        if principal == LOCAL_OPERATOR:
            raise UsageError(
                f"{where}: {LOCAL_OPERATOR} is the local operator; name the person instead"
            )
        entries.append((digest, principal, grant))
    return TokenTable(tuple(entries))


def _entry(key: str, value: object, where: str) -> tuple[bytes, str, Grant]:
    if isinstance(value, dict):  # principal: {sha256: ..., roles: [...], scopes: [...]}
        digest = str(value.get("sha256", "")).lower().removeprefix("sha256:")
        if not _HEX64.match(digest) or not set(value) <= {"sha256", "roles", "scopes"}:
            raise UsageError(f"{where}: {key} needs `sha256: <64 hex>`")
        return bytes.fromhex(digest), _principal(key, where), _grant(key, value, where)
    if not isinstance(value, str):
        raise UsageError(f"{where}: each token maps to a principal such as user:alice")
    hashed = key.lower().removeprefix("sha256:")
    if _HEX64.match(hashed):
        return bytes.fromhex(hashed), _principal(value, where), FULL
    if len(key) < 16:
        raise UsageError(f"{where}: a plain token must be at least 16 characters")
    return hashlib.sha256(key.encode("utf-8")).digest(), _principal(value, where), FULL


def _grant(key: str, value: dict[object, object], where: str) -> Grant:
    roles, scopes = value.get("roles", ["admin"]), value.get("scopes", ["*"])
    for name, items in (("roles", roles), ("scopes", scopes)):
        if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
            raise UsageError(f"{where}: {key}: `{name}` must be a list of names")
    assert isinstance(roles, list) and isinstance(scopes, list)
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise UsageError(f"{where}: {key}: unknown role {unknown[0]!r} (one of {', '.join(ROLES)})")
    return Grant.of(roles, scopes)


def _principal(value: str, where: str) -> str:
    if not is_principal(value):
        raise UsageError(f"{where}: {value!r} is not a principal such as user:alice")
    return value


class StoredTokens:
    """Whether the store holds tokens: asked until it does, then remembered (a token row is
    never deleted, and a store that has held one requires tokens from then on)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._seen = False

    def configured(self) -> bool:
        if not self._seen:
            self._seen = self._store.tokens.any()
        return self._seen


def tokens_configured(tokens: TokenTable, stored: StoredTokens | None) -> bool:
    """Whether tokens are configured (a file, the authority's, the store's): then even
    ``--insecure-no-auth`` serves nobody without one."""
    return bool(tokens) or (stored is not None and stored.configured())


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def identify(
    tokens: TokenTable,
    authorization: str | None,
    *,
    store: Store | None = None,
    insecure: bool = False,
    stored: StoredTokens | None = None,
    local_operator: str | None = None,
) -> Caller:
    """The caller for an ``Authorization`` header value that is not the local operator's
    secret, or a 401 :class:`ApiError`.

    ``insecure`` (``--insecure-no-auth``) serves a caller without a token as ``user:local``
    when no token is configured, never as a local connection; ``local_operator`` says where
    the local operator's secret is, when this server serves one (for the refusal's hint).
    """
    if stored is None and store is not None:
        stored = StoredTokens(store)
    configured = tokens_configured(tokens, stored)
    scheme, _, token = (authorization or "").partition(" ")
    if not token.strip() and not configured and insecure:
        return Caller(LOCAL_OPERATOR, False, FULL, False)
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", _without_token(configured, local_operator))
    found = tokens.lookup(token.strip())
    if store is not None:
        found = _stored(store, token.strip(), found)
    if found is None:
        raise ApiError(401, "unauthorized", "unknown token")
    return Caller(found[0], True, found[1], False)


def _without_token(configured: bool, local_operator: str | None) -> str:
    if local_operator is not None:
        return f"a bearer token is required (the local operator's: {local_operator})"
    if configured:
        return (
            "a bearer token is required: the CLI sends $OPENSEAL_TOKEN or the one in "
            "--token-file; an administrator makes one with `openseal tokens create`"
        )
    return (
        "a bearer token is required: this server has none yet and serves no local operator; "
        "create one (`openseal tokens create`), or start it with --local-operator"
    )


def _stored(store: Store, token: str, found: tuple[str, Grant] | None) -> tuple[str, Grant] | None:
    row = store.tokens.by_hash(token_sha256(token))
    if row is None:
        return found
    state = row.state(store.now())
    if state != "active":
        raise ApiError(401, "unauthorized", f"this token is {state}")
    grant = Grant.of(row.roles, row.scopes)
    if found is not None and found[0] == row.principal:
        grant = grant.union(found[1])
    return row.principal, grant


#: the scheme the OpenAPI document declares for every operation; the header itself is read and
#: refused (with the one error shape, not FastAPI's) by :func:`identify`
BEARER = HTTPBearer(
    scheme_name="bearer",
    auto_error=False,
    description="A token from `openseal tokens create` (or a token file), or the local "
    "operator's per-start secret on a server started with `--local-operator`.",
)


def caller(
    request: Request,
    _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
) -> Caller:
    """FastAPI dependency: the calling principal."""
    from openseal.api.state import state_of

    local = local_operator_of(request)
    if local is not None:
        return local
    state = state_of(request)
    settings = state.settings
    return identify(
        state.tokens,
        request.headers.get("authorization"),
        store=state.store,
        insecure=settings.insecure_no_auth,
        stored=state.stored_tokens,
        local_operator=_secret_hint(request) if settings.local else None,
    )


def local_operator_of(request: Request) -> Caller | None:
    """The local operator, when the request presents this start's secret (as a bearer token,
    else as the console's cookie) and may use it here (else the refusal); None otherwise."""
    from openseal.api.local import refuse_unless_local
    from openseal.api.state import state_of

    settings = state_of(request).settings
    operator = settings.local_operator
    if operator is None or not settings.local:
        return None
    scheme, _, token = (request.headers.get("authorization") or "").partition(" ")
    by_cookie = not (scheme.lower() == "bearer" and token.strip())
    presented = request.cookies.get(cookie_name(server_port(request))) if by_cookie else token
    if not operator.matches(presented):
        return None
    refuse_unless_local(request, settings.trusted_proxies, by_cookie=by_cookie)
    return Caller(LOCAL_OPERATOR, False, FULL, True)


def server_port(connection: HTTPConnection) -> int:
    """The port this server listens on, as the connection was accepted."""
    server = connection.scope.get("server")
    return int(server[1]) if server and server[1] is not None else 0


def _secret_hint(request: Request) -> str:
    name = secret_file(Path("."), server_port(request)).name
    return f"{name} in the server's home, or the console URL `openseal serve` printed"
