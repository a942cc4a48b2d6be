"""An archive finds its candidates by an index of their own.

- ``ix_runs_ended_roots``: ended runs started by no other run (``parent_run_id`` NULL, status
  ``completed``, ``failed`` or ``canceled``) by when they ended (``updated_at``, ``id``),
  partial, so it holds only what an archive may take. ``openseal db archive`` reads its
  candidates oldest first from it instead of scanning every run and sorting them.

On PostgreSQL the index is built ``CONCURRENTLY`` (migrations/online.py): workers keep writing
runs while it is built.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07 10:25:00
"""

from __future__ import annotations

from openseal.runtime.store.tables.migrations import online

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

SUMMARY = "index ended root runs in archive order (ix_runs_ended_roots), built concurrently"
LOCKS = "none"

# as openseal.runtime.store.tables.schema.ENDED_ROOTS spells it (a migration keeps its own copy)
ENDED_ROOTS = "parent_run_id IS NULL AND status IN ('completed', 'failed', 'canceled')"


def upgrade() -> None:
    online.create_index("ix_runs_ended_roots", "runs", ["updated_at", "id"], where=ENDED_ROOTS)


def downgrade() -> None:
    online.drop_index("ix_runs_ended_roots", "runs")
