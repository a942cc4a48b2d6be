"""Statements more than one part of the store runs: a deployment's active version, a version by
digest, a trigger's oldest queued firing, the runs a worker may claim, a page of the newest
runs (also compiled ahead for the reads without SQLAlchemy,
:mod:`openseal.runtime.store.tables.prepared_reads`), and the hash an objective's idempotency
key promises.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.canonical import canonical_json
from openseal.runtime.statuses import WAITING_RUN_STATUSES, RunStatus
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import ListQuery, newest_first, workflow_digests

runs = schema.runs
versions = schema.definition_versions
deployments = schema.deployments

#: the active digest of deployment ``:p_name``
ACTIVE_DIGEST = sa.select(deployments.c.active_digest).where(
    deployments.c.name == sa.bindparam("p_name")
)
#: the id of the recovery in progress (none: the store is not in recovery mode), for a statement
#: that reads it with what it reads anyway (invariant 18: nothing is claimed or sent then)
ACTIVE_RECOVERY = (
    sa.select(schema.recoveries.c.id)
    .where(schema.recoveries.c.finished_at.is_(None))
    .order_by(schema.recoveries.c.id)
    .limit(1)
)
#: the version ``:p_digest``
VERSION = sa.select(versions).where(versions.c.digest == sa.bindparam("p_digest"))


def oldest_queued_firing(trigger_name: str) -> sa.Select[Any]:
    """The oldest firing of trigger ``trigger_name`` waiting in its queue (at most one row)."""
    firings = schema.trigger_firings
    return (
        sa.select(firings)
        .where(firings.c.trigger_name == trigger_name, firings.c.outcome == "queued")
        .order_by(firings.c.occurred_at, firings.c.id)
        .limit(1)
    )


def runnable(now: datetime | sa.BindParameter[Any]) -> sa.ColumnElement[bool]:
    """Runs a worker may claim now: queued, abandoned (lease expired) or due to wake."""
    return sa.or_(runs.c.status == RunStatus.QUEUED, *_back(now))


def _back(
    now: datetime | sa.BindParameter[Any], *only: sa.ColumnElement[bool]
) -> tuple[sa.ColumnElement[bool], ...]:
    """The runs not queued that a worker may claim now (and ``only``, in each term, so that
    each stays a look along an index): abandoned (lease expired) or due to wake (few, unlike
    the queued runs of a backlog)."""
    return (
        sa.and_(runs.c.status == RunStatus.RUNNING, runs.c.lease_expires_at < now, *only),
        # One bound literal per status rather than an expanding list, so the statement needs no
        # rewriting at execution time (see :mod:`openseal.runtime.store.db.fastsql`).
        sa.and_(
            runs.c.status.in_([sa.literal(str(s)) for s in sorted(WAITING_RUN_STATUSES)]),
            runs.c.wake_at <= now,
            *only,
        ),
    )


def first_runnable(
    now: datetime | sa.BindParameter[Any], *only: sa.ColumnElement[bool]
) -> sa.ColumnElement[bool]:
    """The runs among :func:`runnable` (and ``only``) of which the first in claim order (higher
    priority, then least recently changed, then id) is the first of all runnable: the first
    queued run, and the few not queued, so a claim's look reads a few rows, not the backlog
    (SQLite's planner sorts every row an ``OR`` of indexes selects: a look at :func:`runnable`
    reads and sorts every queued run). The queued run is found along ``ix_runs_claim_queued``
    (its highest priority, then in order within it). For SQLite only, whose claim holds the
    write lock: a claim on PostgreSQL skips the rows other claims lock, and that first queued
    run may be one of them."""
    queued = sa.and_(runs.c.status == RunStatus.QUEUED, *only)
    top = (
        sa.select(runs.c.priority)
        .where(queued)
        .order_by(runs.c.priority.desc())
        .limit(1)
        .scalar_subquery()
    )
    first = (
        sa.select(runs.c.id)
        .where(queued, runs.c.priority == top)
        .order_by(runs.c.updated_at, runs.c.id)
        .limit(1)
        .scalar_subquery()
    )
    return sa.or_(runs.c.id == first, *_back(now, *only))


def newest_runs(query: ListQuery, *, objective_id: str | None = None) -> sa.Select[Any]:
    """The page of runs ``query`` asks for, newest first (also read without SQLAlchemy on
    SQLite: :mod:`openseal.runtime.store.sqlite_reads`)."""
    stmt = newest_first(sa.select(runs), runs, query)
    if query.workflow is not None:
        stmt = stmt.where(runs.c.workflow_digest.in_(workflow_digests(query.workflow)))
    if query.scopes is not None:
        stmt = stmt.where(runs.c.scope.in_(list(query.scopes)))
    if objective_id is not None:
        stmt = stmt.where(runs.c.objective_id == objective_id)
    return stmt


def request_hash(
    project: str,
    workflow_name: str,
    inputs: dict[str, Any],
    goal: str | None = None,
    priority: int | None = None,
    draft: bool = False,
) -> str:
    """What an idempotency key promises: the same project, workflow, inputs, goal, priority
    and draft (the last three only when given, so earlier keys keep their hashes)."""
    document: dict[str, Any] = {"project": project, "workflow": workflow_name, "inputs": inputs}
    if goal is not None:
        document["goal"] = goal
    if priority is not None:
        document["priority"] = priority
    if draft:
        document["draft"] = True
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
