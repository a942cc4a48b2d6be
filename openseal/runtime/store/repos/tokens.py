"""The access-token repository: principals' bearer tokens, kept as their sha256 only.

A token row names its principal, the roles and scopes it grants, when it was made and by
whom, and when it expires or was revoked. Revoking keeps the row (the record of who could do
what); a revoked or expired token identifies nobody.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import new_id
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

table = schema.access_tokens


@dataclass(frozen=True)
class AccessToken:
    """One token as stored (never the token itself)."""

    id: str
    principal: str
    token_sha256: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    note: str | None
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    revoked_by: str | None

    @classmethod
    def from_row(cls, row: Any) -> AccessToken:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["roles"] = tuple(row["roles"])
        values["scopes"] = tuple(row["scopes"])
        return cls(**values)

    def state(self, now: datetime) -> str:
        """``active``, ``expired`` or ``revoked``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


class Tokens(Repository):
    """``store.tokens``: bearer tokens by the sha256 of their value."""

    def create(
        self,
        principal: str,
        token_sha256: str,
        *,
        roles: tuple[str, ...],
        scopes: tuple[str, ...],
        created_by: str,
        expires_at: datetime | None = None,
        note: str | None = None,
    ) -> AccessToken:
        token = AccessToken(
            id=new_id(), principal=principal, token_sha256=token_sha256, roles=roles,
            scopes=scopes, note=note, created_by=created_by, created_at=self._store.now(),
            expires_at=expires_at, revoked_at=None, revoked_by=None,
        )  # fmt: skip
        row = dict(token.__dict__, roles=list(roles), scopes=list(scopes))
        with self._store.write() as conn:
            conn.execute(sa.insert(table).values(**row))
        return token

    def by_hash(self, token_sha256: str) -> AccessToken | None:
        """The token whose value hashes to ``token_sha256``, whatever its state."""
        with self._store.read() as conn:
            row = (
                conn.execute(sa.select(table).where(table.c.token_sha256 == token_sha256))
                .mappings()
                .one_or_none()
            )
        return None if row is None else AccessToken.from_row(row)

    def any(self) -> bool:
        """Whether the store has ever held a token (a revoked one counts: once a store uses
        tokens, revoking the last one does not open it to anonymous callers)."""
        with self._store.read() as conn:
            return conn.execute(sa.select(table.c.id).limit(1)).first() is not None

    def list(self, *, principal: str | None = None) -> list[AccessToken]:
        """Every token, oldest first (of one principal if given)."""
        stmt = sa.select(table).order_by(table.c.id)
        if principal is not None:
            stmt = stmt.where(table.c.principal == principal)
        with self._store.read() as conn:
            return [AccessToken.from_row(row) for row in conn.execute(stmt).mappings()]

    def revoke(self, token_id: str, by: str) -> AccessToken:
        """Revoke the token with ``token_id`` (a revoked one stays as it was)."""
        with self._store.write() as conn:
            row = (
                conn.execute(sa.select(table).where(table.c.id == token_id))
                .mappings()
                .one_or_none()
            )
            if row is None:
                raise NotFound(f"token {token_id} not found")
            token = AccessToken.from_row(row)
            if token.revoked_at is None:
                now = self._store.now()
                conn.execute(
                    sa.update(table)
                    .where(table.c.id == token_id)
                    .values(revoked_at=now, revoked_by=by)
                )
                token = replace(token, revoked_at=now, revoked_by=by)
        return token
