"""Agent requests: one run asks an agent or team for work and waits for the answer.

Lifecycle: ``requested → accepted → (clarification_requested ⇄ accepted) → completed |
declined | failed | expired | canceled``; a completion the caller asked to review then becomes
``completion_reviewed``, or is sent back with a reason and is ``accepted`` again. Every step
locks the caller run first, then the request (the package's lock order), changes the request
and appends an ``agent_request.<step>`` event to the caller run in one transaction; the steps
the caller acts on also wake it if it waits.

The callee side may be a child run (``child_run_id``). A child run ending settles its request
(:func:`settle_child`) in the transaction that ends it: it locks the child, then the caller —
the only order two runs are ever locked in. So whatever stops a child because its request
closed (decline, expiry, the caller's cancellation) does so after its own commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.statuses import LIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.store.db.errors import InvalidStatus, NotFound
from openseal.runtime.store.repos.carved_budgets import charge, child_spent, release_carved
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.repos.run_rows import load_run
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import AgentRequest, Run

agent_requests = schema.agent_requests
runs = schema.runs
OPEN_AGENT_REQUESTS = (S.REQUESTED, S.ACCEPTED, S.CLARIFICATION_REQUESTED)
#: what a caller waiting in ``waiting_for_agent`` is woken for
WAKES_CALLER = frozenset(
    {S.CLARIFICATION_REQUESTED, S.COMPLETION_REVIEWED, S.DECLINED, S.FAILED, S.EXPIRED,
     S.CANCELED}
)  # fmt: skip
#: starts the callee's work (a new child run, :meth:`AgentRequests.note_child`) inside a
#: step's transaction
Restart = Callable[[sa.Connection, AgentRequest], None]
#: stops a child run a step let go of (the request closed, or it names another child or
#: none), after the step's commit: called with the child's id, the step's actor and why; the
#: caller decides how (:func:`openseal.runtime.engine.cascade.cancel_unless_ended`)
StopChild = Callable[[str, str, str], object]


def _closed_for_good(request: AgentRequest) -> bool:
    """Whether ``request`` can no longer reopen (what is left of its budget is released)."""
    if request.status == S.COMPLETED:
        return not request.review_requested
    return request.status not in OPEN_AGENT_REQUESTS


def caller_wakes(request: AgentRequest) -> bool:
    """Whether the caller has something to do about ``request`` in its current status."""
    if request.status == S.COMPLETED:
        return not request.review_requested
    return request.status in WAKES_CALLER


class AgentRequests(Repository):
    """``store.agent_requests``: requests one run makes to an agent or team."""

    def get(self, request_id: str) -> AgentRequest:
        with self._store.read() as conn:
            return self.get_in(conn, request_id)

    def get_in(self, conn: sa.Connection, request_id: str) -> AgentRequest:
        row = conn.execute(sa.select(agent_requests).where(agent_requests.c.id == request_id))
        found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"agent request {request_id} not found")
        return AgentRequest.from_row(found)

    def newest(
        self,
        *,
        status: str | None = None,
        callee: str | None = None,
        caller_run_id: str | None = None,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[AgentRequest]:
        """The newest requests first, filtered by status, callee, caller run, or the scopes
        of their caller runs."""
        stmt = sa.select(agent_requests).order_by(agent_requests.c.created_at.desc())
        if scopes is not None:
            stmt = stmt.join(runs, runs.c.id == agent_requests.c.caller_run_id).where(
                runs.c.scope.in_(list(scopes))
            )
        if status is not None:
            stmt = stmt.where(agent_requests.c.status == status)
        if callee is not None:
            stmt = stmt.where(agent_requests.c.callee == callee)
        if caller_run_id is not None:
            stmt = stmt.where(agent_requests.c.caller_run_id == caller_run_id)
        with self._store.read() as conn:
            rows = conn.execute(stmt.limit(limit)).mappings().all()
        return [AgentRequest.from_row(row) for row in rows]

    # -- steps ---------------------------------------------------------------------------

    def _step(
        self,
        request_id: str,
        actor: str,
        allowed: tuple[S, ...],
        step: str,
        change: Callable[[AgentRequest], dict[str, Any]],
        *,
        stop: StopChild | None,
        restart: Restart | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AgentRequest:
        now = self._store.now()
        with self._store.write() as conn:
            caller_id = conn.execute(
                sa.select(agent_requests.c.caller_run_id).where(agent_requests.c.id == request_id)
            ).scalar_one_or_none()
            if caller_id is None:
                raise NotFound(f"agent request {request_id} not found")
            # Lock the caller run before the request, the order cancel_run uses too.
            caller = load_run(self._store, conn, caller_id, lock=True)
            stmt = sa.select(agent_requests).where(agent_requests.c.id == request_id)
            current = AgentRequest.from_row(
                conn.execute(self._store.for_update(stmt)).mappings().one()
            )
            if current.status not in allowed:
                raise InvalidStatus(
                    f"agent request {request_id} is {current.status}; {step} needs "
                    + " or ".join(allowed)
                )
            values = change(current)
            updated = self._update(conn, request_id, now, values)
            if restart is not None and updated.status == S.ACCEPTED:
                restart(conn, updated)
                updated = self.get_in(conn, request_id)
            self._tell_caller(conn, caller, updated, f"agent_request.{step}", actor, now, detail)
        stale = current.child_run_id and (
            current.child_run_id != updated.child_run_id
            or updated.status not in OPEN_AGENT_REQUESTS
        )
        if stale and stop is not None:
            stop(str(current.child_run_id), actor, f"agent request {request_id} {step}")
        return updated

    def _update(
        self, conn: sa.Connection, request_id: str, now: datetime, values: dict[str, Any]
    ) -> AgentRequest:
        row = conn.execute(
            sa.update(agent_requests)
            .where(agent_requests.c.id == request_id)
            .values(updated_at=now, **values)
            .returning(*agent_requests.c)
        )
        return AgentRequest.from_row(row.mappings().one())

    def _tell_caller(
        self,
        conn: sa.Connection,
        caller: Run,
        request: AgentRequest,
        event_type: str,
        actor: str,
        now: datetime,
        detail: dict[str, Any] | None = None,
    ) -> None:
        # a paused caller wakes when it is resumed (it waits again with this wake-up)
        waiting = RunStatus.WAITING_FOR_AGENT in (caller.status, caller.paused_from_status)
        wake = waiting and caller_wakes(request)
        payload = {"agent_request_id": request.id, "status": str(request.status), **(detail or {})}
        values: dict[str, Any] = {"wake_at": now} if wake else {}
        if _closed_for_good(request):
            used, released = release_carved(caller.budget_used, request.id)
            if released is not None:
                payload["budget_released"] = released
                values["budget_used"] = used
        change_run(
            conn, caller.id, event_type=event_type, actor=actor, payload=payload, now=now,
            values=values,
        )  # fmt: skip
        if wake and caller.status == RunStatus.WAITING_FOR_AGENT:
            self._store.notify_work(conn, caller.id)

    def accept(
        self, request_id: str, actor: str, *, stop: StopChild | None,
        restart: Restart | None = None,
    ) -> AgentRequest:  # fmt: skip
        """The callee takes the request on (``restart`` starts its child run, if any)."""
        return self._step(
            request_id, actor, (S.REQUESTED,), "accepted", lambda _: {"status": S.ACCEPTED},
            restart=restart,
            stop=stop,
        )  # fmt: skip

    def ask(
        self, request_id: str, actor: str, question: str, *, stop: StopChild | None
    ) -> AgentRequest:
        """The callee needs an answer first; a child run at work stops until it comes."""

        def change(current: AgentRequest) -> dict[str, Any]:
            rounds = [*_rounds(current.clarification),
                      {"question": question, "asked_by": actor, "answer": None,
                       "answered_by": None, "from": str(current.status)}]  # fmt: skip
            return {"status": S.CLARIFICATION_REQUESTED, "clarification": rounds,
                    "child_run_id": None}  # fmt: skip

        return self._step(
            request_id, actor, (S.REQUESTED, S.ACCEPTED), "clarification_requested", change,
            detail={"question": question},
            stop=stop,
        )  # fmt: skip

    def clarify(
        self, request_id: str, actor: str, answer: Any, *, stop: StopChild | None,
        restart: Restart | None = None,
    ) -> AgentRequest:  # fmt: skip
        """Answer the open question; the request goes back to where it was asked from."""

        def change(current: AgentRequest) -> dict[str, Any]:
            rounds = _rounds(current.clarification)
            last = {**rounds[-1], "answer": answer, "answered_by": actor}
            back = S(last.get("from") or S.ACCEPTED)
            return {"status": back, "clarification": [*rounds[:-1], last]}

        return self._step(
            request_id, actor, (S.CLARIFICATION_REQUESTED,), "clarified", change,
            restart=restart, detail={"answer": answer},
            stop=stop,
        )  # fmt: skip

    def complete(
        self, request_id: str, actor: str, response: Any, *, stop: StopChild | None
    ) -> AgentRequest:
        return self._step(
            request_id, actor, (S.ACCEPTED,), "completed",
            lambda _: {"status": S.COMPLETED, "response": response},
            stop=stop,
        )  # fmt: skip

    def decline(
        self, request_id: str, actor: str, reason: str, *, stop: StopChild | None
    ) -> AgentRequest:
        return self._step(
            request_id, actor, OPEN_AGENT_REQUESTS, "declined",
            lambda _: {"status": S.DECLINED, "response": {"declined": reason}},
            detail={"reason": reason},
            stop=stop,
        )  # fmt: skip

    def fail(
        self, request_id: str, actor: str, reason: str, *, stop: StopChild | None
    ) -> AgentRequest:
        return self._step(
            request_id, actor, (S.ACCEPTED, S.CLARIFICATION_REQUESTED, S.COMPLETED), "failed",
            lambda _: {"status": S.FAILED, "response": {"error": reason}},
            detail={"reason": reason},
            stop=stop,
        )  # fmt: skip

    def expire(self, request_id: str, actor: str, *, stop: StopChild | None) -> AgentRequest:
        return self._step(
            request_id, actor, OPEN_AGENT_REQUESTS, "expired",
            lambda current: {"status": S.EXPIRED,
                             "response": {"expired": _iso(current.deadline)}},
            stop=stop,
        )  # fmt: skip

    def cancel(
        self, request_id: str, actor: str, reason: str, *, stop: StopChild | None
    ) -> AgentRequest:
        return self._step(
            request_id, actor, OPEN_AGENT_REQUESTS, "canceled",
            lambda _: {"status": S.CANCELED, "response": {"canceled": reason}},
            detail={"reason": reason},
            stop=stop,
        )  # fmt: skip

    def review(
        self,
        request_id: str,
        actor: str,
        verdict: str,
        reason: str | None = None,
        *,
        stop: StopChild | None,
        restart: Restart | None = None,
    ) -> AgentRequest:
        """Review a completion the caller asked to review: ``accept`` it, or ``send_back``
        with a reason, which reopens the request (``restart`` starts the work again)."""
        if verdict not in ("accept", "send_back"):
            raise InvalidStatus(f"a review is accept or send_back, not {verdict!r}")

        def change(current: AgentRequest) -> dict[str, Any]:
            if not current.review_requested:
                raise InvalidStatus(f"agent request {request_id} did not ask for a review")
            reviews = [*_rounds(current.review), {"by": actor, "verdict": verdict,
                                                  "reason": reason}]  # fmt: skip
            if verdict == "accept":
                return {"status": S.COMPLETION_REVIEWED, "review": reviews}
            return {"status": S.ACCEPTED, "review": reviews, "response": None}

        return self._step(
            request_id, actor, (S.COMPLETED,), "completion_reviewed", change,
            restart=restart if verdict == "send_back" else None,
            detail={"verdict": verdict, "reason": reason},
            stop=stop,
        )  # fmt: skip

    # -- inside other transactions ---------------------------------------------------------

    def insert(self, conn: sa.Connection, request: AgentRequest) -> None:
        conn.execute(sa.insert(agent_requests).values(**request.__dict__))

    def note_child(
        self, conn: sa.Connection, request_id: str, child_run_id: str, mode: str, now: datetime
    ) -> AgentRequest:
        """Record the child run working on a request, now ``accepted`` (in the transaction
        holding the caller's row lock); ``mode`` says how its output completes the request."""
        current = self.get_in(conn, request_id)
        meta = dict(current.request) if isinstance(current.request, dict) else {}
        meta["child"] = {"mode": mode}
        return self._update(
            conn, request_id, now,
            {"status": S.ACCEPTED, "child_run_id": child_run_id, "request": meta},
        )  # fmt: skip

    def fail_in(
        self, conn: sa.Connection, request_id: str, reason: str, now: datetime
    ) -> AgentRequest:
        """Fail a request inside the caller's transaction (its row lock is held)."""
        return self._update(
            conn, request_id, now, {"status": S.FAILED, "response": {"error": reason}}
        )

    def cancel_for_run(self, conn: sa.Connection, run_id: str, now: Any) -> list[str]:
        """Cancel the run's open requests (the caller holds the run's row lock); their ids.
        Their child runs are stopped after the commit (:meth:`open_children`); the budgets
        held for them are released by the caller (``carved_budgets.release_all``)."""
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
                .values(status=S.CANCELED, updated_at=now, response={"canceled": "caller canceled"})
            )
        return ids

    def abandoned(self, limit: int) -> list[tuple[str, str, str]]:
        """Child runs still running for requests that are no longer open, as (child run id,
        request id, request status): the ones the process that closed the request did not
        stop, since it stops them after its commit."""
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(
                    agent_requests.c.child_run_id, agent_requests.c.id, agent_requests.c.status
                )
                .select_from(runs)
                .join(agent_requests, agent_requests.c.child_run_id == runs.c.id)
                .where(
                    runs.c.parent_run_id.is_not(None),  # from the child runs (an index)
                    runs.c.status.in_(LIVE_RUN_STATUSES),
                    agent_requests.c.status.not_in(OPEN_AGENT_REQUESTS),
                )
                .order_by(agent_requests.c.child_run_id)
                .limit(limit)
            ).all()
        return [(str(child), str(request), str(status)) for child, request, status in found]

    def unlinked(self, limit: int) -> list[tuple[str, str]]:
        """Child runs still running that their request let go of (a question to its caller,
        a completion sent back: the request names another child or none) and that belong to
        no dependency group, as (child run id, caller run id): the ones the process that
        changed the request did not stop, since it stops them after its commit. A child is
        linked to its request or group in the transaction that starts it."""
        members = schema.dependency_members
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(runs.c.id, runs.c.parent_run_id)
                .where(
                    runs.c.parent_run_id.is_not(None),  # from the child runs (an index)
                    runs.c.status.in_(LIVE_RUN_STATUSES),
                    ~sa.exists().where(agent_requests.c.child_run_id == runs.c.id),
                    ~sa.exists().where(members.c.run_id == runs.c.id),
                )
                .order_by(runs.c.id)
                .limit(limit)
            ).all()
        return [(str(child), str(caller)) for child, caller in found]

    def children_of(self, conn: sa.Connection, request_ids: list[str]) -> list[str]:
        """The child runs working on these requests."""
        if not request_ids:
            return []
        found = conn.execute(
            sa.select(agent_requests.c.child_run_id).where(
                agent_requests.c.id.in_(request_ids), agent_requests.c.child_run_id.is_not(None)
            )
        ).scalars()
        return [str(child) for child in found]

    def status(self, conn: sa.Connection, request_id: str) -> S:
        """The request's status read in the caller's transaction."""
        found = conn.execute(
            sa.select(agent_requests.c.status).where(agent_requests.c.id == request_id)
        ).scalar_one()
        return S(found)

    def settle_child(
        self, conn: sa.Connection, child: Run, status: RunStatus, context: Any, now: datetime
    ) -> None:
        """A child run ends (in the transaction that ends it): its request completes with the
        child's output, or fails. The child's row lock is held; the caller's is taken now."""
        if status not in TERMINAL_RUN_STATUSES:
            return
        self._charge_caller(conn, child, now)
        request_id = conn.execute(
            sa.select(agent_requests.c.id).where(
                agent_requests.c.child_run_id == child.id,
                agent_requests.c.status == S.ACCEPTED,
            )
        ).scalar_one_or_none()
        if request_id is None:
            return  # not a delegated run, or its request closed already
        caller = load_run(self._store, conn, str(child.parent_run_id), lock=True)
        stmt = sa.select(agent_requests).where(agent_requests.c.id == request_id)
        current = AgentRequest.from_row(conn.execute(self._store.for_update(stmt)).mappings().one())
        if current.status != S.ACCEPTED or current.child_run_id != child.id:
            return
        actor = f"run:{child.id}"
        if status == RunStatus.COMPLETED:
            values = {"status": S.COMPLETED, "response": _child_output(current, context)}
            step = "completed"
        else:
            values = {"status": S.FAILED, "response": {"error": f"child run {child.id} {status}"}}
            step = "failed"
        updated = self._update(conn, request_id, now, values)
        self._tell_caller(conn, caller, updated, f"agent_request.{step}", actor, now,
                          {"child_run_id": child.id})  # fmt: skip

    def _charge_caller(self, conn: sa.Connection, child: Run, now: datetime) -> None:
        """Charge the caller what an ending child run used of the budget carved for it
        (:mod:`~openseal.runtime.store.repos.carved_budgets`); the child's row lock is held."""
        carved = child_spent(child.budget_used)
        if carved is None or child.parent_run_id is None:
            return
        request_id, spent = carved
        if not any(spent.values()):
            return  # it used nothing of it: the request's release gives it all back
        caller = load_run(self._store, conn, child.parent_run_id, lock=True)
        change_run(
            conn, caller.id, event_type="budget.spent", actor=f"run:{child.id}",
            payload={"agent_request_id": request_id, "child_run_id": child.id, "spent": spent},
            now=now, values={"budget_used": charge(caller.budget_used, request_id, spent)},
        )  # fmt: skip


def _child_output(request: AgentRequest, context: Any) -> Any:
    """The completion a child run's context gives: its outputs (a workflow), or the single
    turn's ``result`` output."""
    outputs = (context or {}).get("outputs") or {}
    meta = request.request if isinstance(request.request, dict) else {}
    if (meta.get("child") or {}).get("mode") == "turn":
        return outputs.get("result")
    return outputs


def _rounds(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    return list(value or [])


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
