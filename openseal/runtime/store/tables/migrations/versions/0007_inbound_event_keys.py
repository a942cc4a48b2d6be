"""Inbound events keep the sender's delivery key, unique per event name.

A webhook delivered twice (a sender's retry after a lost acknowledgement) carries the same
event id or ``Idempotency-Key``; the unique index makes the second delivery find the first
instead of being stored and consumed again. Events delivered without a key stay unkeyed (NULLs
never collide).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SUMMARY = "add inbound_events.delivery_key and its unique index"
LOCKS = "writes"


def upgrade() -> None:
    op.add_column("inbound_events", sa.Column("delivery_key", sa.String(200), nullable=True))
    op.create_index(
        "uq_inbound_events_delivery_key",
        "inbound_events",
        ["name", "delivery_key"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_inbound_events_delivery_key", table_name="inbound_events")
    with op.batch_alter_table("inbound_events") as batch_op:
        batch_op.drop_column("delivery_key")
