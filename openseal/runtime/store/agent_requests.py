"""Agent requests: one run asks an agent or team for work and waits for the answer.

Statuses: ``pending → accepted → completed`` with ``rejected``, ``clarification_requested``
(back to ``pending`` once answered) and ``canceled`` on the side, plus an optional review of a
completed request. Each change appends an event to the caller run; changes the caller must act
on (clarification, rejection, completion, cancellation) also wake it if it is waiting.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import schema
from openseal.runtime.store.base import Repository
from openseal.runtime.store.errors import InvalidStatus, NotFound
from openseal.runtime.store.events import change_run
from openseal.runtime.store.records import AgentRequest

agent_requests = schema.agent_requests
runs = schema.runs
OPEN_AGENT_REQUESTS = (S.PENDING, S.CLARIFICATION_REQUESTED, S.ACCEPTED)


class AgentRequests(Repository):
    """``store.agent_requests``: requests one run makes to an agent or team."""

    def get(self, request_id: str) -> AgentRequest:
        with self._store.read() as conn:
            row = conn.execute(sa.select(agent_requests).where(agent_requests.c.id == request_id))
            found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"agent request {request_id} not found")
        return AgentRequest.from_row(found)

    def _transition(
        self,
        request_id: str,
        actor: str,
        allowed: tuple[S, ...],
        event_type: str,
        *,
        wake_caller: bool,
        **values: Any,
    ) -> AgentRequest:
        now = self._store.now()
        with self._store.write() as conn:
            stmt = sa.select(agent_requests).where(agent_requests.c.id == request_id)
            caller_id = conn.execute(
                sa.select(agent_requests.c.caller_run_id).where(agent_requests.c.id == request_id)
            ).scalar_one_or_none()
            if caller_id is None:
                raise NotFound(f"agent request {request_id} not found")
            # Lock the caller run before the request, the order cancel_run uses too.
            caller = self._store.runs.load(conn, caller_id, lock=True)
            row = conn.execute(self._store.for_update(stmt)).mappings().one()
            current = AgentRequest.from_row(row)
            if current.status not in allowed:
                raise InvalidStatus(
                    f"agent request {request_id} is {current.status}; "
                    f"{event_type.removeprefix('agent_request.')} needs one of "
                    + ", ".join(allowed)
                )
            if "review" in values and current.review is not None:
                raise InvalidStatus(f"agent request {request_id} is already reviewed")
            updated = (
                conn.execute(
                    sa.update(agent_requests)
                    .where(agent_requests.c.id == request_id)
                    .values(updated_at=now, **values)
                    .returning(*agent_requests.c)
                )
                .mappings()
                .one()
            )
            wake = wake_caller and caller.status == RunStatus.WAITING_FOR_AGENT
            change_run(
                conn,
                caller.id,
                event_type=event_type,
                actor=actor,
                payload={"agent_request_id": request_id, "status": updated["status"]},
                now=now,
                values={"wake_at": now} if wake else {},
            )
            if wake:
                self._store.notify_work(conn)
        return AgentRequest.from_row(updated)

    def accept(
        self, request_id: str, actor: str, *, child_run_id: str | None = None
    ) -> AgentRequest:
        return self._transition(
            request_id, actor, (S.PENDING,), "agent_request.accepted",
            wake_caller=False, status=S.ACCEPTED, child_run_id=child_run_id,
        )  # fmt: skip

    def reject(self, request_id: str, actor: str, reason: str) -> AgentRequest:
        return self._transition(
            request_id, actor, (S.PENDING, S.CLARIFICATION_REQUESTED, S.ACCEPTED),
            "agent_request.rejected", wake_caller=True,
            status=S.REJECTED, response={"rejected": reason},
        )  # fmt: skip

    def request_clarification(self, request_id: str, actor: str, question: str) -> AgentRequest:
        return self._transition(
            request_id, actor, (S.PENDING, S.ACCEPTED), "agent_request.clarification_requested",
            wake_caller=True, status=S.CLARIFICATION_REQUESTED,
            clarification={"question": question, "answer": None},
        )  # fmt: skip

    def answer_clarification(self, request_id: str, actor: str, answer: Any) -> AgentRequest:
        question = self.get(request_id).clarification or {}
        return self._transition(
            request_id, actor, (S.CLARIFICATION_REQUESTED,), "agent_request.clarified",
            wake_caller=False, status=S.PENDING,
            clarification={**question, "answer": answer},
        )  # fmt: skip

    def complete(self, request_id: str, actor: str, response: Any) -> AgentRequest:
        return self._transition(
            request_id, actor, (S.ACCEPTED,), "agent_request.completed",
            wake_caller=True, status=S.COMPLETED, response=response,
        )  # fmt: skip

    def review(self, request_id: str, actor: str, review: Any) -> AgentRequest:
        """Attach the (single) completion review to a completed request."""
        return self._transition(
            request_id, actor, (S.COMPLETED,), "agent_request.reviewed",
            wake_caller=False, review={"by": actor, "review": review},
        )  # fmt: skip

    def cancel(self, request_id: str, actor: str, reason: str) -> AgentRequest:
        return self._transition(
            request_id, actor, (S.PENDING, S.CLARIFICATION_REQUESTED, S.ACCEPTED),
            "agent_request.canceled", wake_caller=True,
            status=S.CANCELED, response={"canceled": reason},
        )  # fmt: skip

    def cancel_for_run(self, conn: sa.Connection, run_id: str, now: Any) -> list[str]:
        """Cancel the run's open requests (the caller holds the run's row lock); their ids."""
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
                .values(status=S.CANCELED, updated_at=now)
            )
        return ids

    def status(self, conn: sa.Connection, request_id: str) -> S:
        """The request's status read in the caller's transaction."""
        found = conn.execute(
            sa.select(agent_requests.c.status).where(agent_requests.c.id == request_id)
        ).scalar_one()
        return S(found)
