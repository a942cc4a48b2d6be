"""Child runs are found by an index of their own.

- ``ix_runs_children``: the status of the runs that have a parent (``parent_run_id`` set),
  partial, so it holds only child runs. A worker looks for children left running by a cancel
  whose process stopped (openseal.runtime.engine.cascade) among the few child runs not ended,
  not among every waiting run.

On PostgreSQL the index is built ``CONCURRENTLY`` (migrations/online.py): workers keep writing
runs while it is built. (Databases that reached this revision before it was built that way
already have the same index.)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 00:00:00
"""

from __future__ import annotations

from openseal.runtime.store.tables.migrations import online

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SUMMARY = "index the status of child runs (ix_runs_children), built concurrently"
LOCKS = "none"


def upgrade() -> None:
    online.create_index("ix_runs_children", "runs", ["status"], where="parent_run_id IS NOT NULL")


def downgrade() -> None:
    online.drop_index("ix_runs_children", "runs")
