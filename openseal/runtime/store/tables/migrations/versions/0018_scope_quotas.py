"""Quotas per scope and a scope's ready-queue depth.

- ``capacity_settings`` gains ``quota`` and ``when_over`` (a quota's size, and whether work
  over it waits or is refused: rows keyed ``quota:<scope>:<measure>:<period>``) and
  ``max_queued`` (a scope's ready-queue depth: rows keyed ``scope:<name>``);
- ``quota_usage``: what a scope used of one quota in one window (a day, a month), counted in
  the transactions that consume it;
- ``ix_runs_scope_status``: a scope's queued runs, counted at the door.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-07 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from openseal.runtime.store.tables.migrations import online

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SUMMARY = "add quotas per scope (settings and usage by window) and a scope's ready-queue depth"
LOCKS = "brief"


def upgrade() -> None:
    with op.batch_alter_table("capacity_settings") as batch:
        batch.add_column(sa.Column("quota", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("when_over", sa.String(16), nullable=True))
        batch.add_column(sa.Column("max_queued", sa.Integer, nullable=True))
    op.create_table(
        "quota_usage",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("window", sa.String(16), primary_key=True),
        sa.Column("used", sa.BigInteger, nullable=False),
    )
    online.create_index("ix_runs_scope_status", "runs", ["scope", "status"])


def downgrade() -> None:
    online.drop_index("ix_runs_scope_status", "runs")
    op.drop_table("quota_usage")
    with op.batch_alter_table("capacity_settings") as batch:
        batch.drop_column("max_queued")
        batch.drop_column("when_over")
        batch.drop_column("quota")
