"""The retention settings repository: how long each scope's ended runs stay in the live store,
as operators set it (``openseal scopes set-retention``). A workflow's own period is part of its
definition; which period applies is decided above (openseal.runtime.lifecycle.retention)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

table = schema.retention_settings


@dataclass(frozen=True)
class RetentionSetting:
    """One scope's retention: its ended runs stay live ``keep_ended_runs`` seconds."""

    scope: str
    keep_ended_runs: float
    updated_by: str
    updated_at: datetime


class RetentionSettings(Repository):
    """``store.retention``: the scopes' retention settings."""

    def all(self, conn: sa.Connection) -> dict[str, RetentionSetting]:
        """Every scope's setting, by scope."""
        rows = conn.execute(sa.select(table).order_by(table.c.scope)).mappings()
        return {row["scope"]: RetentionSetting(**row) for row in rows}

    def set(
        self, conn: sa.Connection, scope: str, keep_ended_runs: float, *, by: str, now: datetime
    ) -> RetentionSetting:
        """Set ``scope``'s retention (replacing what it was)."""
        conn.execute(sa.delete(table).where(table.c.scope == scope))
        setting = RetentionSetting(scope, keep_ended_runs, by, now)
        conn.execute(sa.insert(table).values(**setting.__dict__))
        return setting

    def remove(self, conn: sa.Connection, scope: str) -> bool:
        """Remove ``scope``'s setting; False when it had none."""
        return conn.execute(sa.delete(table).where(table.c.scope == scope)).rowcount > 0
