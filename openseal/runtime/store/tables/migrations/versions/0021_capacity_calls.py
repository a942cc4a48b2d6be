"""Flow control: calls in flight to a skill's destination.

- ``capacity_calls``: which action holds a slot of which ``skill:<name>`` key (a skill's
  ``concurrency``), taken in the transaction that marks it dispatched; it counts while the
  action's outcome is open.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 13:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

ID = sa.String(32)
# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

SUMMARY = "add capacity_calls: the calls in flight to a skill's destination, by action"
LOCKS = "none"


def upgrade() -> None:
    op.create_table(
        "capacity_calls",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("action_id", ID, primary_key=True),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("taken_at", TIMESTAMP, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("capacity_calls")
