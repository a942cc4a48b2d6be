"""Dependency groups: the child runs a ``spawn`` state starts and the rule that joins them.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 00:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SUMMARY = "create the dependency-group tables"
LOCKS = "none"


def upgrade() -> None:
    op.create_table(
        "dependency_groups",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("parent_run_id", sa.String(length=32), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("state", sa.String(length=200), nullable=False),
        sa.Column("visit", sa.Integer(), nullable=False),
        sa.Column("join_rule", sa.String(length=16), nullable=False),
        sa.Column("needed", sa.Integer(), nullable=False),
        sa.Column("detach", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("deadline", sa.Float(precision=53), nullable=True),
        sa.Column("created_at", sa.Float(precision=53), nullable=False),
        sa.Column("settled_at", sa.Float(precision=53), nullable=True),
        sa.UniqueConstraint("parent_run_id", "state", "visit", name="uq_dependency_groups_visit"),
    )
    op.create_index("ix_dependency_groups_parent_run_id", "dependency_groups", ["parent_run_id"])
    op.create_table(
        "dependency_members",
        sa.Column("run_id", sa.String(length=32), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column(
            "group_id",
            sa.String(length=32),
            sa.ForeignKey("dependency_groups.id"),
            nullable=False,
        ),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("workflow", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=True),
    )
    op.create_index("ix_dependency_members_group_id", "dependency_members", ["group_id"])


def downgrade() -> None:
    op.drop_index("ix_dependency_members_group_id", table_name="dependency_members")
    op.drop_table("dependency_members")
    op.drop_index("ix_dependency_groups_parent_run_id", table_name="dependency_groups")
    op.drop_table("dependency_groups")
