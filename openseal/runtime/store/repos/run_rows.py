"""A run's row read in the caller's transaction, and the lock every writer that touches a run
takes first (the store's one lock order, invariant 15): what each repository that works on
something of a run reads the run through, instead of calling the runs repository."""

from __future__ import annotations

import sqlalchemy as sa

from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run


def load_run(db: StoreBase, conn: sa.Connection, run_id: str, *, lock: bool = False) -> Run:
    """Run ``run_id`` read in the caller's transaction; ``lock`` takes its row lock first (the
    first lock of any writer that touches the run)."""
    stmt = sa.select(schema.runs).where(schema.runs.c.id == run_id)
    if lock:
        stmt = db.for_update(stmt)
    row = conn.execute(stmt).mappings().one_or_none()
    if row is None:
        raise NotFound(f"run {run_id} not found")
    return Run.from_row(row)
