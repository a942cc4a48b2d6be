"""Flow control: a call in flight may be a model's tool call, held by its claim.

- ``capacity_calls.epoch``: set for a read a turn calls (its row's ``action_id`` is then the
  call's own id): the slot counts while the run is running at that epoch, as a claim's slot
  does, and is given back by the transaction that records the call's result. NULL for an
  action's call, which counts while the action's outcome is open.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

SUMMARY = "add capacity_calls.epoch: a tool call's slot counts while its claim holds the run"
LOCKS = "brief"


def upgrade() -> None:
    op.add_column("capacity_calls", sa.Column("epoch", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("capacity_calls", "epoch")
