"""A run's writes touch fewer indexes: those nothing needs go, those for few runs hold only them.

Every write of a run's status, lease or ``updated_at`` rewrites each index holding one of
them, and a turn writes all three:

- ``ix_runs_claim_lease`` (``status, lease_expires_at``) goes: the claim's look for expired
  leases and the next expiry read the running runs from ``ix_runs_claim_queued`` (``status``
  first), and a worker holds few;
- ``ix_runs_scope`` goes: ``ix_runs_scope_status`` begins with ``scope``;
- ``ix_runs_claim_wake`` becomes ``ix_runs_claim_timer``, partial: only runs with a timer
  (``wake_at IS NOT NULL``), which a claim's ``wake_at <= now`` reads;
- ``ix_runs_wait_name`` becomes ``ix_runs_event_wait``, partial: only runs waiting for an
  event (``wait_name IS NOT NULL``), which a delivery's ``wait_name = name`` reads;
- ``ix_proposals_run_id`` goes: ``uq_proposals_run_hash`` begins with ``run_id``.

On PostgreSQL the indexes are built and dropped ``CONCURRENTLY`` (migrations/online.py):
workers keep writing runs meanwhile, and the new index exists before the old one goes.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 23:20:00
"""

from __future__ import annotations

from openseal.runtime.store.tables.migrations import online

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

SUMMARY = "drop three indexes nothing needs, make runs' timer and event-wait indexes partial"
LOCKS = "none"

# as openseal.runtime.store.tables.schema spells them (a migration keeps its own copy)
HAS_TIMER = "wake_at IS NOT NULL"
WAITS_FOR_EVENT = "wait_name IS NOT NULL"


def upgrade() -> None:
    online.create_index("ix_runs_claim_timer", "runs", ["status", "wake_at"], where=HAS_TIMER)
    online.create_index("ix_runs_event_wait", "runs", ["wait_name"], where=WAITS_FOR_EVENT)
    for name in ("ix_runs_claim_wake", "ix_runs_wait_name", "ix_runs_claim_lease", "ix_runs_scope"):
        online.drop_index(name, "runs")
    online.drop_index("ix_proposals_run_id", "proposals")


def downgrade() -> None:
    online.create_index("ix_proposals_run_id", "proposals", ["run_id"])
    online.create_index("ix_runs_scope", "runs", ["scope"])
    online.create_index("ix_runs_claim_lease", "runs", ["status", "lease_expires_at"])
    online.create_index("ix_runs_wait_name", "runs", ["wait_name"])
    online.create_index("ix_runs_claim_wake", "runs", ["status", "wake_at"])
    online.drop_index("ix_runs_event_wait", "runs")
    online.drop_index("ix_runs_claim_timer", "runs")
