"""The HTTP API's idempotency keys: stored responses to creates.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SUMMARY = "create the table of remembered API responses (idempotency_keys)"
LOCKS = "none"

# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("operation", sa.String(length=200), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
