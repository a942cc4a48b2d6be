"""Governed definition changes: change proposals, their reviews and their events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SUMMARY = "create the change-proposal tables and their indexes"
LOCKS = "none"

# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)
ID = sa.String(length=32)


def upgrade() -> None:
    op.create_table(
        "change_proposals",
        sa.Column("id", ID, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("content_key", sa.String(length=64), nullable=False),
        sa.Column("targets", sa.JSON(), nullable=False),
        sa.Column("base", sa.JSON(), nullable=False),
        sa.Column("policy", sa.JSON(), nullable=False),
        sa.Column("diff", sa.JSON(), nullable=False),
        sa.Column("risk_widening", sa.Boolean(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("decision", sa.JSON(), nullable=True),
        sa.Column("superseded_by", ID, nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("last_event_seq", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.Column("activated_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("change_proposals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_change_proposals_status"), ["status"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_change_proposals_content_key"), ["content_key"], unique=False
        )

    op.create_table(
        "change_proposal_reviews",
        sa.Column("id", ID, nullable=False),
        sa.Column("proposal_id", ID, nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("reviewer", sa.String(length=200), nullable=False),
        sa.Column("verdict", sa.String(length=32), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["proposal_id"], ["change_proposals.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("change_proposal_reviews", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_change_proposal_reviews_proposal_id"), ["proposal_id"], unique=False
        )

    op.create_table(
        "change_proposal_events",
        sa.Column("proposal_id", ID, nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["proposal_id"], ["change_proposals.id"]),
        sa.PrimaryKeyConstraint("proposal_id", "seq"),
    )


def downgrade() -> None:
    op.drop_table("change_proposal_events")
    with op.batch_alter_table("change_proposal_reviews", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_change_proposal_reviews_proposal_id"))
    op.drop_table("change_proposal_reviews")
    with op.batch_alter_table("change_proposals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_change_proposals_content_key"))
        batch_op.drop_index(batch_op.f("ix_change_proposals_status"))
    op.drop_table("change_proposals")
