"""The runs repository: reading runs and their event pages, and the operator commands on a
run: pause, resume, intervene, and the run's own part of a cancel.

Each is one transaction with its event, and is refused with ``invalid_status`` when the run's
status does not allow it. Pause and cancel take the run away from an in-flight worker by
bumping the epoch, so that worker's next fenced write is rejected (invariant 3). What a cancel
stops with the run (its requests, approvals, actions, children) is decided above the store,
in :mod:`openseal.runtime.engine.cascade`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.clock import iso
from openseal.runtime.statuses import (
    LIVE_RUN_STATUSES,
    TERMINAL_RUN_STATUSES,
    WAITING_RUN_STATUSES,
    RunStatus,
)
from openseal.runtime.store.db.errors import InvalidStatus, StaleRevision
from openseal.runtime.store.repos.carved_budgets import release_all
from openseal.runtime.store.repos.events import change_run, lease_released
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.repos.run_rows import load_run
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import ListQuery
from openseal.runtime.store.tables.records import Action, Activity, Event, Run, Turn
from openseal.runtime.store.tables.statements import newest_runs

runs = schema.runs
events = schema.events

PAUSABLE = frozenset(
    {RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_FOR_CAPACITY} | WAITING_RUN_STATUSES
)
CANCELABLE = frozenset(LIVE_RUN_STATUSES)
INTERVENABLE = frozenset({RunStatus.PAUSED, RunStatus.NEEDS_ATTENTION})


@dataclass(frozen=True)
class CancelSweep:
    """What a run's cancellation stopped with it in its transaction, for its ``run.canceled``
    event: its open agent requests, pending approvals, its actions (canceled unsent, or as
    they stand), the objective it settled, and the dependency groups' children it spawned."""

    agent_requests: list[str]
    approvals: list[str]
    actions: list[dict[str, Any]]
    objective: dict[str, Any] | None
    spawned: list[str]


def _require(run: Run, allowed: frozenset[RunStatus], verb: str) -> None:
    if run.status not in allowed:
        raise InvalidStatus(f"cannot {verb} run {run.id}: it is {run.status}")


def _check_revision(run: Run, expected: int | None) -> None:
    """Optimistic concurrency: refuse when the run changed since the caller looked at it."""
    if expected is not None and expected != run.revision:
        raise StaleRevision(
            f"run {run.id} is at revision {run.revision}, not {expected}; reload it and try again"
        )


def _in_flight(run: Run) -> str | None:
    """The worker that may be executing the run right now, if any."""
    return run.lease_owner if run.status == RunStatus.RUNNING else None


class Runs(Repository):
    """``store.runs``: reading runs and their events, and the operator commands."""

    def load(self, conn: sa.Connection, run_id: str, *, lock: bool = False) -> Run:
        """Run ``run_id`` read in the caller's transaction; ``lock`` takes its row lock first
        (the first lock of any writer that touches the run, see the package's lock order)."""
        return load_run(self._store, conn, run_id, lock=lock)

    def get(self, run_id: str) -> Run:
        with self._store.read() as conn:
            return self.load(conn, run_id)

    def queued(self, workflow: str, *, up_to: int) -> int:
        """How many runs of ``workflow`` (any of its versions) wait for a worker
        (``queued``), counted up to ``up_to``: a full ready queue is not counted to its end."""
        versions = schema.definition_versions
        waiting = (
            sa.select(runs.c.id)
            .join(versions, versions.c.digest == runs.c.workflow_digest)
            .where(runs.c.status == RunStatus.QUEUED, versions.c.name == workflow)
            .limit(up_to)
            .subquery()
        )
        with self._store.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(waiting)).scalar_one())

    def queued_in_scope(self, scope: str, *, up_to: int) -> int:
        """How many runs of ``scope`` wait for a worker (``queued``), counted up to ``up_to``."""
        waiting = (
            sa.select(runs.c.id)
            .where(runs.c.scope == scope, runs.c.status == RunStatus.QUEUED)
            .limit(up_to)
            .subquery()
        )
        with self._store.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(waiting)).scalar_one())

    def query(
        self,
        status: RunStatus | None = None,
        *,
        limit: int = 100,
        after: str | None = None,
        objective_id: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> tuple[Run, ...]:
        """Runs ordered by id (creation order); page with ``after`` = the last id seen; only
        those in ``scopes`` when given."""
        stmt = sa.select(runs).order_by(runs.c.id).limit(limit)
        if scopes is not None:
            stmt = stmt.where(runs.c.scope.in_(list(scopes)))
        if status is not None:
            stmt = stmt.where(runs.c.status == status)
        if after is not None:
            stmt = stmt.where(runs.c.id > after)
        if objective_id is not None:
            stmt = stmt.where(runs.c.objective_id == objective_id)
        with self._store.read() as conn:
            return tuple(Run.from_row(row) for row in conn.execute(stmt).mappings())

    def newest(self, query: ListQuery, *, objective_id: str | None = None) -> tuple[Run, ...]:
        """One page of runs, newest first (see :class:`ListQuery`)."""
        stmt = newest_runs(query, objective_id=objective_id)
        with self._store.read() as conn:
            return tuple(Run.from_row(row) for row in conn.execute(stmt).mappings())

    def live_by_version(self, workflow: str) -> tuple[tuple[str, int], ...]:
        """How many runs of ``workflow`` (a deployment name) have not ended, per pinned version:
        ``(digest, count)`` pairs, most runs first (then by digest). Runs of every scope count:
        deployments are the catalogue every caller shares."""
        versions = schema.definition_versions
        count = sa.func.count().label("runs")
        stmt = (
            sa.select(runs.c.workflow_digest, count)
            .join(versions, versions.c.digest == runs.c.workflow_digest)
            .where(versions.c.name == workflow, runs.c.status.in_(LIVE_RUN_STATUSES))
            .group_by(runs.c.workflow_digest)
            .order_by(count.desc(), runs.c.workflow_digest)
        )
        with self._store.read() as conn:
            return tuple((str(row[0]), int(row[1])) for row in conn.execute(stmt))

    def events(self, run_id: str, after: int = 0, limit: int = 100) -> tuple[Event, ...]:
        """One page of the run's events with ``seq > after``, in sequence order."""
        stmt = (
            sa.select(events)
            .where(events.c.run_id == run_id, events.c.seq > after)
            .order_by(events.c.seq)
            .limit(limit)
        )
        with self._store.read() as conn:
            return tuple(Event.from_row(row) for row in conn.execute(stmt).mappings())

    def history_in(
        self, conn: sa.Connection, run_id: str
    ) -> tuple[tuple[Event, ...], tuple[Activity, ...]]:
        """All the run's events in sequence order and its recorded activities in the order
        they were recorded, in the caller's transaction (replay reads a run's record in one)."""
        found = conn.execute(
            sa.select(events).where(events.c.run_id == run_id).order_by(events.c.seq)
        ).mappings()
        every = tuple(Event.from_row(row) for row in found)
        recorded = conn.execute(
            sa.select(schema.activities)
            .where(schema.activities.c.run_id == run_id)
            .order_by(schema.activities.c.created_at)
        ).mappings()
        return every, tuple(Activity.from_row(row) for row in recorded)

    def turns(self, run_id: str) -> tuple[tuple[Turn, ...], tuple[Activity, ...]]:
        """The run's turns in order, and its recorded activities (model and tool calls) in
        the order they were recorded."""
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(schema.turns)
                .where(schema.turns.c.run_id == run_id)
                .order_by(schema.turns.c.seq)
            ).mappings()
            turns = tuple(Turn.from_row(row) for row in found)
            recorded = conn.execute(
                sa.select(schema.activities)
                .where(schema.activities.c.run_id == run_id)
                .order_by(schema.activities.c.created_at)
            ).mappings()
            return turns, tuple(Activity.from_row(row) for row in recorded)

    def follow_events(
        self, run_id: str, after: int = 0, *, timeout: float | None = None
    ) -> Iterator[Event]:
        """Yield the run's events as they are committed.

        Stops once the run is terminal and every event is delivered, or after ``timeout``
        seconds without reaching that point (``None``: follow until terminal).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            page = self.events(run_id, after)
            yield from page
            if page:
                after = page[-1].seq
                continue
            run = self.get(run_id)
            if run.status in TERMINAL_RUN_STATUSES and run.last_event_seq <= after:
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(self._store.poll_interval)

    def pause(
        self,
        run_id: str,
        actor: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
    ) -> Run:
        """Stop a run where it is; :meth:`resume` puts it back. Waits stay registered."""
        with self._store.write() as conn:
            run = self.load(conn, run_id, lock=True)
            _check_revision(run, expected_revision)
            _require(run, PAUSABLE, "pause")
            values: dict[str, Any] = {
                "status": RunStatus.PAUSED,
                "paused_from_status": run.status,
                **lease_released(),
            }
            if run.status == RunStatus.RUNNING:
                values["epoch"] = runs.c.epoch + 1
            paused, _ = change_run(
                conn,
                run_id,
                event_type="run.paused",
                actor=actor,
                payload={
                    "reason": reason,
                    "from_status": run.status,
                    "current_state": run.current_state,
                    "in_flight_worker": _in_flight(run),
                },
                now=self._store.now(),
                values=values,
            )
        return paused

    def resume(
        self,
        run_id: str,
        actor: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
    ) -> Run:
        """Undo a pause: a waiting run waits again, anything else is queued for a worker."""
        with self._store.write() as conn:
            run = self.load(conn, run_id, lock=True)
            _check_revision(run, expected_revision)
            _require(run, frozenset({RunStatus.PAUSED}), "resume")
            restored = run.paused_from_status
            if restored is None or restored not in WAITING_RUN_STATUSES:
                restored = RunStatus.QUEUED
            resumed, _ = change_run(
                conn,
                run_id,
                event_type="run.resumed",
                actor=actor,
                payload={"reason": reason, "to_status": restored},
                now=self._store.now(),
                values={"status": restored, "paused_from_status": None},
            )
            self._store.notify_work(conn, run_id)
        return resumed

    def check_cancel(self, run: Run, expected_revision: int | None = None) -> None:
        """Refuse to cancel ``run`` (read under its row lock) when it changed since the caller
        looked at it (``stale_revision``) or has ended (``invalid_status``)."""
        _check_revision(run, expected_revision)
        _require(run, CANCELABLE, "cancel")

    def mark_canceled(
        self, conn: sa.Connection, run: Run, swept: CancelSweep, *, actor: str,
        reason: str | None, now: datetime,
    ) -> Run:  # fmt: skip
        """Write ``run`` (read under its row lock) canceled, in the caller's transaction: its
        lease and wait dropped, the budgets its canceled agent requests held given back, the
        epoch bumped so an in-flight worker's next fenced write is rejected, and the
        ``run.canceled`` event saying what it was doing and what ``swept`` stopped with it."""
        budget_used, released = release_all(run.budget_used, swept.agent_requests)
        canceled, _ = change_run(
            conn,
            run.id,
            event_type="run.canceled",
            actor=actor,
            payload={
                "reason": reason,
                "from_status": run.status,
                "current_state": run.current_state,
                "waiting": run.waiting,
                "in_flight_worker": _in_flight(run),
                "lease_expires_at": iso(run.lease_expires_at),
                "canceled_agent_requests": swept.agent_requests,
                **({"budgets_released": released} if released else {}),
                "canceled_children": swept.spawned,
                "canceled_approvals": swept.approvals,
                "actions": swept.actions,
                **({} if swept.objective is None else {"objective": swept.objective}),
            },
            now=now,
            values={
                "status": RunStatus.CANCELED,
                "epoch": runs.c.epoch + 1,
                "wake_at": None,
                "wait_name": None,
                **({"budget_used": budget_used} if released else {}),
                **lease_released(),
            },
        )
        return canceled

    def intervene(
        self,
        run_id: str,
        actor: str,
        reason: str,
        *,
        state: str | None = None,
        value: Any = None,
        expected_revision: int | None = None,
    ) -> Run:
        """An operator repairs a paused or stuck run.

        ``value`` (if not None) becomes the output of the run's current state in
        ``context["states"]``; ``state`` (if given) is the state the run continues from. A run
        that needed attention is queued again; a paused run stays paused until resumed.
        """
        with self._store.write() as conn:
            run = self.load(conn, run_id, lock=True)
            _check_revision(run, expected_revision)
            _require(run, INTERVENABLE, "intervene in")
            values: dict[str, Any] = {}
            if value is not None:
                if run.current_state is None:
                    raise StoreError(
                        f"run {run_id} has no current state to set a value for",
                        code="invalid_status",
                    )
                states = {**run.context["states"], run.current_state: value}
                values["context"] = {**run.context, "states": states}
            if state is not None:
                values["current_state"] = state
            if run.status == RunStatus.NEEDS_ATTENTION:
                values.update(status=RunStatus.QUEUED, waiting=None, wait_name=None)
            else:
                values["paused_from_status"] = RunStatus.QUEUED
            changed, _ = change_run(
                conn,
                run_id,
                event_type="run.intervened",
                actor=actor,
                payload={
                    "reason": reason,
                    "from_status": run.status,
                    "from_state": run.current_state,
                    "to_state": state if state is not None else run.current_state,
                    "value": value,
                },
                now=self._store.now(),
                values=values,
            )
            self._store.notify_work(conn, run_id)
        return changed

    def ids_on_version(
        self, conn: sa.Connection, digest: str, *, after: str | None = None, limit: int = 500
    ) -> list[str]:
        """Ids of the live runs pinned to version ``digest``, in id order, ``limit`` at a time
        after ``after`` (a migration's candidates)."""
        stmt = (
            sa.select(runs.c.id)
            .where(runs.c.workflow_digest == digest, runs.c.status.in_(sorted(LIVE_RUN_STATUSES)))
            .order_by(runs.c.id)
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(runs.c.id > after)
        return list(conn.execute(stmt).scalars())

    def migrate(
        self,
        conn: sa.Connection,
        run: Run,
        *,
        values: dict[str, Any],
        payload: dict[str, Any],
        actor: str,
        now: datetime,
    ) -> Run:
        """Move ``run`` (read under its row lock) to another version with its one
        ``run.migrated`` event: ``values`` (version, context, state, wait) and the epoch bumped,
        so a worker that read it before the move can write nothing after it (invariant 17)."""
        moved, _ = change_run(
            conn, run.id, event_type="run.migrated", actor=actor, payload=payload, now=now,
            values={**values, "epoch": runs.c.epoch + 1},
        )  # fmt: skip
        return moved

    def wake_for_action(
        self, conn: sa.Connection, action: Action, actor: str, event: str, now: datetime
    ) -> None:
        """The action is settled: a run that needs attention because of it continues (the state
        runs again and reads the settled action instead of dispatching), and a run sleeping until
        it reconciles it again wakes now. Nothing happens to a run doing anything else."""
        run = self.load(conn, action.run_id, lock=True)
        waiting = run.waiting
        values: dict[str, Any]
        if (
            run.status == RunStatus.NEEDS_ATTENTION
            and waiting is not None
            and waiting.get("state") == action.state
        ):
            values = {"status": RunStatus.QUEUED, "waiting": None, "wait_name": None}
        elif (
            run.status == RunStatus.SLEEPING
            and waiting is not None
            and waiting["kind"] == "reconcile"
            and waiting["action_id"] == action.id
        ):
            values = {"wake_at": now}
        else:
            return
        change_run(
            conn, run.id, event_type=event, actor=actor,
            payload={"action_id": action.id, "status": str(action.status)}, now=now, values=values,
        )  # fmt: skip
        self._store.notify_work(conn, run.id)
