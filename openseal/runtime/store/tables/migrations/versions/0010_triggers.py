"""Triggers: operators' status per trigger deployment, and one firing row per occurrence.

- ``trigger_states``: ``active | paused | retired`` set by an operator (no row: active);
- ``trigger_firings``: unique on ``(trigger_name, occurrence_key)``, so a schedule occurrence
  or an inbound event starts at most one objective however many workers look at it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 21:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SUMMARY = "create the trigger tables"
LOCKS = "none"

TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "trigger_states",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("since", TIMESTAMP, nullable=True),
        sa.Column("changed_by", sa.String(length=200), nullable=False),
        sa.Column("changed_at", TIMESTAMP, nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "trigger_firings",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("trigger_name", sa.String(length=200), nullable=False),
        sa.Column("trigger_digest", sa.String(length=64), nullable=False),
        sa.Column("occurrence_key", sa.String(length=240), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("occurred_at", TIMESTAMP, nullable=False),
        sa.Column("inbound_event_id", sa.String(length=32), nullable=True),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("objective_id", sa.String(length=32), nullable=True),
        sa.Column("inputs", sa.JSON(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("recorded_at", TIMESTAMP, nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(["inbound_event_id"], ["inbound_events.id"]),
        sa.ForeignKeyConstraint(["objective_id"], ["objectives.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_trigger_firings_occurrence",
        "trigger_firings",
        ["trigger_name", "occurrence_key"],
        unique=True,
    )
    op.create_index(
        "ix_trigger_firings_trigger_at", "trigger_firings", ["trigger_name", "occurred_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_trigger_firings_trigger_at", table_name="trigger_firings")
    op.drop_index("uq_trigger_firings_occurrence", table_name="trigger_firings")
    op.drop_table("trigger_firings")
    op.drop_table("trigger_states")
