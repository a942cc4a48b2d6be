"""Child runs are found by an index of their own.

- ``ix_runs_children``: the status of the runs that have a parent (``parent_run_id`` set),
  partial, so it holds only child runs. A worker looks for children left running by a cancel
  whose process stopped (openseal.runtime.engine.cascade) among the few child runs not ended,
  not among every waiting run.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

HAS_PARENT = sa.text("parent_run_id IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_runs_children", "runs", ["status"],
        sqlite_where=HAS_PARENT, postgresql_where=HAS_PARENT,
    )  # fmt: skip


def downgrade() -> None:
    op.drop_index("ix_runs_children", table_name="runs")
