"""The recoveries repository: the durable marker of recovery mode (invariant 18).

A store restored from a backup holds a ``recoveries`` row without ``finished_at``: while it
does, workers claim nothing and no action is sent. The row keeps where the store came from
(``source``), the moment its data stops (``backup_at``), and the report of the last
reconciliation pass; finishing stamps it and keeps it, for the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import new_id
from openseal.runtime.store.db import fastsql
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

table = schema.recoveries
#: the recovery in progress (at most one): asked by an idle worker before it claims, so built
#: once and run below SQLAlchemy's per-statement work (``fastsql``); on a run's way the marker
#: is a column of a statement sent anyway (``tables.statements.ACTIVE_RECOVERY``)
ACTIVE = sa.select(table).where(table.c.finished_at.is_(None)).order_by(table.c.id).limit(1)


@dataclass(frozen=True)
class Recovery:
    """One recovery: started by a restore (``reason`` ``restore``), a backup that carries its
    marker (``backup``) or an operator (``operator``, after a restore with other tools)."""

    id: str
    reason: str
    source: str | None
    backup_at: datetime | None
    started_by: str
    started_at: datetime
    report: dict[str, Any] | None
    checked_at: datetime | None
    finished_by: str | None
    finished_at: datetime | None

    @classmethod
    def from_row(cls, row: Any) -> Recovery:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    @property
    def active(self) -> bool:
        return self.finished_at is None


class Recoveries(Repository):
    """``store.recoveries``: whether the store is in recovery mode, and what recovery found."""

    def active(self, conn: sa.Connection | None = None) -> Recovery | None:
        """The recovery in progress, or None when the store is not in recovery mode."""
        if conn is not None:
            rows = fastsql.execute(conn, ACTIVE, {})
        else:
            with self._store.read() as reading:
                rows = fastsql.execute(reading, ACTIVE, {})
        return Recovery.from_row(rows[0]) if rows else None

    def latest(self) -> Recovery | None:
        """The newest recovery, in progress or finished; None when there never was one."""
        with self._store.read() as conn:
            row = conn.execute(sa.select(table).order_by(table.c.id.desc()).limit(1))
            found = row.mappings().first()
        return None if found is None else Recovery.from_row(found)

    def start(
        self,
        conn: sa.Connection,
        *,
        reason: str,
        source: str | None,
        backup_at: datetime | None,
        actor: str,
        now: datetime,
    ) -> Recovery:
        """Enter recovery mode; a recovery already in progress is returned unchanged."""
        current = self.active(conn)
        if current is not None:
            return current
        recovery = Recovery(
            id=new_id(), reason=reason, source=source, backup_at=backup_at, started_by=actor,
            started_at=now, report=None, checked_at=None, finished_by=None, finished_at=None,
        )  # fmt: skip
        conn.execute(sa.insert(table).values(**recovery.__dict__))
        return recovery

    def save_report(
        self, conn: sa.Connection, recovery_id: str, report: dict[str, Any], now: datetime
    ) -> None:
        """Keep what the last reconciliation pass found."""
        conn.execute(
            sa.update(table)
            .where(table.c.id == recovery_id, table.c.finished_at.is_(None))
            .values(report=report, checked_at=now)
        )

    def finish(self, conn: sa.Connection, recovery_id: str, *, actor: str, now: datetime) -> bool:
        """Leave recovery mode; False when that recovery had already finished."""
        done = conn.execute(
            sa.update(table)
            .where(table.c.id == recovery_id, table.c.finished_at.is_(None))
            .values(finished_by=actor, finished_at=now)
        )
        return done.rowcount == 1
