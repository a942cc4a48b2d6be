"""``store.health``: what the store says about the system right now, for probes and metrics.

:meth:`Health.snapshot` reads, in one short transaction, everything ``GET /metrics`` reports
from the store, for every scope or some (runs by status, the ready queue, open actions and
approvals, spend);
:meth:`Health.readiness` says whether the database answers and its schema is the one this
openseal needs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa

from openseal.runtime.statuses import ActionStatus, ApprovalStatus
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import migrations, schema
from openseal.runtime.store.tables.statements import runnable

runs, actions, approvals = schema.runs, schema.actions, schema.approvals
reservations, events = schema.spend_reservations, schema.events

#: event type of an operator's intervention on a run
INTERVENED = "run.intervened"


@dataclass(frozen=True)
class Backlog:
    """How many rows wait, and for how long the oldest has waited (0 when none)."""

    count: int = 0
    oldest_seconds: float = 0.0


@dataclass(frozen=True)
class Snapshot:
    """What the store holds now, for the metrics endpoint."""

    runs_by_status: dict[str, int] = field(default_factory=dict)
    #: runs a worker may claim now; age from when they became claimable
    ready: Backlog = Backlog()
    #: actions whose outcome is unknown (to be reconciled or resolved by hand)
    unknown_actions: Backlog = Backlog()
    #: approvals waiting for a person's decision
    pending_approvals: Backlog = Backlog()
    #: decided and closed approvals by status (approved, rejected, expired...)
    approvals_by_status: dict[str, int] = field(default_factory=dict)
    #: fenced-off writes of workers whose claim was taken over (stale epochs), all runs
    stale_writes: int = 0
    interventions: int = 0
    #: committed and reserved spend by budget scope (a team or agent, ``run:<id>``) and currency
    spend: dict[tuple[str, str, str], float] = field(default_factory=dict)


def _seconds(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


def _backlog(
    conn: sa.Connection,
    now: datetime,
    since: sa.ColumnElement[datetime],
    where: sa.ColumnElement[bool],
) -> Backlog:
    count, oldest = conn.execute(sa.select(sa.func.count(), sa.func.min(since)).where(where)).one()
    return Backlog(int(count), _seconds(now, oldest))


class Health(Repository):
    """``store.health``: readiness and the numbers ``/metrics`` reads at every scrape."""

    def snapshot(self, scopes: Collection[str] | None = None) -> Snapshot:
        return snapshot(self._store, scopes)

    def readiness(self) -> Readiness:
        return readiness(self._store)


def snapshot(store: StoreBase, scopes: Collection[str] | None = None) -> Snapshot:
    """Every store-derived number of ``/metrics``, read in one transaction: of the runs in
    ``scopes`` (access scopes) and what belongs to them, or of every run (None)."""
    now = store.now()
    mine = sa.true() if scopes is None else runs.c.scope.in_(list(scopes))

    def of_mine(run_id: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        return sa.true() if scopes is None else run_id.in_(sa.select(runs.c.id).where(mine))

    with store.read() as conn:
        by_status: dict[str, int] = dict(conn.execute(
            sa.select(runs.c.status, sa.func.count()).where(mine).group_by(runs.c.status)
        ).all())  # fmt: skip
        # A queued run became claimable when it last changed; a sleeping one when it was due.
        became_ready = sa.func.coalesce(runs.c.wake_at, runs.c.updated_at)
        ready = _backlog(conn, now, became_ready, sa.and_(runnable(now), mine))
        unknown = _backlog(
            conn, now, actions.c.updated_at,
            sa.and_(actions.c.status == ActionStatus.UNKNOWN, of_mine(actions.c.run_id)),
        )  # fmt: skip
        pending = _backlog(
            conn, now, approvals.c.created_at,
            sa.and_(approvals.c.status == ApprovalStatus.PENDING, of_mine(approvals.c.run_id)),
        )  # fmt: skip
        decided: dict[str, int] = dict(conn.execute(
            sa.select(approvals.c.status, sa.func.count())
            .where(approvals.c.status != ApprovalStatus.PENDING, of_mine(approvals.c.run_id))
            .group_by(approvals.c.status)
        ).all())  # fmt: skip
        stale = conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(runs.c.stale_writes), 0)).where(mine)
        )
        interventions = conn.execute(
            sa.select(sa.func.count()).select_from(events)
            .where(events.c.type == INTERVENED, of_mine(events.c.run_id))
        )  # fmt: skip
        spend_rows = conn.execute(
            sa.select(reservations.c.scope, reservations.c.currency, reservations.c.status,
                      sa.func.sum(reservations.c.amount))
            .where(reservations.c.status.in_(["reserved", "committed"]),
                   of_mine(reservations.c.run_id))
            .group_by(reservations.c.scope, reservations.c.currency, reservations.c.status)
        ).all()  # fmt: skip
        stale_writes, intervened = int(stale.scalar_one()), int(interventions.scalar_one())
    return Snapshot(
        runs_by_status={str(k): int(v) for k, v in by_status.items()},
        ready=ready,
        unknown_actions=unknown,
        pending_approvals=pending,
        approvals_by_status={str(k): int(v) for k, v in decided.items()},
        stale_writes=stale_writes,
        interventions=intervened,
        spend={(str(s), str(c), str(st)): float(a) for s, c, st, a in spend_rows},
    )


@dataclass(frozen=True)
class Readiness:
    ok: bool
    #: ``database`` and ``migrations``: "ok" or why not
    checks: dict[str, str]


def readiness(store: StoreBase) -> Readiness:
    """Whether the database answers and is at the schema revision this openseal needs."""
    checks: dict[str, str] = {}
    try:
        current = migrations.current_revision(store.engine)
    except sa.exc.SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        checks["database"] = f"unreachable: {reason[0] if reason else type(exc).__name__}"
        checks["migrations"] = "unknown"
        return Readiness(False, checks)
    checks["database"] = "ok"
    head = migrations.head_revision()
    # A schema newer than this code is one a rolling upgrade migrated while this process ran:
    # it stays ready (a migration keeps what the release before it uses), and is replaced next.
    newer = current is not None and current not in migrations.known_revisions()
    current_enough = current == head or newer
    checks["migrations"] = "ok" if current_enough else f"at {current or 'nothing'}, need {head}"
    return Readiness(all(v == "ok" for v in checks.values()), checks)
