"""Inbound events carry the scopes their sender reaches: ``scopes`` (NULL: every scope).

An event delivered with a token for some scopes wakes only runs in them; events stored before
this revision reach every scope, as they did.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SUMMARY = "add inbound_events.scopes (nullable)"
LOCKS = "brief"


def upgrade() -> None:
    with op.batch_alter_table("inbound_events") as batch:
        batch.add_column(sa.Column("scopes", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inbound_events") as batch:
        batch.drop_column("scopes")
