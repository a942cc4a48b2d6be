"""Operator commands on a run: pause, resume, cancel, intervene.

Each is one transaction with its event, and is refused with ``invalid_status`` when the run's
status does not allow it. Pause and cancel take the run away from an in-flight worker by
bumping the epoch, so that worker's next fenced write is rejected (invariant 3).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime import actions as action_rows
from openseal.runtime import approvals as approval_rows
from openseal.runtime import schema
from openseal.runtime.events import change_run, iso, lease_released
from openseal.runtime.leases import LeasesMixin
from openseal.runtime.objectives import settle_objective
from openseal.runtime.records import Run
from openseal.runtime.statuses import (
    TERMINAL_RUN_STATUSES,
    WAITING_RUN_STATUSES,
    AgentRequestStatus,
    RunStatus,
)
from openseal.runtime.store_errors import InvalidStatus, StaleRevision

runs = schema.runs
agent_requests = schema.agent_requests

PAUSABLE = frozenset({RunStatus.QUEUED, RunStatus.RUNNING} | WAITING_RUN_STATUSES)
CANCELABLE = frozenset(RunStatus) - TERMINAL_RUN_STATUSES
INTERVENABLE = frozenset({RunStatus.PAUSED, RunStatus.NEEDS_ATTENTION})
OPEN_AGENT_REQUESTS = (
    AgentRequestStatus.PENDING,
    AgentRequestStatus.CLARIFICATION_REQUESTED,
    AgentRequestStatus.ACCEPTED,
)


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


class CommandsMixin(LeasesMixin):
    def pause_run(
        self,
        run_id: str,
        actor: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
    ) -> Run:
        """Stop a run where it is; :meth:`resume_run` puts it back. Waits stay registered."""
        with self.write() as conn:
            run = self.load_run(conn, run_id, lock=True)
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
                now=self.now(),
                values=values,
            )
        return paused

    def resume_run(
        self,
        run_id: str,
        actor: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
    ) -> Run:
        """Undo a pause: a waiting run waits again, anything else is queued for a worker."""
        with self.write() as conn:
            run = self.load_run(conn, run_id, lock=True)
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
                now=self.now(),
                values={"status": restored, "paused_from_status": None},
            )
            self.notify_work(conn)
        return resumed

    def cancel_run(
        self,
        run_id: str,
        actor: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
    ) -> Run:
        """Cancel durably. The ``run.canceled`` event says what the run was doing, including
        the worker that may have been executing it, and which agent requests were canceled."""
        now = self.now()
        with self.write() as conn:
            run = self.load_run(conn, run_id, lock=True)
            _check_revision(run, expected_revision)
            _require(run, CANCELABLE, "cancel")
            canceled_requests = self._cancel_agent_requests(conn, run_id, now)
            # Governed actions: pending approvals and unsent actions are canceled; anything
            # dispatched is reported as it stands, since it may already have happened.
            canceled_approvals = approval_rows.cancel_for_run(conn, run_id, now, actor)
            action_report = action_rows.cancel_for_run(conn, run_id, now, actor)
            settle_objective(conn, run, RunStatus.CANCELED, now)
            canceled, _ = change_run(
                conn,
                run_id,
                event_type="run.canceled",
                actor=actor,
                payload={
                    "reason": reason,
                    "from_status": run.status,
                    "current_state": run.current_state,
                    "waiting": run.waiting,
                    "in_flight_worker": _in_flight(run),
                    "lease_expires_at": iso(run.lease_expires_at),
                    "canceled_agent_requests": canceled_requests,
                    "canceled_approvals": canceled_approvals,
                    "actions": action_report,
                },
                now=now,
                values={
                    "status": RunStatus.CANCELED,
                    "epoch": runs.c.epoch + 1,
                    "wake_at": None,
                    "wait_name": None,
                    **lease_released(),
                },
            )
        return canceled

    def _cancel_agent_requests(self, conn: sa.Connection, run_id: str, now: Any) -> list[str]:
        ids = list(
            conn.execute(
                sa.select(agent_requests.c.id).where(
                    agent_requests.c.caller_run_id == run_id,
                    agent_requests.c.status.in_(OPEN_AGENT_REQUESTS),
                )
            ).scalars()
        )
        if ids:
            conn.execute(
                sa.update(agent_requests)
                .where(agent_requests.c.id.in_(ids))
                .values(status=AgentRequestStatus.CANCELED, updated_at=now)
            )
        return ids

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
        with self.write() as conn:
            run = self.load_run(conn, run_id, lock=True)
            _check_revision(run, expected_revision)
            _require(run, INTERVENABLE, "intervene in")
            values: dict[str, Any] = {}
            if value is not None:
                if run.current_state is None:
                    raise StoreError(
                        f"run {run_id} has no current state to set a value for",
                        code="invalid_status",
                    )
                states = {**run.context.get("states", {}), run.current_state: value}
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
                now=self.now(),
                values=values,
            )
            self.notify_work(conn)
        return changed
