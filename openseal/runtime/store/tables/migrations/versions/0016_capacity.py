"""Flow control: concurrency slots, runs waiting for capacity, operator settings.

- ``capacity_settings``: a scope's concurrency cap, an agent's or a team's pause, by key;
- ``capacity_limits``: the row a slot's taker locks, one per limit key;
- ``capacity_slots``: which run holds a slot of which key, at which claim's epoch;
- ``capacity_waits``: runs in ``waiting_for_capacity``, by the key they wait for.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07 06:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

ID = sa.String(32)
# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

SUMMARY = (
    "add the flow-control tables: concurrency slots, runs waiting for capacity, operators' settings"
)
LOCKS = "none"

KEY = sa.String(300)


def upgrade() -> None:
    op.create_table(
        "capacity_settings",
        sa.Column("key", KEY, primary_key=True),
        sa.Column("max_slots", sa.Integer, nullable=True),
        sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("updated_by", sa.String(200), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
    )
    op.create_table(
        "capacity_limits",
        sa.Column("key", KEY, primary_key=True),
        sa.Column("max_slots", sa.Integer, nullable=True),
    )
    op.create_table(
        "capacity_slots",
        sa.Column("key", KEY, primary_key=True),
        sa.Column("run_id", ID, primary_key=True),
        sa.Column("epoch", sa.Integer, nullable=False),
        sa.Column("taken_at", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_capacity_slots_run", "capacity_slots", ["run_id"])
    op.create_table(
        "capacity_waits",
        sa.Column("run_id", ID, primary_key=True),
        sa.Column("key", KEY, nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("since", TIMESTAMP, nullable=False),
    )
    op.create_index("ix_capacity_waits_key", "capacity_waits", ["key", "priority", "since"])


def downgrade() -> None:
    op.drop_index("ix_capacity_waits_key", table_name="capacity_waits")
    op.drop_table("capacity_waits")
    op.drop_index("ix_capacity_slots_run", table_name="capacity_slots")
    op.drop_table("capacity_slots")
    op.drop_table("capacity_limits")
    op.drop_table("capacity_settings")
