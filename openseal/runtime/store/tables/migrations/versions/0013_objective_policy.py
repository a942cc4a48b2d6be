"""Objectives say what they are for and how hard they try; runs carry their claim order.

- ``objectives``: ``goal``, ``owner`` (the workflow's owning agent or team), ``priority``,
  ``retry`` (the policy of the version it started on) and ``attempts`` (runs started);
- ``runs``: ``priority`` (its objective's, so a claim orders without a join) and ``attempt``;
- ``ix_runs_claim_queued``: queued runs in claim order.

Objectives and runs stored before this revision get priority 0 and attempt 1, as they had.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

SUMMARY = "add objective policy columns and runs.priority/attempt; index runs in claim order"
LOCKS = "writes"


def upgrade() -> None:
    with op.batch_alter_table("objectives") as batch:
        batch.add_column(sa.Column("goal", sa.Text(), nullable=True))
        batch.add_column(sa.Column("owner", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("priority", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("retry", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="1"))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("priority", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("attempt", sa.Integer(), nullable=False, server_default="1"))
    op.create_index("ix_runs_claim_queued", "runs", ["status", "priority", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_runs_claim_queued", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("attempt")
        batch.drop_column("priority")
    with op.batch_alter_table("objectives") as batch:
        for column in ("attempts", "retry", "priority", "owner", "goal"):
            batch.drop_column(column)
