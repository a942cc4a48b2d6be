"""The approvals repository: approval requests bound to a proposal's hash, and their closing.

An approval binds approvers to the hash of one exact proposal (invariant 6); while it is pending
the proposal's action waits for it, and an approval that closes without approving denies the
action. Deciding (who may, under which authority) is the runtime's; this module only writes the
rows, in the caller's transaction, after the caller locked the run (the package's lock order).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import iso, new_id
from openseal.runtime.statuses import ApprovalStatus, RunStatus
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import (
    ListQuery,
    newest_first,
    runs_in_scopes,
    runs_of_workflow,
)
from openseal.runtime.store.tables.records import Approval, Run

approvals = schema.approvals


def approval_summary(approval: Approval) -> dict[str, Any]:
    """The approval as a run event payload / state output."""
    return {
        "approval_id": approval.id,
        "proposal": approval.proposal_name,
        "hash": approval.proposal_hash,
        "status": str(approval.status),
        "decision": approval.decision,
        "approver": approval.decided_by,
        "reason": approval.reason,
        "scope": approval.scope,
        "decided_at": iso(approval.decided_at),
        "expires_at": iso(approval.expires_at),
    }


class Approvals(Repository):
    """``store.approvals``: approval rows, read and written in the caller's transaction."""

    def get(self, conn: sa.Connection, approval_id: str) -> Approval:
        row = conn.execute(sa.select(approvals).where(approvals.c.id == approval_id))
        found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"approval {approval_id} not found")
        return Approval.from_row(found)

    def find(self, conn: sa.Connection, ref: str) -> Approval:
        """An approval by id, or the newest one for a proposal hash (``sha256:`` optional)."""
        ref = ref.strip().removeprefix("sha256:")
        if len(ref) == 64:
            row = conn.execute(
                sa.select(approvals)
                .where(approvals.c.proposal_hash == ref)
                .order_by(approvals.c.id.desc())
                .limit(1)
            )
            found = row.mappings().one_or_none()
            if found is None:
                raise NotFound(f"no approval for proposal hash {ref}")
            return Approval.from_row(found)
        return self.get(conn, ref)

    def open_request(
        self,
        conn: sa.Connection,
        *,
        run_id: str,
        proposal_id: str,
        proposal_hash: str,
        proposal_name: str,
        state: str,
        approvers: list[str],
        on_timeout: str,
        expires_at: datetime | None,
        now: datetime,
        actor: str = "system",
    ) -> Approval:
        """Insert a pending approval for ``proposal_hash`` (its action then waits for it:
        ``store.actions.follow_approval``)."""
        approval = Approval(
            id=new_id(),
            run_id=run_id,
            proposal_id=proposal_id,
            proposal_hash=proposal_hash,
            proposal_name=proposal_name,
            state=state,
            approvers=list(approvers),
            scope=f"run:{run_id}",
            status=ApprovalStatus.PENDING,
            on_timeout=on_timeout,
            expires_at=expires_at,
            decision=None,
            decided_by=None,
            decided_hash=None,
            reason=None,
            decided_at=None,
            created_at=now,
            revision=1,
        )
        conn.execute(sa.insert(approvals).values(**approval.__dict__))
        return approval

    def close(
        self,
        conn: sa.Connection,
        approval: Approval,
        status: ApprovalStatus,
        *,
        now: datetime,
        actor: str,
        reason: str | None = None,
        decision: str | None = None,
        seen_hash: str | None = None,
    ) -> Approval | None:
        """Move a pending approval to ``status``; None when it was no longer pending. Then call
        ``store.actions.settle_for_approval``."""
        result = conn.execute(
            sa.update(approvals)
            .where(approvals.c.id == approval.id, approvals.c.status == ApprovalStatus.PENDING)
            .values(
                status=status,
                decision=decision,
                decided_by=actor,
                decided_hash=seen_hash,
                reason=reason,
                decided_at=now,
                revision=approvals.c.revision + 1,
            )
        )
        if result.rowcount != 1:
            return None
        closed = replace(
            approval,
            status=status,
            decision=decision,
            decided_by=actor,
            decided_hash=seen_hash,
            reason=reason,
            decided_at=now,
            revision=approval.revision + 1,
        )
        return closed

    def withdraw(
        self, conn: sa.Connection, approval: Approval, *, reason: str, now: datetime, actor: str
    ) -> Approval | None:
        """Cancel pending ``approval`` because what it was asked for changed, with its
        ``approval.withdrawn`` event on the (locked) run; None when it was no longer pending.
        Then call ``store.actions.follow_approval``."""
        closed = self.close(
            conn, approval, ApprovalStatus.CANCELED, now=now, actor=actor, reason=reason,
            decision="withdrawn",
        )  # fmt: skip
        if closed is not None:
            change_run(
                conn, approval.run_id, event_type="approval.withdrawn", actor=actor,
                payload=approval_summary(closed), now=now,
            )  # fmt: skip
        return closed

    def cancel_for_run(
        self, conn: sa.Connection, run_id: str, now: datetime, actor: str
    ) -> list[str]:
        """Cancel the run's pending approvals (the run is being canceled); their ids."""
        ids = list(
            conn.execute(
                sa.select(approvals.c.id).where(
                    approvals.c.run_id == run_id, approvals.c.status == ApprovalStatus.PENDING
                )
            ).scalars()
        )
        if ids:
            conn.execute(
                sa.update(approvals)
                .where(approvals.c.id.in_(ids))
                .values(
                    status=ApprovalStatus.CANCELED,
                    decided_by=actor,
                    decided_at=now,
                    reason="the run was canceled",
                    revision=approvals.c.revision + 1,
                )
            )
        return ids

    def announce_decision(
        self, conn: sa.Connection, run: Run, approval: Approval, now: datetime, actor: str
    ) -> None:
        """Record ``approval.decided`` on the (locked) run and wake it if it waits for this
        approval: the decision and the wake-up commit together, so a decision is never missed."""
        values: dict[str, Any] = {}
        waiting = run.waiting
        waits_for_it = (
            waiting is not None
            and waiting["kind"] == "approval"
            and waiting["approval_id"] == approval.id
        )
        if waits_for_it and run.status in (RunStatus.WAITING_FOR_APPROVAL, RunStatus.PAUSED):
            values["wake_at"] = now  # a paused run wakes once resumed
        change_run(
            conn, run.id, event_type="approval.decided", actor=actor,
            payload=approval_summary(approval), now=now, values=values,
        )  # fmt: skip
        if values:
            self._store.notify_work(conn, run.id)

    def newest(self, query: ListQuery, *, run_id: str | None = None) -> list[Approval]:
        """One page of approvals, newest first (see :class:`ListQuery`), optionally of one run."""
        stmt = newest_first(sa.select(approvals), approvals, query)
        if query.workflow is not None:
            stmt = stmt.where(approvals.c.run_id.in_(runs_of_workflow(query.workflow)))
        if query.scopes is not None:
            stmt = stmt.where(approvals.c.run_id.in_(runs_in_scopes(query.scopes)))
        if run_id is not None:
            stmt = stmt.where(approvals.c.run_id == run_id)
        with self._store.read() as conn:
            return [Approval.from_row(row) for row in conn.execute(stmt).mappings()]

    def of_run(self, conn: sa.Connection, run_id: str) -> list[Approval]:
        """Every approval of the run, oldest first, in the caller's transaction."""
        rows = conn.execute(
            sa.select(approvals).where(approvals.c.run_id == run_id).order_by(approvals.c.id)
        ).mappings()
        return [Approval.from_row(row) for row in rows]

    def approved(self, conn: sa.Connection, run_id: str, proposal_hash: str) -> list[Approval]:
        """The run's approvals of ``proposal_hash`` that approved it, newest first."""
        rows = conn.execute(
            sa.select(approvals)
            .where(
                approvals.c.run_id == run_id,
                approvals.c.proposal_hash == proposal_hash,
                approvals.c.status == ApprovalStatus.APPROVED,
            )
            .order_by(approvals.c.id.desc())
        ).mappings()
        return [Approval.from_row(row) for row in rows]
