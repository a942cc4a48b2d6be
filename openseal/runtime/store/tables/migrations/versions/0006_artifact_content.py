"""Artefact bytes in the database: ``artifacts.content``.

With PostgreSQL, workers and servers run on several hosts, so an artefact (a proposal's
canonical bytes) cannot live on the disk of the host that drafted it: from now on its bytes are
stored in its row and verified by digest on every read. SQLite keeps files and leaves the column
NULL. Existing rows keep NULL too; their files are still read where they exist.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SUMMARY = "add artifacts.content (nullable)"
LOCKS = "brief"


def upgrade() -> None:
    op.add_column("artifacts", sa.Column("content", sa.LargeBinary, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("content")
