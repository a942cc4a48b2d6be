"""Recovery mode: a durable marker that a store was restored from a backup.

- ``recoveries``: one row per restore (or per ``openseal db recovery start``); while a row
  has no ``finished_at`` the store is in recovery mode and workers claim nothing.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 06:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SUMMARY = "add the recoveries table: recovery mode of a store restored from a backup"
LOCKS = "none"

TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "recoveries",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("backup_at", TIMESTAMP, nullable=True),
        sa.Column("started_by", sa.String(length=200), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("checked_at", TIMESTAMP, nullable=True),
        sa.Column("finished_by", sa.String(length=200), nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("recoveries")
