"""The one way a run changes: an UPDATE that bumps the event sequence, plus its event row.

Invariant 1: a run's state change and the event describing it commit together, and each run's
event sequence is gap-free. Both follow from doing them in the same transaction with the
sequence taken from ``runs.last_event_seq`` in the same UPDATE that changes the run — the row
lock (PostgreSQL) or the write lock (SQLite ``BEGIN IMMEDIATE``) orders concurrent appends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime import schema
from openseal.runtime.records import Event, Run
from openseal.runtime.store_errors import NotFound

runs = schema.runs


def change_run(
    conn: sa.Connection,
    run_id: str,
    *,
    event_type: str,
    actor: str,
    payload: dict[str, Any],
    now: datetime,
    values: dict[str, Any] | None = None,
) -> tuple[Run, Event]:
    """Apply ``values`` to the run and append one event describing the change."""
    stmt = (
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            last_event_seq=runs.c.last_event_seq + 1,
            revision=runs.c.revision + 1,
            updated_at=now,
            **(values or {}),
        )
        .returning(*runs.c)
    )
    row = conn.execute(stmt).mappings().one_or_none()
    if row is None:
        raise NotFound(f"run {run_id} not found")
    run = Run.from_row(row)
    event = Event(
        run_id=run_id, seq=run.last_event_seq, type=event_type, actor=actor, payload=payload, at=now
    )
    conn.execute(
        sa.insert(schema.events).values(
            run_id=run_id, seq=event.seq, type=event_type, actor=actor, payload=payload, at=now
        )
    )
    return run, event


def lease_released() -> dict[str, Any]:
    """Column values that drop a run's lease (invariant 5: only a running run holds one)."""
    return {"lease_owner": None, "lease_expires_at": None}


def iso(moment: datetime | None) -> str | None:
    """Datetimes go into event payloads (JSON) as ISO 8601 strings."""
    return None if moment is None else moment.isoformat()
