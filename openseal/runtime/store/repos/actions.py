"""The actions-and-spend repository: one action per exact proposal of a run, keyed
``<run>:<proposal hash>``, and the spend reservations admission takes for it.

Lifecycle (DESIGN §5)::

    proposed → waiting_for_approval → admitted → dispatched → succeeded | failed | unknown
    rejected, expired, refused at admission → denied
    unknown → succeeded (lookup) | dispatched (same-key retry) | needs_attention
    canceled: the run was canceled before dispatch

Every transition is a conditional UPDATE on the expected status (so two writers can never
both move an action) plus a run event in the same transaction. Recording the outcome of a
dispatched action is deliberately *not* fenced by the run's epoch: it describes the outside
world, which changed whether or not this worker still holds the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import iso, new_id
from openseal.runtime.statuses import OPEN_OUTCOME, ActionStatus, ApprovalStatus
from openseal.runtime.store.db import fastsql
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.events import append_events
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import (
    ListQuery,
    newest_first,
    runs_in_scopes,
    runs_of_workflow,
)
from openseal.runtime.store.tables.records import Action, Approval, Proposal, evolve

actions = schema.actions
reservations = schema.spend_reservations

#: statuses before anything was sent: canceling the run cancels these
NOT_DISPATCHED = (
    ActionStatus.PROPOSED,
    ActionStatus.WAITING_FOR_APPROVAL,
    ActionStatus.ADMITTED,
    ActionStatus.DENIED,
)
#: statuses that block a run's migration until the action settles (invariant 17)
UNSETTLED = (ActionStatus.ADMITTED, *OPEN_OUTCOME)

#: the action statuses that follow their approval (nothing admitted or sent yet)
FOLLOWS_APPROVAL = (
    ActionStatus.PROPOSED,
    ActionStatus.WAITING_FOR_APPROVAL,
    ActionStatus.DENIED,
)


INSERT_ACTION = sa.insert(actions)
_moves: dict[tuple[tuple[str, ...], int], sa.Update] = {}


def _move_statement(keys: tuple[str, ...], allowed: int) -> sa.Update:
    """The conditional UPDATE of :meth:`Actions.move` for these extra columns and this many allowed
    statuses (``p_allowed_0`` ...: one parameter each, not an expanding list), built once."""
    stmt = _moves.get((keys, allowed))
    if stmt is None:
        columns = ("status", "history", "updated_at", "revision", *keys)
        stmt = (
            sa.update(actions)
            .where(
                actions.c.id == sa.bindparam("p_id"),
                actions.c.status.in_([sa.bindparam(f"p_allowed_{i}") for i in range(allowed)]),
                actions.c.revision == sa.bindparam("p_revision"),
            )
            .values(**{c: sa.bindparam(f"v_{c}", type_=actions.c[c].type) for c in columns})
        )
        _moves[(keys, allowed)] = stmt
    return stmt


@dataclass(frozen=True)
class NextMove:
    """A further move made by the same conditional UPDATE as the one it follows: the row goes
    from the first move's expected status straight to ``to`` (with both history entries, both
    events and both revisions), so no other transaction can see the status between."""

    to: ActionStatus
    values: dict[str, Any]
    event: dict[str, Any] | None = None


BY_KEY = sa.select(actions).where(actions.c.key == sa.bindparam("p_key"))
BY_ID = sa.select(actions).where(actions.c.id == sa.bindparam("p_id"))


#: appends one run event (type, payload, actor) in the caller's transaction; a fenced
#: transaction's ``append_event`` holds it back and writes it with the others at the end
EventSink = Callable[[str, dict[str, Any], str], Any]
#: inserts one row (table, row) in the caller's transaction; a fenced transaction's
#: ``insert_with_flush`` holds it back and inserts it with its run's events (on PostgreSQL by the
#: same statement)
RowSink = Callable[[sa.Table, dict[str, Any]], Any]


SETTLE = (
    sa.update(reservations)
    .where(
        reservations.c.action_id == sa.bindparam("p_action"),
        reservations.c.status.in_([sa.bindparam("p_from_0"), sa.bindparam("p_from_1")]),
    )
    .values(
        status=sa.bindparam("v_status"),
        updated_at=sa.bindparam("v_now", type_=reservations.c.updated_at.type),
    )
)


# One step of a move: from, to, its history entry, its run event's extra payload.
_Move = tuple[ActionStatus, ActionStatus, dict[str, Any], dict[str, Any]]


def _first_move(
    action: Action,
    to: ActionStatus,
    *,
    now: datetime,
    actor: str,
    note: str | None,
    event: dict[str, Any] | None,
    entry: dict[str, Any] | None,
) -> list[_Move]:
    """The first step of a move from ``action``'s status to ``to``."""
    first = {"at": iso(now), "from": str(action.status), "to": str(to), "actor": actor}
    first.update(entry or {})
    if note:
        first["note"] = note
    return [(action.status, to, first, {**({"note": note} if note else {}), **(event or {})})]


def _update_moved(
    conn: sa.Connection,
    action: Action,
    moved: Action,
    allowed: list[ActionStatus],
    values: dict[str, Any],
) -> bool:
    """The conditional UPDATE from ``action`` (at its revision, in an ``allowed`` status) to
    ``moved``; False when it matched no row."""
    params = {f"v_{k}": v for k, v in values.items()}
    params.update({f"p_allowed_{i}": str(status) for i, status in enumerate(allowed)})
    params.update(
        p_id=action.id, p_revision=action.revision, v_status=moved.status,
        v_history=moved.history, v_updated_at=moved.updated_at, v_revision=moved.revision,
    )  # fmt: skip
    stmt = _move_statement(tuple(sorted(values)), len(allowed))
    return fastsql.execute_count(conn, stmt, params) == 1


def _write_move_events(
    conn: sa.Connection,
    action: Action,
    moves: list[_Move],
    *,
    now: datetime,
    actor: str,
    events: EventSink | None,
) -> None:
    """The run events ``action.<to>`` of ``moves``: through ``events`` when given, else at once."""
    written = tuple(
        (f"action.{moved_to}", actor, {
            "action_id": action.id, "key": action.key, "proposal": action.proposal_name,
            "hash": action.proposal_hash, "from": str(moved_from), **extra,
        })
        for moved_from, moved_to, _, extra in moves
    )  # fmt: skip
    if events is not None:
        for name, by, payload in written:
            events(name, payload, by)
    elif append_events(conn, action.run_id, written, now=now) is None:
        raise NotFound(f"run {action.run_id} not found")


def action_boundary(action: Action) -> dict[str, Any]:
    """What may already have happened: "dispatched at …, outcome unknown/succeeded"."""
    outcome = {
        ActionStatus.DISPATCHED: "unknown",
        ActionStatus.UNKNOWN: "unknown",
        ActionStatus.NEEDS_ATTENTION: "unknown",
    }.get(action.status, str(action.status))
    return {
        "action_id": action.id,
        "key": action.key,
        "status": str(action.status),
        "sent": True,
        "dispatched_at": iso(action.dispatched_at),
        "outcome": outcome,
        "result": action.result if action.status == ActionStatus.SUCCEEDED else None,
        "note": f"dispatched at {iso(action.dispatched_at)}, outcome {outcome}",
    }


class Actions(Repository):
    """``store.actions``: actions and their spend reservations, in the caller's transaction
    (the caller holds the run's row lock first, see the package's lock order)."""

    def ensure(self, conn: sa.Connection, proposal: Proposal, now: datetime) -> Action:
        """The action of ``proposal``, created ``proposed`` on first sight."""
        action = self.new(proposal, now)
        if not fastsql.execute(conn, self._store.insert_new(actions, "key"), action.__dict__):
            found = self.by_key(conn, proposal.action_key)
            assert found is not None  # it is why nothing was inserted
            return found
        return action

    @staticmethod
    def new(proposal: Proposal, now: datetime) -> Action:
        """The ``proposed`` action of ``proposal``, not stored: for a proposal created in the
        caller's transaction, which no action can have yet (the key is the run and the
        proposal's hash, unique among the run's proposals), and whose first :meth:`move` in
        that transaction stores it (``insert=True``)."""
        return Action(
            id=new_id(),
            key=proposal.action_key,
            run_id=proposal.run_id,
            proposal_id=proposal.id,
            proposal_hash=proposal.hash,
            proposal_name=proposal.name,
            skill=proposal.skill,
            state=None,
            status=ActionStatus.PROPOSED,
            approval_id=None,
            attempts=0,
            admitted_at=None,
            dispatched_at=None,
            finished_at=None,
            result=None,
            error=None,
            history=[],
            resolution=None,
            created_at=now,
            updated_at=now,
            revision=1,
        )

    def by_key(self, conn: sa.Connection, key: str) -> Action | None:
        row = fastsql.one_or_none(fastsql.execute(conn, BY_KEY, {"p_key": key}))
        return None if row is None else Action.from_row(row)

    def get(self, conn: sa.Connection, action_id: str) -> Action:
        found = fastsql.one_or_none(fastsql.execute(conn, BY_ID, {"p_id": action_id}))
        if found is None:
            found = fastsql.one_or_none(fastsql.execute(conn, BY_KEY, {"p_key": action_id}))
        if found is None:
            raise NotFound(f"action {action_id} not found")
        return Action.from_row(found)

    def move(
        self,
        conn: sa.Connection,
        action: Action,
        to: ActionStatus,
        *,
        now: datetime,
        actor: str,
        expect: Iterable[ActionStatus] | None = None,
        note: str | None = None,
        event: dict[str, Any] | None = None,
        events: EventSink | None = None,
        entry: dict[str, Any] | None = None,
        then: NextMove | None = None,
        insert: bool = False,
        rows: RowSink | None = None,
        **values: Any,
    ) -> Action | None:
        """Move ``action`` (from one of ``expect``, default its current status) to ``to``.

        Appends to the action's history (with ``entry``'s extra fields) and a run event
        ``action.<to>`` (through ``events`` when given, else written at once); returns None
        (writing nothing) when the action was no longer in an expected status. ``then``: a
        further move in the same UPDATE (see :class:`NextMove`). ``insert``: ``action`` is
        not stored yet (:meth:`new`), and is inserted as the move leaves it, instead of
        updated: one statement where inserting it and then moving it takes two; through
        ``rows`` when given (held back with the run's events).
        """
        allowed = list(expect) if expect is not None else [action.status]
        moves = _first_move(action, to, now=now, actor=actor, note=note, event=event, entry=entry)
        if then is not None:
            second = {"at": iso(now), "from": str(to), "to": str(then.to), "actor": actor}
            moves.append((to, then.to, second, then.event or {}))
            values = {**values, **then.values}
        history = [*action.history, *(entry for _, _, entry, _ in moves)]
        status, revision = moves[-1][1], action.revision + len(moves)
        moved = evolve(
            action, status=status, history=history, updated_at=now, revision=revision, **values
        )
        if insert and rows is not None:
            rows(actions, dict(moved.__dict__))
        elif insert:
            fastsql.execute(conn, INSERT_ACTION, moved.__dict__)
        elif not _update_moved(conn, action, moved, allowed, values):
            return None
        _write_move_events(conn, action, moves, now=now, actor=actor, events=events)
        # Inserted so, or the conditional UPDATE matched the revision read: the row is this now.
        return moved

    def reserved_total(
        self, conn: sa.Connection, scope: str, currency: str | None, since: datetime | None = None
    ) -> float:
        """Reserved and committed spend on ``scope`` (reserved at or after ``since`` if given)."""
        stmt = sa.select(sa.func.coalesce(sa.func.sum(reservations.c.amount), 0.0)).where(
            reservations.c.scope == scope, reservations.c.status.in_(["reserved", "committed"])
        )
        if currency is not None:
            stmt = stmt.where(reservations.c.currency == currency)
        if since is not None:
            stmt = stmt.where(reservations.c.created_at >= since)
        return float(conn.execute(stmt).scalar_one())

    def reservations_on(
        self, conn: sa.Connection, scope: str
    ) -> list[tuple[str, str, float, str, datetime]]:
        """The spend held on ``scope`` (reserved or committed), oldest first: ``(run_id,
        action_id, amount, currency, created_at)`` (replay counts a shared budget again)."""
        stmt = (
            sa.select(reservations.c.run_id, reservations.c.action_id, reservations.c.amount,
                      reservations.c.currency, reservations.c.created_at)
            .where(reservations.c.scope == scope,
                   reservations.c.status.in_(["reserved", "committed"]))
            .order_by(reservations.c.created_at, reservations.c.id)
        )  # fmt: skip
        return [
            (str(r[0]), str(r[1]), float(r[2]), str(r[3]), r[4]) for r in conn.execute(stmt).all()
        ]

    def reserve(
        self,
        conn: sa.Connection,
        action: Action,
        scope: str,
        amount: float,
        currency: str,
        now: datetime,
        rows: RowSink | None = None,
    ) -> None:
        """Reserve ``amount`` of budget ``scope`` for ``action``; through ``rows`` when given
        (after ``action`` itself, when a move held it back there)."""
        row = dict(
            id=new_id(), action_id=action.id, run_id=action.run_id, scope=scope, amount=amount,
            currency=currency, status="reserved", created_at=now, updated_at=now,
        )  # fmt: skip
        if rows is not None:
            rows(reservations, row)
        else:
            conn.execute(sa.insert(reservations).values(**row))

    def quota_holds(self, conn: sa.Connection, action_id: str) -> list[tuple[str, float, str]]:
        """The action's spend counted against its scope's quotas (reservations kept under
        ``quota:<scope>:<measure>:<period>:<window>``): ``(that, amount, status)``."""
        rows = conn.execute(
            sa.select(reservations.c.scope, reservations.c.amount, reservations.c.status)
            .where(reservations.c.action_id == action_id,
                   reservations.c.scope.startswith("quota:"))
            .order_by(reservations.c.scope)
        ).all()  # fmt: skip
        return [(str(r[0]), float(r[1]), str(r[2])) for r in rows]

    def settle(self, conn: sa.Connection, action_id: str, status: str, now: datetime) -> None:
        """Spend follows the evidence: ``committed`` once the effect is confirmed (even after a
        release — a confirmation can arrive late), ``released`` once it certainly did not happen."""
        held = ("reserved", "released") if status == "committed" else ("reserved", "reserved")
        params: dict[str, Any] = {"p_action": action_id, "p_from_0": held[0], "p_from_1": held[1]}
        params.update(v_status=status, v_now=now)
        fastsql.execute_count(conn, SETTLE, params)

    def note(
        self,
        conn: sa.Connection,
        action: Action,
        entry: dict[str, Any],
        *,
        now: datetime,
        actor: str,
        event: str,
        payload: dict[str, Any],
        events: EventSink | None = None,
    ) -> Action | None:
        """Add ``entry`` to the action's history without changing its status, with run event
        ``event`` (evidence that changes nothing, such as a late reply to an earlier attempt).
        None when the action changed meanwhile."""
        history = [*action.history, {"at": iso(now), "actor": actor, **entry}]
        params: dict[str, Any] = {
            "p_allowed_0": str(action.status), "p_id": action.id, "p_revision": action.revision,
            "v_status": action.status, "v_history": history, "v_updated_at": now,
            "v_revision": action.revision + 1,
        }  # fmt: skip
        if fastsql.execute_count(conn, _move_statement((), 1), params) != 1:
            return None
        body = {"action_id": action.id, "key": action.key, **payload}
        if events is not None:
            events(event, body, actor)
        elif append_events(conn, action.run_id, ((event, actor, body),), now=now) is None:
            raise NotFound(f"run {action.run_id} not found")
        return evolve(action, history=history, updated_at=now, revision=action.revision + 1)

    def spend_of(self, conn: sa.Connection, action_id: str) -> list[dict[str, Any]]:
        rows = conn.execute(
            sa.select(reservations)
            .where(reservations.c.action_id == action_id)
            .order_by(reservations.c.id)
        ).mappings()
        return [
            {
                "scope": r["scope"],
                "amount": r["amount"],
                "currency": r["currency"],
                "status": r["status"],
            }
            for r in rows
        ]

    def follow_approval(
        self,
        conn: sa.Connection,
        approval: Approval,
        status: ActionStatus,
        now: datetime,
        actor: str,
    ) -> None:
        """Move the approval's action (only one not yet admitted follows its approval's fate) to
        ``status``, with its ``action.<status>`` event, in the caller's transaction: waiting
        for it once it is opened, denied once it did not approve."""
        row = conn.execute(
            sa.select(actions).where(
                actions.c.run_id == approval.run_id,
                actions.c.proposal_hash == approval.proposal_hash,
                actions.c.status.in_(FOLLOWS_APPROVAL),
            )
        ).mappings()
        for found in row.all():
            action = Action.from_row(found)
            if action.status == status and action.approval_id == approval.id:
                continue
            note = f"approval {approval.id} {approval.status}"
            self.move(
                conn, action, status, now=now, actor=actor, expect=FOLLOWS_APPROVAL, note=note,
                approval_id=approval.id,
            )  # fmt: skip

    def settle_for_approval(
        self, conn: sa.Connection, closed: Approval, now: datetime, actor: str
    ) -> None:
        """After ``store.approvals.close``, in its transaction: an approval that did not approve
        denies its action (when not admitted yet), with the action's event. Call it after the
        approval's own event, so the run's events read in order."""
        if closed.status != ApprovalStatus.APPROVED:
            self.follow_approval(conn, closed, ActionStatus.DENIED, now, actor)

    def cancel_for_run(
        self, conn: sa.Connection, run_id: str, now: datetime, actor: str
    ) -> list[dict[str, Any]]:
        """The run is being canceled: cancel what was not sent, report what may have happened.

        An action not yet dispatched becomes ``canceled`` (the caller releases its spend): the
        worker must mark it ``dispatched`` in a fenced write before sending, which the cancel's
        epoch bump refuses. Anything dispatched is reported as it stands — it may have happened.
        """
        rows = conn.execute(
            sa.select(actions).where(actions.c.run_id == run_id).order_by(actions.c.id)
        ).mappings()
        report: list[dict[str, Any]] = []
        for row in rows:
            action = Action.from_row(row)
            if action.status in NOT_DISPATCHED:
                self.move(
                    conn,
                    action,
                    ActionStatus.CANCELED,
                    now=now,
                    actor=actor,
                    note="the run was canceled",
                )
                report.append({"action_id": action.id, "key": action.key, "status": "canceled",
                               "was": str(action.status), "sent": False})  # fmt: skip
            elif action.status in (*OPEN_OUTCOME, ActionStatus.SUCCEEDED, ActionStatus.FAILED):
                report.append(action_boundary(action))
        return report

    def unsettled(self, conn: sa.Connection, run_id: str) -> list[Action]:
        """The run's actions that may have had an effect and are not settled (admitted,
        dispatched, unknown or needing attention): a migration does not move the run past them."""
        rows = conn.execute(
            sa.select(actions)
            .where(actions.c.run_id == run_id, actions.c.status.in_([str(s) for s in UNSETTLED]))
            .order_by(actions.c.id)
        ).mappings()
        return [Action.from_row(row) for row in rows]

    def newest(self, query: ListQuery, *, run_id: str | None = None) -> list[Action]:
        """One page of actions, newest first (see :class:`ListQuery`), optionally of one run."""
        stmt = newest_first(sa.select(actions), actions, query)
        if query.workflow is not None:
            stmt = stmt.where(actions.c.run_id.in_(runs_of_workflow(query.workflow)))
        if query.scopes is not None:
            stmt = stmt.where(actions.c.run_id.in_(runs_in_scopes(query.scopes)))
        if run_id is not None:
            stmt = stmt.where(actions.c.run_id == run_id)
        with self._store.read() as conn:
            return [Action.from_row(row) for row in conn.execute(stmt).mappings()]

    def of_run(self, conn: sa.Connection, run_id: str) -> list[Action]:
        """Every action of the run, oldest first, in the caller's transaction."""
        rows = conn.execute(
            sa.select(actions).where(actions.c.run_id == run_id).order_by(actions.c.id)
        ).mappings()
        return [Action.from_row(row) for row in rows]

    def lock_budget(self, conn: sa.Connection, scope: str) -> None:
        """Serialise reservations on one budget (a PostgreSQL advisory lock; SQLite's write
        lock already does) so two runs cannot both fit into the last of a shared budget."""
        self._store.lock_event_name(conn, f"spend:{scope}")
