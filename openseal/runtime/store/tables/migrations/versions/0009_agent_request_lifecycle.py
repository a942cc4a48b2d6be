"""Agent requests get the full lifecycle: a deadline, a lookup by child run, new status names.

``pending`` becomes ``requested`` and ``rejected`` becomes ``declined`` (the names the CLI, the
API and the workflow's ``on "declined"`` use). A request's deadline lives in its own column so
an expiry reads it without parsing the request document; a child run finds its request through
the new index when it ends.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SUMMARY = "add agent_requests.deadline, index child_run_id, rename two request statuses"
LOCKS = "writes"

# Spelled out as in 0001 (epoch seconds in a double), so later schema edits cannot change it.
TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.add_column("agent_requests", sa.Column("deadline", TIMESTAMP, nullable=True))
    op.create_index(
        "ix_agent_requests_child_run_id", "agent_requests", ["child_run_id"], unique=False
    )
    op.execute("UPDATE agent_requests SET status = 'requested' WHERE status = 'pending'")
    op.execute("UPDATE agent_requests SET status = 'declined' WHERE status = 'rejected'")


def downgrade() -> None:
    op.execute("UPDATE agent_requests SET status = 'pending' WHERE status = 'requested'")
    op.execute("UPDATE agent_requests SET status = 'rejected' WHERE status = 'declined'")
    op.drop_index("ix_agent_requests_child_run_id", table_name="agent_requests")
    with op.batch_alter_table("agent_requests") as batch_op:
        batch_op.drop_column("deadline")
