"""The idempotency repository: the first response the API gave to each principal's
``Idempotency-Key`` (keys are per principal: equal keys of two principals are two keys).

A key is stored once, with a hash of the operation and body it answered; a second writer of
the same key gets the first one's response instead (see ``openseal.api.idempotency``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

table = schema.idempotency_keys


@dataclass(frozen=True)
class StoredResponse:
    operation: str
    request_hash: str
    status_code: int
    response: Any


class Idempotency(Repository):
    """``store.idempotency``: remembered responses by principal and idempotency key."""

    def get(self, principal: str, key: str) -> StoredResponse | None:
        """What ``principal`` was answered for ``key`` (another principal's key is not seen)."""
        stmt = sa.select(table).where(table.c.principal == principal, table.c.key == key)
        with self._store.read() as conn:
            row = conn.execute(stmt).mappings().one_or_none()
        if row is None:
            return None
        return StoredResponse(
            row["operation"], row["request_hash"], row["status_code"], row["response"]
        )

    def remember(
        self,
        key: str,
        operation: str,
        request_hash: str,
        status_code: int,
        response: Any,
        principal: str,
    ) -> StoredResponse:
        """Store the response to ``key``; if another request stored one first, that one wins."""
        try:
            with self._store.write() as conn:
                conn.execute(
                    sa.insert(table).values(
                        key=key, operation=operation, request_hash=request_hash,
                        status_code=status_code, response=response, principal=principal,
                        created_at=self._store.now(),
                    )
                )  # fmt: skip
        except sa.exc.IntegrityError:
            existing = self.get(principal, key)
            if existing is not None:
                return existing
            raise
        return StoredResponse(operation, request_hash, status_code, response)
