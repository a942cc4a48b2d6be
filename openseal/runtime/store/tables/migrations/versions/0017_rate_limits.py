"""Rate limits shared by every worker.

- ``rate_limits``: one row per limit (a model profile's requests and tokens, a skill's
  calls), holding the limit's virtual clock; see openseal.runtime.store.repos.rate_limits.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-07 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

SUMMARY = "create the rate_limits table"
LOCKS = "none"


def upgrade() -> None:
    op.create_table(
        "rate_limits",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("due", sa.Float(precision=53), nullable=False),
        sa.Column("held_until", sa.Float(precision=53), nullable=False),
        sa.Column("updated_at", sa.Float(precision=53), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rate_limits")
