"""Who is calling: optional per-user bearer tokens, else the local operator.

A token file (``--tokens FILE``) maps tokens to principals, so approvals name a real person::

    tokens:
      "sha256:2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90": user:alice
      user:bob: {sha256: 81b637d8fcd2c6da6359e6963113a1170de795e4b725b84d1e0b4cfd9ec58ce9}

A key is the sha256 of a token (hex, ``sha256:`` optional), or a principal with
``{sha256: ...}`` as in the approval authority file; the authority's own ``tokens`` count too.
A plain token as a key is accepted but discouraged (the file then holds the secret itself).

With tokens configured every request must carry ``Authorization: Bearer <token>``; without
them the caller is ``user:local``, which may decide approvals only through a loopback address.
Presented tokens are hashed and compared in constant time against every entry, and are never
logged or echoed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from fastapi import Request

from openseal.api.errors import ApiError
from openseal.errors import UsageError
from openseal.runtime.service import LOCAL_OPERATOR, ApprovalAuthority

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_PRINCIPAL = re.compile(r"^[a-z][a-z0-9_-]*:[^\s:][^\s]*$")


@dataclass(frozen=True)
class TokenTable:
    """sha256 digests of tokens and the principal each stands for."""

    entries: tuple[tuple[bytes, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entries)

    def principal(self, token: str) -> str | None:
        presented = hashlib.sha256(token.encode("utf-8")).digest()
        found = None
        for digest, principal in self.entries:  # no early exit: the time does not tell which
            if hmac.compare_digest(digest, presented):
                found = principal
        return found

    def merged(self, authority: ApprovalAuthority | None) -> TokenTable:
        """This table plus the approval authority's tokens."""
        if authority is None or not authority.tokens:
            return self
        extra = tuple((bytes.fromhex(h), p) for h, p in sorted(authority.tokens.items()))
        return TokenTable(self.entries + extra)


@dataclass(frozen=True)
class Caller:
    """The principal a request acts as; ``via_token`` is False for the local operator."""

    principal: str
    via_token: bool

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
        digest, principal = _entry(str(key), value, where)
        if principal == LOCAL_OPERATOR:
            raise UsageError(
                f"{where}: {LOCAL_OPERATOR} is the local operator; name the person instead"
            )
        entries.append((digest, principal))
    return TokenTable(tuple(entries))


def _entry(key: str, value: object, where: str) -> tuple[bytes, str]:
    if isinstance(value, dict):  # principal: {sha256: ...}, as in the authority file
        digest = str(value.get("sha256", "")).lower().removeprefix("sha256:")
        if not _HEX64.match(digest) or set(value) != {"sha256"}:
            raise UsageError(f"{where}: {key} needs `sha256: <64 hex>`")
        return bytes.fromhex(digest), _principal(key, where)
    if not isinstance(value, str):
        raise UsageError(f"{where}: each token maps to a principal such as user:alice")
    hashed = key.lower().removeprefix("sha256:")
    if _HEX64.match(hashed):
        return bytes.fromhex(hashed), _principal(value, where)
    if len(key) < 16:
        raise UsageError(f"{where}: a plain token must be at least 16 characters")
    return hashlib.sha256(key.encode("utf-8")).digest(), _principal(value, where)


def _principal(value: str, where: str) -> str:
    if not _PRINCIPAL.match(value):
        raise UsageError(f"{where}: {value!r} is not a principal such as user:alice")
    return value


def identify(tokens: TokenTable, authorization: str | None) -> Caller:
    """The caller for an ``Authorization`` header value, or a 401 :class:`ApiError`."""
    if not tokens:
        if authorization:
            raise ApiError(401, "unauthorized", "this server has no tokens configured")
        return Caller(LOCAL_OPERATOR, False)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "a bearer token is required")
    principal = tokens.principal(token.strip())
    if principal is None:
        raise ApiError(401, "unauthorized", "unknown token")
    return Caller(principal, True)


def caller(request: Request) -> Caller:
    """FastAPI dependency: the calling principal."""
    from openseal.api.state import state_of

    return identify(state_of(request).tokens, request.headers.get("authorization"))
