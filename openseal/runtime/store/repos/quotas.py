"""The quotas repository: what each scope used of its quotas, window by window.

A quota's key is ``quota:<scope>:<measure>:<period>`` (its setting is an operator's, kept by
:mod:`.capacity`); its usage is one row per window (``2026-12-07`` for a day, ``2026-12`` for
a month, by the store's clock in UTC). Usage is added in the transaction that consumes it —
a run's first claim, a model call's or a tool call's reservation and settlement — by one
upsert that locks the row and returns the total, so counting is exact across processes on
both backends. Rows of windows gone by are history: nothing reads them to decide.

The lock order (invariant 15): a quota's row is locked after the run's row and after any
concurrency key's lock the same transaction takes; among quotas, in key order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from openseal.runtime.store.db import fastsql
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

usage = schema.quota_usage


class Quotas(Repository):
    """``store.quotas``: each scope's usage of its quotas, by window."""

    def add(self, conn: sa.Connection, key: str, window: str, amount: int) -> int:
        """Add ``amount`` (it may be negative: a reservation given back) to ``key``'s usage in
        ``window``, locking its row until ``conn`` commits; the usage after."""
        (row,) = fastsql.execute(
            conn, self._upsert(), {"p_key": key, "p_window": window, "p_amount": int(amount)}
        )
        return int(next(iter(row.values())))

    def _upsert(self) -> Any:
        built: Any = getattr(self, "_built", None)
        if built is not None:
            return built
        insert = postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert
        amount = sa.bindparam("p_amount", type_=sa.BigInteger)
        stmt = insert(usage).values(
            key=sa.bindparam("p_key", type_=usage.c.key.type),
            window=sa.bindparam("p_window", type_=usage.c.window.type),
            used=amount,
        )
        self._built = stmt.on_conflict_do_update(
            index_elements=[usage.c.key, usage.c.window], set_={"used": usage.c.used + amount}
        ).returning(usage.c.used)
        return self._built

    def used(self, conn: sa.Connection, windows: Iterable[tuple[str, str]]) -> dict[str, int]:
        """What each ``(key, window)`` used, by key (0: nothing yet)."""
        wanted = list(windows)
        if not wanted:
            return {}
        condition = sa.or_(*(sa.and_(usage.c.key == k, usage.c.window == w) for k, w in wanted))
        found = {
            str(row.key): int(row.used)
            for row in conn.execute(sa.select(usage.c.key, usage.c.used).where(condition))
        }
        return {key: found.get(key, 0) for key, _ in wanted}
