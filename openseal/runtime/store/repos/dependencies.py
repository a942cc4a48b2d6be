"""Dependency groups: the child runs one visit of a ``spawn`` state starts, joined by a rule.

A group is made, and its children started (each pinned to the version of its workflow active
now), in the parent's fenced transaction, which then leaves the parent
``waiting_for_dependency``. A child ending settles its membership (:meth:`settle_member`) in
the transaction that ends it: it locks the child, then the parent — the order agent requests
use too. When the rule is met (``needed`` children completed) or can no longer be met, the
group becomes ``done`` or ``failed`` in that transaction and the waiting parent is woken,
exactly once: only an ``open`` group settles. The deadline is the parent's wake-up time; the
parent expires the group itself (:meth:`expire`).

Cancelling the parent cancels its open groups in its transaction
(:meth:`cancel_for_run`); their children, unless ``detach``, are canceled after that commit,
like a canceled caller's request children.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import new_id
from openseal.runtime.statuses import LIVE_RUN_STATUSES, TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.repos.run_rows import load_run
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run

groups = schema.dependency_groups
members = schema.dependency_members
runs = schema.runs

OPEN = "open"
#: how a group can be settled; the parent's ``spawn`` state leaves by the same event
SETTLED = ("done", "failed", "expired", "canceled")


@dataclass(frozen=True)
class Member:
    """One child of a group, with its run as it stands."""

    label: str
    workflow: str
    run_id: str
    #: the child run's status now
    status: str
    #: the child's workflow outputs once it completed, else None
    outputs: Any


@dataclass(frozen=True)
class DependencyGroup:
    id: str
    parent_run_id: str
    state: str
    visit: int
    join: str
    needed: int
    detach: bool
    status: str
    reason: str | None
    deadline: datetime | None
    created_at: datetime
    settled_at: datetime | None
    members: tuple[Member, ...]

    def summary(self) -> dict[str, Any]:
        """What the ``spawn`` state leaves with: each child by label, and the counts."""
        return {
            "children": {
                m.label: {"run_id": m.run_id, "workflow": m.workflow, "status": m.status,
                          "outputs": m.outputs}
                for m in self.members
            },
            "completed": sum(m.status == RunStatus.COMPLETED for m in self.members),
            "failed": sum(m.status in (RunStatus.FAILED, RunStatus.CANCELED)
                          for m in self.members),
        }  # fmt: skip


@dataclass(frozen=True)
class NewChild:
    """A child to start: its label, workflow name, pinned version and inputs."""

    label: str
    workflow: str
    digest: str
    inputs: dict[str, Any]


def _outputs(row: Mapping[Any, Any]) -> Any:
    """A completed child's workflow outputs; None before it completes."""
    if row["status"] != RunStatus.COMPLETED:
        return None
    return (row["context"] or {}).get("outputs")


def outcome(needed: int, statuses: list[str | None]) -> str | None:
    """``done`` once ``needed`` children completed, ``failed`` once that can no longer happen,
    else None (still open)."""
    completed = sum(s == RunStatus.COMPLETED for s in statuses)
    running = sum(s is None for s in statuses)
    if completed >= needed:
        return "done"
    if completed + running < needed:
        return "failed"
    return None


#: the join's outcome, by its name outside the store (replay counts a join again)
join_outcome = outcome


class Dependencies(Repository):
    """``store.dependencies``: dependency groups of child runs and their join."""

    def get(self, group_id: str) -> DependencyGroup:
        with self._store.read() as conn:
            return self.get_in(conn, group_id)

    def get_in(self, conn: sa.Connection, group_id: str) -> DependencyGroup:
        row = conn.execute(sa.select(groups).where(groups.c.id == group_id)).mappings().first()
        if row is None:
            raise NotFound(f"dependency group {group_id} not found")
        found = conn.execute(
            sa.select(members.c.label, members.c.workflow, members.c.run_id, runs.c.status,
                      runs.c.context)
            .join(runs, runs.c.id == members.c.run_id)
            .where(members.c.group_id == group_id)
            .order_by(members.c.label)
        ).mappings()  # fmt: skip
        children = tuple(
            Member(m["label"], m["workflow"], m["run_id"], str(m["status"]), _outputs(m))
            for m in found
        )
        return DependencyGroup(
            id=row["id"], parent_run_id=row["parent_run_id"], state=row["state"],
            visit=row["visit"], join=row["join_rule"], needed=row["needed"],
            detach=bool(row["detach"]), status=row["status"], reason=row["reason"],
            deadline=row["deadline"], created_at=row["created_at"],
            settled_at=row["settled_at"], members=children,
        )  # fmt: skip

    def of_run(self, run_id: str) -> list[DependencyGroup]:
        """The groups ``run_id`` started, oldest first."""
        with self._store.read() as conn:
            ids = conn.execute(
                sa.select(groups.c.id)
                .where(groups.c.parent_run_id == run_id)
                .order_by(groups.c.created_at, groups.c.id)
            ).scalars()
            return [self.get_in(conn, str(group_id)) for group_id in list(ids)]

    def children_of(self, run_id: str) -> list[Run]:
        """Every child run of ``run_id`` (spawned or delegated), oldest first."""
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(runs).where(runs.c.parent_run_id == run_id).order_by(runs.c.id)
            ).mappings()
            return [Run.from_row(row) for row in found]

    # -- inside other transactions ---------------------------------------------------------

    def open_in(
        self,
        conn: sa.Connection,
        parent: Run,
        *,
        state: str,
        visit: int,
        join: str,
        needed: int,
        detach: bool,
        deadline: datetime | None,
        reason: str | None = None,
    ) -> str:
        """Make a group of ``parent``'s, in the parent's fenced transaction (which holds the
        parent's row lock); its id. With ``reason`` the group is ``failed`` at once (a child
        could not be started). Its children are started by the caller, each recorded with
        :meth:`add_member_in`."""
        now = self._store.now()
        group_id = new_id()
        conn.execute(
            sa.insert(groups).values(
                id=group_id, parent_run_id=parent.id, state=state, visit=visit,
                join_rule=join, needed=needed, detach=detach,
                status=OPEN if reason is None else "failed", reason=reason,
                deadline=deadline, created_at=now, settled_at=None if reason is None else now,
            )
        )  # fmt: skip
        return group_id

    def add_member_in(
        self, conn: sa.Connection, group_id: str, run_id: str, child: NewChild
    ) -> None:
        """Record ``run_id``, started for ``child``, as a member of the group."""
        conn.execute(
            sa.insert(members).values(
                run_id=run_id, group_id=group_id, label=child.label,
                workflow=child.workflow, status=None,
            )
        )  # fmt: skip

    def settle_member(
        self, conn: sa.Connection, child: Run, status: RunStatus, now: datetime
    ) -> str | None:
        """A child run ends (in the transaction that ends it; its row lock is held): record it,
        and settle its group when the join is decided, waking the waiting parent. Returns how
        the group was settled (``done``, ``failed``) when this end settled it, else None."""
        if status not in TERMINAL_RUN_STATUSES:
            return None
        member = conn.execute(
            sa.select(members).where(members.c.run_id == child.id)
        ).mappings().first()  # fmt: skip
        if member is None or member["status"] is not None:
            return None  # not a spawned child, or settled already
        parent = load_run(self._store, conn, str(child.parent_run_id), lock=True)
        group = self._locked_group(conn, member["group_id"])
        conn.execute(
            sa.update(members).where(members.c.run_id == child.id).values(status=str(status))
        )
        payload: dict[str, Any] = {
            "dependency_group_id": group["id"], "child": member["label"],
            "child_run_id": child.id, "status": str(status),
        }  # fmt: skip
        settled = None
        if group["status"] == OPEN:
            statuses = conn.execute(
                sa.select(members.c.status).where(members.c.group_id == group["id"])
            ).scalars()
            settled = outcome(int(group["needed"]), list(statuses))
        values: dict[str, Any] = {}
        if settled is not None:
            self._settle(conn, group["id"], settled, now)
            payload["settled"] = settled
            # a paused parent wakes when it is resumed (it waits again with this wake-up)
            waiting = RunStatus.WAITING_FOR_DEPENDENCY
            if waiting in (parent.status, parent.paused_from_status):
                values["wake_at"] = now
        change_run(
            conn, parent.id, event_type="dependency.child_ended", actor=f"run:{child.id}",
            payload=payload, now=now, values=values,
        )  # fmt: skip
        if values:
            self._store.notify_work(conn, parent.id)
        return settled

    def expire(self, group_id: str, now: datetime) -> None:
        """The deadline passed: an open group is ``expired`` (locks the parent, then the
        group). Settled meanwhile, it is left as it is."""
        with self._store.write() as conn:
            parent_id = conn.execute(
                sa.select(groups.c.parent_run_id).where(groups.c.id == group_id)
            ).scalar_one()
            load_run(self._store, conn, parent_id, lock=True)
            if self._locked_group(conn, group_id)["status"] == OPEN:
                self._settle(conn, group_id, "expired", now)

    def status_in(self, conn: sa.Connection, group_id: str) -> str:
        """The group's status, read in the parent's transaction."""
        return str(
            conn.execute(sa.select(groups.c.status).where(groups.c.id == group_id)).scalar_one()
        )

    def cancel_for_run(self, conn: sa.Connection, run_id: str, now: datetime) -> list[str]:
        """The parent is canceled (its row lock is held): its open groups are ``canceled``;
        the children to cancel after the commit — those still running, except in a group
        that lets them ``detach``."""
        conn.execute(
            sa.update(groups)
            .where(groups.c.parent_run_id == run_id, groups.c.status == OPEN)
            .values(status="canceled", settled_at=now, reason="the parent run was canceled")
        )
        return self.running_children(conn, run_id)

    def abandoned(self, limit: int) -> list[tuple[str, str]]:
        """Children still running in groups their parent's cancel closed (and that do not
        detach), as (child run id, parent run id): the ones the cancel's process did not
        reach, since it cancels them after its commit."""
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(members.c.run_id, groups.c.parent_run_id)
                .select_from(runs)
                .join(members, members.c.run_id == runs.c.id)
                .join(groups, groups.c.id == members.c.group_id)
                .where(
                    runs.c.parent_run_id.is_not(None),  # from the child runs (an index)
                    runs.c.status.in_(LIVE_RUN_STATUSES),
                    groups.c.status == "canceled",
                    groups.c.detach.is_(False),
                    members.c.status.is_(None),
                )
                .order_by(members.c.run_id)
                .limit(limit)
            ).all()
        return [(str(child), str(parent)) for child, parent in found]

    def running_children(self, conn: sa.Connection, run_id: str) -> list[str]:
        """The children of ``run_id``'s groups that still run and do not detach."""
        found = conn.execute(
            sa.select(members.c.run_id)
            .join(groups, groups.c.id == members.c.group_id)
            .where(
                groups.c.parent_run_id == run_id,
                groups.c.detach.is_(False),
                members.c.status.is_(None),
            )
            .order_by(members.c.run_id)
        ).scalars()
        return [str(child) for child in found]

    def _locked_group(self, conn: sa.Connection, group_id: str) -> Mapping[Any, Any]:
        stmt = sa.select(groups).where(groups.c.id == group_id)
        return conn.execute(self._store.for_update(stmt)).mappings().one()

    def _settle(self, conn: sa.Connection, group_id: str, status: str, now: datetime) -> None:
        conn.execute(
            sa.update(groups)
            .where(groups.c.id == group_id, groups.c.status == OPEN)
            .values(status=status, settled_at=now)
        )
