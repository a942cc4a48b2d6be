"""Governed actions: proposals, approvals, actions and spend reservations.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SUMMARY = "create the tables of governed actions (proposals, approvals, actions, spend)"
LOCKS = "none"

# Epoch seconds in a double, as in 0001 (openseal.runtime.store.tables.schema.UtcTimestamp).
TIMESTAMP = sa.Float(precision=53)
ID = sa.String(length=32)
NAME = sa.String(length=200)
DIGEST = sa.String(length=64)
STATUS = sa.String(length=32)


def _indexes(table: str, *columns: str) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for column in columns:
            batch_op.create_index(batch_op.f(f"ix_{table}_{column}"), [column], unique=False)


def upgrade() -> None:
    op.create_table(
        "proposals",
        sa.Column("id", ID, nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("state", NAME, nullable=False),
        sa.Column("hash", DIGEST, nullable=False),
        sa.Column("artifact_digest", DIGEST, nullable=False),
        sa.Column("skill", NAME, nullable=False),
        sa.Column("skill_digest", sa.String(length=80), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "hash", name="uq_proposals_run_hash"),
    )
    _indexes("proposals", "run_id", "hash")

    op.create_table(
        "approvals",
        sa.Column("id", ID, nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("proposal_id", ID, nullable=False),
        sa.Column("proposal_hash", DIGEST, nullable=False),
        sa.Column("proposal_name", NAME, nullable=False),
        sa.Column("state", NAME, nullable=False),
        sa.Column("approvers", sa.JSON(), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("status", STATUS, nullable=False),
        sa.Column("on_timeout", sa.String(length=16), nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("decision", sa.String(length=32), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=True),
        sa.Column("decided_hash", DIGEST, nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("decided_at", TIMESTAMP, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.ForeignKeyConstraint(["proposal_id"], ["proposals.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    _indexes("approvals", "run_id", "proposal_hash", "status")

    op.create_table(
        "actions",
        sa.Column("id", ID, nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("proposal_id", ID, nullable=False),
        sa.Column("proposal_hash", DIGEST, nullable=False),
        sa.Column("proposal_name", NAME, nullable=False),
        sa.Column("skill", NAME, nullable=False),
        sa.Column("state", NAME, nullable=True),
        sa.Column("status", STATUS, nullable=False),
        sa.Column("approval_id", ID, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("admitted_at", TIMESTAMP, nullable=True),
        sa.Column("dispatched_at", TIMESTAMP, nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("history", sa.JSON(), nullable=False),
        sa.Column("resolution", sa.JSON(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.ForeignKeyConstraint(["proposal_id"], ["proposals.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    _indexes("actions", "run_id", "status")

    op.create_table(
        "spend_reservations",
        sa.Column("id", ID, nullable=False),
        sa.Column("action_id", ID, nullable=False),
        sa.Column("run_id", ID, nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("amount", sa.Float(precision=53), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("status", STATUS, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["action_id"], ["actions.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    _indexes("spend_reservations", "action_id", "scope")


def downgrade() -> None:
    for table, columns in (
        ("spend_reservations", ("action_id", "scope")),
        ("actions", ("run_id", "status")),
        ("approvals", ("run_id", "proposal_hash", "status")),
        ("proposals", ("run_id", "hash")),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.drop_index(batch_op.f(f"ix_{table}_{column}"))
        op.drop_table(table)
