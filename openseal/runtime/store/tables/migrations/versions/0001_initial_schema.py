"""Initial schema: definitions, deployments, objectives, runs, events, waits, artefacts.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 08:56:30.778869
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SUMMARY = "create the runtime tables (runs, events, objectives, activities, ...)"
LOCKS = "none"

# Timestamps are epoch seconds in a double; openseal.runtime.store.tables.schema.UtcTimestamp
# maps them to aware UTC datetimes. Spelled out here so later schema edits cannot change this
# migration.
TIMESTAMP = sa.Float(precision=53)


def upgrade() -> None:
    op.create_table(
        "artifacts",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("media_type", sa.String(length=200), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )
    op.create_table(
        "definition_versions",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "deployment_activations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("previous_digest", sa.String(length=64), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("change_proposal_id", sa.String(length=32), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["digest"],
            ["definition_versions.digest"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("deployment_activations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deployment_activations_name"), ["name"], unique=False)

    op.create_table(
        "deployments",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("active_digest", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["active_digest"],
            ["definition_versions.digest"],
        ),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "objectives",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("workflow_name", sa.String(length=200), nullable=False),
        sa.Column("workflow_digest", sa.String(length=64), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("request_key", sa.String(length=200), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
        ),
        sa.ForeignKeyConstraint(
            ["workflow_digest"],
            ["definition_versions.digest"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("request_key"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("objective_id", sa.String(length=32), nullable=False),
        sa.Column("parent_run_id", sa.String(length=32), nullable=True),
        sa.Column("workflow_digest", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("current_state", sa.String(length=200), nullable=True),
        sa.Column("waiting", sa.JSON(), nullable=True),
        sa.Column("wait_name", sa.String(length=200), nullable=True),
        sa.Column("paused_from_status", sa.String(length=32), nullable=True),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", TIMESTAMP, nullable=True),
        sa.Column("wake_at", TIMESTAMP, nullable=True),
        sa.Column("last_event_seq", sa.Integer(), nullable=False),
        sa.Column("stale_writes", sa.Integer(), nullable=False),
        sa.Column("budget_used", sa.JSON(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["objective_id"],
            ["objectives.id"],
        ),
        sa.ForeignKeyConstraint(
            ["parent_run_id"],
            ["runs.id"],
        ),
        sa.ForeignKeyConstraint(
            ["workflow_digest"],
            ["definition_versions.digest"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_claim_lease", ["status", "lease_expires_at"], unique=False)
        batch_op.create_index("ix_runs_claim_wake", ["status", "wake_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_objective_id"), ["objective_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_wait_name"), ["wait_name"], unique=False)

    op.create_table(
        "activities",
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("activity_id", sa.String(length=400), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("input_hash", sa.String(length=64), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("run_id", "activity_id"),
    )
    op.create_table(
        "agent_requests",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("caller_run_id", sa.String(length=32), nullable=False),
        sa.Column("callee", sa.String(length=200), nullable=False),
        sa.Column("child_run_id", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("clarification", sa.JSON(), nullable=True),
        sa.Column("review", sa.JSON(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["caller_run_id"],
            ["runs.id"],
        ),
        sa.ForeignKeyConstraint(
            ["child_run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("agent_requests", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_agent_requests_caller_run_id"), ["caller_run_id"], unique=False
        )

    op.create_table(
        "events",
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("run_id", "seq"),
    )
    op.create_table(
        "inbound_events",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("correlation", sa.JSON(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.Column("consumed_by_run_id", sa.String(length=32), nullable=True),
        sa.Column("consumed_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(
            ["consumed_by_run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("inbound_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbound_events_name_consumed", ["name", "consumed_at"], unique=False
        )

    op.create_table(
        "turns",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=200), nullable=False),
        sa.Column("phase", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["runs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "seq", name="uq_turns_run_seq"),
    )


def downgrade() -> None:
    op.drop_table("turns")
    with op.batch_alter_table("inbound_events", schema=None) as batch_op:
        batch_op.drop_index("ix_inbound_events_name_consumed")

    op.drop_table("inbound_events")
    op.drop_table("events")
    with op.batch_alter_table("agent_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agent_requests_caller_run_id"))

    op.drop_table("agent_requests")
    op.drop_table("activities")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_wait_name"))
        batch_op.drop_index(batch_op.f("ix_runs_objective_id"))
        batch_op.drop_index("ix_runs_claim_wake")
        batch_op.drop_index("ix_runs_claim_lease")

    op.drop_table("runs")
    op.drop_table("objectives")
    op.drop_table("deployments")
    with op.batch_alter_table("deployment_activations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deployment_activations_name"))

    op.drop_table("deployment_activations")
    op.drop_table("projects")
    op.drop_table("definition_versions")
    op.drop_table("artifacts")
