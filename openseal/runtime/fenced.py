"""FencedTx: the only way an engine holding a claim writes to its run.

``Store.fenced(claim)`` opens one transaction, checks that the run's epoch and lease owner
still match the claim (invariant 3) and hands out a FencedTx whose methods all write inside
that transaction. Every change appends its event in the same transaction (invariant 1), and
leaving ``running`` releases the lease in the same UPDATE (invariant 5).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime import schema
from openseal.runtime.clock import new_id
from openseal.runtime.events import change_run, iso, lease_released
from openseal.runtime.records import Activity, AgentRequest, Claim, Event, InboundEvent, Run, Turn
from openseal.runtime.statuses import AgentRequestStatus, RunStatus
from openseal.runtime.store_base import StoreBase
from openseal.runtime.store_errors import IdempotencyConflict, NotFound
from openseal.runtime.waits import consume, first_unconsumed_match


class _Unset:
    """Marks an ``update_run`` argument the caller did not pass (None is a real value)."""


UNSET: Final = _Unset()


class FencedTx:
    def __init__(self, store: StoreBase, conn: sa.Connection, claim: Claim, now: datetime):
        self._store = store
        self.conn = conn
        self.claim = claim
        self.now = now
        self.actor = f"worker:{claim.worker_id}"

    def _change(self, event_type: str, payload: dict[str, Any], **values: Any) -> Run:
        run, _ = change_run(
            self.conn,
            self.claim.run_id,
            event_type=event_type,
            actor=self.actor,
            payload=payload,
            now=self.now,
            values=values,
        )
        return run

    def run(self) -> Run:
        return self._store.load_run(self.conn, self.claim.run_id)

    def update_run(
        self,
        *,
        status: RunStatus | _Unset = UNSET,
        current_state: str | _Unset | None = UNSET,
        context: dict[str, Any] | _Unset = UNSET,
        waiting: dict[str, Any] | _Unset | None = UNSET,
        wake_at: datetime | _Unset | None = UNSET,
        budget_used: dict[str, Any] | _Unset = UNSET,
        event: str = "run.updated",
        payload: dict[str, Any] | None = None,
    ) -> Run:
        """Change the run and append ``event`` describing it, in this transaction.

        Any status other than ``running`` releases the lease: the claim is finished and any
        later write with it is rejected. Waiting for an inbound event goes through
        :meth:`register_event_wait` instead, so early events are matched.
        """
        if status == RunStatus.WAITING_FOR_EVENT:
            raise StoreError("use register_event_wait to wait for an event", code="usage_error")
        values: dict[str, Any] = {}
        for key, value in (
            ("status", status),
            ("current_state", current_state),
            ("context", context),
            ("waiting", waiting),
            ("wake_at", wake_at),
            ("budget_used", budget_used),
        ):
            if not isinstance(value, _Unset):
                values[key] = value
        if "waiting" in values:
            values["wait_name"] = None
        if "status" in values and values["status"] != RunStatus.RUNNING:
            values.update(lease_released())
        described = {k: v for k, v in values.items() if k in ("status", "current_state")}
        if "wake_at" in values:
            described["wake_at"] = iso(values["wake_at"])
        if "waiting" in values:
            described["waiting"] = values["waiting"]
        return self._change(event, {**(payload or {}), **described}, **values)

    def append_event(self, type: str, payload: dict[str, Any], actor: str | None = None) -> Event:
        _, event = change_run(
            self.conn,
            self.claim.run_id,
            event_type=type,
            actor=actor or self.actor,
            payload=payload,
            now=self.now,
        )
        return event

    # -- turns -----------------------------------------------------------------------

    def start_turn(self, state: str, phase: str = "started") -> Turn:
        """Persist a turn before it executes (invariant 2); its seq counts from 1 per run."""
        turns = schema.turns
        last = self.conn.execute(
            sa.select(sa.func.max(turns.c.seq)).where(turns.c.run_id == self.claim.run_id)
        ).scalar_one_or_none()
        turn = Turn(
            id=new_id(),
            run_id=self.claim.run_id,
            seq=(last or 0) + 1,
            state=state,
            phase=phase,
            status="running",
            epoch=self.claim.epoch,
            worker=self.claim.worker_id,
            started_at=self.now,
            finished_at=None,
            error=None,
        )
        self.conn.execute(sa.insert(turns).values(**turn.__dict__))
        self._change("turn.started", {"turn_id": turn.id, "seq": turn.seq, "state": state})
        return turn

    def record_turn(
        self,
        turn_id: str,
        *,
        phase: str | None = None,
        status: str | None = None,
        error: str | None = None,
    ) -> Turn:
        """Save a turn's new phase and/or final status (``status`` other than running ends it)."""
        turns = schema.turns
        values: dict[str, Any] = {}
        if phase is not None:
            values["phase"] = phase
        if status is not None:
            values["status"] = status
            values["finished_at"] = None if status == "running" else self.now
        if error is not None:
            values["error"] = error
        row = (
            self.conn.execute(
                sa.update(turns)
                .where(turns.c.id == turn_id, turns.c.run_id == self.claim.run_id)
                .values(**values)
                .returning(*turns.c)
            )
            .mappings()
            .one_or_none()
        )
        if row is None:
            raise NotFound(f"turn {turn_id} not found on run {self.claim.run_id}")
        payload = {"turn_id": turn_id, "phase": row["phase"], "status": row["status"]}
        if error is not None:
            payload["error"] = error
        self._change("turn.updated", payload)
        return Turn.from_row(row)

    # -- activities --------------------------------------------------------------------

    def get_activity(self, activity_id: str) -> Activity | None:
        activities = schema.activities
        row = (
            self.conn.execute(
                sa.select(activities).where(
                    activities.c.run_id == self.claim.run_id,
                    activities.c.activity_id == activity_id,
                )
            )
            .mappings()
            .one_or_none()
        )
        return None if row is None else Activity.from_row(row)

    def record_activity(
        self, activity_id: str, kind: str, input_hash: str, result: Any
    ) -> Activity:
        """Record a model/tool result before the workflow advances (invariants 2 and 4).

        Idempotent: the same id and input hash return the stored activity unchanged (the
        recorded result wins); the same id with another input hash is a conflict.
        """
        existing = self.get_activity(activity_id)
        if existing is not None:
            if existing.input_hash != input_hash:
                raise IdempotencyConflict(
                    f"activity {activity_id} was recorded for different input"
                )
            return existing
        activity = Activity(self.claim.run_id, activity_id, kind, input_hash, result, self.now)
        self.conn.execute(sa.insert(schema.activities).values(**activity.__dict__))
        self._change(
            "activity.recorded",
            {"activity_id": activity_id, "kind": kind, "input_hash": input_hash},
        )
        return activity

    # -- waits -------------------------------------------------------------------------

    def register_event_wait(
        self, name: str, correlation: dict[str, Any], *, timeout_at: datetime | None = None
    ) -> InboundEvent | None:
        """Wait for inbound event ``name`` matching ``correlation``; releases the lease.

        If a matching event already arrived it is consumed now and the run is runnable at
        once (returned here; the next claim sees it in ``run.waiting["delivered"]``).
        ``timeout_at`` makes the run runnable at that time without a delivery.
        """
        self._store.lock_event_name(self.conn, name)
        waiting = {
            "kind": "event",
            "name": name,
            "correlation": correlation,
            "timeout_at": iso(timeout_at),
        }
        run = self._change(
            "wait.registered",
            {"status": RunStatus.WAITING_FOR_EVENT, "waiting": waiting},
            status=RunStatus.WAITING_FOR_EVENT,
            waiting=waiting,
            wait_name=name,
            wake_at=timeout_at,
            **lease_released(),
        )
        early = first_unconsumed_match(self.conn, name, correlation)
        if early is not None:
            consume(self.conn, early, run, self.now, self.actor)
            self._store.notify_work(self.conn)
        return early

    # -- agent requests ----------------------------------------------------------------

    def create_agent_request(
        self, callee: str, request: Any, *, child_run_id: str | None = None
    ) -> AgentRequest:
        """Ask agent or team ``callee`` for work; the engine then waits with ``update_run``."""
        now = self.now
        agent_request = AgentRequest(
            id=new_id(),
            caller_run_id=self.claim.run_id,
            callee=callee,
            child_run_id=child_run_id,
            status=AgentRequestStatus.PENDING,
            request=request,
            response=None,
            clarification=None,
            review=None,
            created_at=now,
            updated_at=now,
        )
        self.conn.execute(sa.insert(schema.agent_requests).values(**agent_request.__dict__))
        self._change(
            "agent_request.created", {"agent_request_id": agent_request.id, "callee": callee}
        )
        return agent_request
