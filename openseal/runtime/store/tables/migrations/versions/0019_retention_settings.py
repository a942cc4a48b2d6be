"""A scope's retention is an operator setting kept in the store.

- ``retention_settings``: per scope, how long its ended runs stay in the live store before an
  archive may take them (seconds), and who set it when.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07 09:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

SUMMARY = "add the retention_settings table: how long each scope's ended runs stay live"
LOCKS = "none"

# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "retention_settings",
        sa.Column("scope", sa.String(length=100), nullable=False),
        sa.Column("keep_ended_runs", sa.Float(precision=53), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("scope"),
    )


def downgrade() -> None:
    op.drop_table("retention_settings")
