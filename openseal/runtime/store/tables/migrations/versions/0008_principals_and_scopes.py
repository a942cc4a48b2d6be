"""Principals, scopes and per-principal keys.

- ``access_tokens``: the sha256 of each bearer token with its principal, roles, scopes,
  expiry and revocation (``openseal tokens``);
- ``scope`` on objectives, runs and change proposals (``default`` for every existing row);
  everything of a run (approvals, actions, events, artefacts, agent requests) is in its run's;
- ``created_by`` on objectives (NULL for objectives created before it was recorded);
- request keys and idempotency keys belong to a principal: objectives are unique on
  ``(created_by, request_key)``, idempotency keys on ``(principal, key)``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SUMMARY = "add principals and scopes: columns on objectives, runs and change proposals, indexes"
LOCKS = "writes"

TIMESTAMP = sa.Float(precision=53)
SCOPE = sa.String(length=100)
#: SQLite reflects 0001's unnamed unique constraint; this names it so it can be dropped
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def upgrade() -> None:
    op.create_table(
        "access_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.Column("revoked_by", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256"),
    )
    op.create_index("ix_access_tokens_principal", "access_tokens", ["principal"])
    sqlite = op.get_bind().dialect.name == "sqlite"
    with op.batch_alter_table("objectives", naming_convention=NAMING) as batch:
        batch.add_column(sa.Column("created_by", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("scope", SCOPE, nullable=False, server_default="default"))
        unique = "uq_objectives_request_key" if sqlite else "objectives_request_key_key"
        batch.drop_constraint(unique, type_="unique")
        batch.create_index("uq_objectives_request_key", ["created_by", "request_key"], unique=True)
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("scope", SCOPE, nullable=False, server_default="default"))
        batch.create_index("ix_runs_scope", ["scope"])
    with op.batch_alter_table("change_proposals") as batch:
        batch.add_column(sa.Column("scope", SCOPE, nullable=False, server_default="default"))
    # Remembered responses were global; they become the principal's that stored them. A new
    # primary key is a new table on SQLite anyway: copy the rows over, the same way on both.
    _idempotency_keys("idempotency_keys_new", ["principal", "key"])
    op.execute(
        "INSERT INTO idempotency_keys_new (principal, key, operation, request_hash, "
        "status_code, response, created_at) SELECT principal, key, operation, request_hash, "
        "status_code, response, created_at FROM idempotency_keys"
    )
    op.drop_table("idempotency_keys")
    op.rename_table("idempotency_keys_new", "idempotency_keys")


def _idempotency_keys(name: str, key: list[str]) -> None:
    op.create_table(
        name,
        sa.Column("principal", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("operation", sa.String(length=200), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint(*key, name=f"pk_{name}"),
    )


def downgrade() -> None:
    _idempotency_keys("idempotency_keys_old", ["key"])
    op.execute(
        "INSERT INTO idempotency_keys_old (principal, key, operation, request_hash, "
        "status_code, response, created_at) SELECT principal, key, operation, request_hash, "
        "status_code, response, created_at FROM idempotency_keys"
    )
    op.drop_table("idempotency_keys")
    op.rename_table("idempotency_keys_old", "idempotency_keys")
    with op.batch_alter_table("change_proposals") as batch:
        batch.drop_column("scope")
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_scope")
        batch.drop_column("scope")
    with op.batch_alter_table("objectives") as batch:
        batch.drop_index("uq_objectives_request_key")
        batch.create_unique_constraint("uq_objectives_request_key", ["request_key"])
        batch.drop_column("scope")
        batch.drop_column("created_by")
    op.drop_index("ix_access_tokens_principal", table_name="access_tokens")
    op.drop_table("access_tokens")
