"""FencedTx: the only way an engine holding a claim writes to its run.

``store.leases.fenced(claim)`` opens one transaction, checks that the run's epoch and lease owner
still match the claim (invariant 3) and hands out a FencedTx whose methods all write inside
that transaction. Every change appends its event in the same transaction (invariant 1), and
leaving ``running`` releases the lease in the same UPDATE (invariant 5).

Changes to the run row and their events are held back and written together — one UPDATE of
the run and one INSERT of its events — when the transaction ends, or earlier whenever a caller
takes :attr:`FencedTx.conn` (so anything written through the connection directly comes after
them in the event sequence). The run row stays locked for the whole transaction, so the
sequence numbers the held-back events will get are known in advance. Turns started in the
transaction are held back the same way (a pure state's turn is started and ended in it, and is
inserted once, ended), all in one INSERT, and so are rows of other tables that nothing reads
back before then (:meth:`FencedTx.insert_with_flush`: the action an admission inserts) and
UPDATEs whose outcome nothing needs before then (:meth:`FencedTx.update_with_flush`: a turn
ended without an event of its own). On PostgreSQL all of it is one statement.

A run that ends (``completed``, ``failed``, ``canceled``) settles what its end decides — its
objective, and for a child run its agent request and its parent's join — in this transaction,
before the change that ends it; the engine decides that and calls each repository with this
transaction (:mod:`openseal.runtime.engine.endings`), then passes what it settled
(:class:`RunEnd`) to :meth:`FencedTx.update_run`, which refuses an end without it.

A claim of a run its transaction created and has not written (``Leases.claim_and_start``,
``unwritten``) starts from that run with its ``run.created`` held back: the first flush inserts
the row as the transaction has changed it, instead of updating it, and writes ``run.created``
with the claim's events, in one INSERT.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, NoReturn, TypeVar

import sqlalchemy as sa

from openseal.contract import EventWait, RunContext, Waiting
from openseal.errors import StoreError
from openseal.runtime.clock import iso, new_id
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.store.db import combined, fastsql
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.errors import IdempotencyConflict, NotFound, transient
from openseal.runtime.store.db.fastsql import execute_driver_sql
from openseal.runtime.store.db.group_commit import open_savepoint
from openseal.runtime.store.db.json_text import compact_json, loads_json
from openseal.runtime.store.repos.events import EVENT_WRITES, Fence, append_events, lease_released
from openseal.runtime.store.repos.inbound_events import consume, first_unconsumed_match
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import (
    Activity,
    Claim,
    Event,
    InboundEvent,
    Run,
    Turn,
    UnwrittenRun,
    evolve,
    run_status,
)
from openseal.runtime.store.tables.statements import ACTIVE_DIGEST, ACTIVE_RECOVERY

log = logging.getLogger(__name__)
T = TypeVar("T")

#: the savepoint of :meth:`FencedTx.attempt` (rolled back to at once if the attempt fails, so
#: one name serves every attempt)
ATTEMPT_SAVEPOINT: Final = "fenced_attempt"


class FenceRefused(Exception):
    """The fence sent with a fenced write's first statement (:class:`PendingFence`) found that
    the claim no longer holds the run: raised by that statement (and by any later look at the
    run, and before the commit, so a body that swallows it commits nothing), so the write's
    transaction is rolled back; ``Leases.fenced`` records the rejection and raises
    ``StaleEpoch`` instead. An ``Exception``, not a ``ClaimLost``: raised from a statement's
    execution, a ``BaseException`` is taken by SQLAlchemy for an interrupted connection and
    invalidates it, failing every member of a batch."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        super().__init__(f"the claim no longer holds the run (epoch {row['epoch']})")
        self.row = row


@dataclass
class PendingFence:
    """The fence of a fenced write sent with the body's first statement rather than alone
    (``Leases.fenced(pipelined=True)``): the run the transaction starts from is only known,
    and only looked at, once its row is in."""

    #: reads the fence's row now (when the pipeline it went in failed before handing it over)
    read: Callable[[], list[dict[str, Any]]]
    #: whether a fence's row shows the claim holding the run
    holds: Callable[[Mapping[str, Any]], bool]
    #: the run the transaction starts from, given the fence's row of a claim that holds it
    start: Callable[[Mapping[str, Any]], Run]
    #: the fence's row, once in
    row: dict[str, Any] | None = None


class _Unset:
    """Marks an ``update_run`` argument the caller did not pass (None is a real value)."""


UNSET: Final = _Unset()

runs = schema.runs
turns = schema.turns
RUN_FIELDS: Final = frozenset(Run.__dataclass_fields__)
#: the run's JSON columns
JSON_FIELDS: Final = ("context", "waiting", "budget_used")
INSERT_ACTIVITY: Final = sa.insert(schema.activities)
LAST_TURN_SEQ: Final = sa.select(sa.func.max(turns.c.seq)).where(
    turns.c.run_id == sa.bindparam("p_run")
)
SELECT_ACTIVITY: Final = sa.select(schema.activities).where(
    schema.activities.c.run_id == sa.bindparam("p_run"),
    schema.activities.c.activity_id == sa.bindparam("p_activity"),
)
_turn_updates: dict[tuple[tuple[str, ...], bool], sa.Update] = {}


def _turn_update(keys: tuple[str, ...], whole_row: bool = True) -> sa.Update:
    """``UPDATE turns SET <keys> WHERE id AND run_id RETURNING *`` (or only ``id``), built once
    per shape."""
    stmt = _turn_updates.get((keys, whole_row))
    if stmt is None:
        stmt = (
            sa.update(turns)
            .where(turns.c.id == sa.bindparam("p_id"), turns.c.run_id == sa.bindparam("p_run"))
            .values(**{k: sa.bindparam(f"v_{k}", type_=turns.c[k].type) for k in keys})
            .returning(*(turns.c if whole_row else (turns.c.id,)))
        )
        _turn_updates[(keys, whole_row)] = stmt
    return stmt


#: named commit points of fenced transactions that settle what a run's end decides (what
#: :class:`RunEnd` says it settled), where a crash test can stop a worker
#: (``store.leases.commit_hook``, :mod:`openseal.runtime.faults`): a child's end settled its
#: parent's join (and woke the parent); a run's end created its objective's next run. The hook
#: gets the point before the commit and ``<point>.committed`` after it.
JOIN_SETTLED, RETRY_CREATED = "dependency.settle", "objective.retry"
COMMIT_POINTS: Final = (JOIN_SETTLED, RETRY_CREATED)
#: a crash test's hook at those commit points, called with the point's name and the claim
CommitHook = Callable[[str, Claim], None]

SELECT_COUNTERS: Final = sa.select(runs.c.last_event_seq, runs.c.revision).where(
    runs.c.id == sa.bindparam("p_id")
)
#: the active digest of deployment ``:p_name`` and the id of the recovery in progress (None:
#: the store is not in recovery mode), in one statement
DEPLOYED_AND_RECOVERY: Final = sa.select(
    ACTIVE_DIGEST.scalar_subquery().label("active_digest"),
    ACTIVE_RECOVERY.scalar_subquery().label("recovery_id"),
)


@dataclass(frozen=True)
class RunEnd:
    """What a run's end settled in its transaction before the change that ends it
    (:meth:`FencedTx.update_run`): the ending event says it, and the commit points follow it."""

    #: what the end did to the run's objective (the ending event's ``objective``), or None
    objective: dict[str, Any] | None = None
    #: the ``objective`` the ending event says instead if the UPDATE last held back
    #: (:meth:`FencedTx.update_with_flush`: the objective settled with the end) changes a row
    if_updated: dict[str, Any] | None = None
    #: a child run's end settled its parent's join
    join_settled: bool = False


class FencedTx:
    """One fenced write transaction of a claim holder; see the module docstring."""

    def __init__(
        self,
        db: StoreBase,
        conn: sa.Connection,
        claim: Claim,
        now: datetime,
        run: Run,
        *,
        held: bool = True,
        unwritten: UnwrittenRun | None = None,
        fence: PendingFence | None = None,
    ) -> None:
        #: the database's hooks (an event name's lock, wake-ups), never a repository
        self._db = db
        self._conn = conn
        self.claim = claim
        self.now = now
        self.actor = f"worker:{claim.worker_id}"
        #: the fence while its row is not in (``run`` is then what the claim's last write left)
        self._fence = fence
        #: the fence's row when it found the claim no longer holding the run
        self.refused: Mapping[str, Any] | None = None
        #: the run as this transaction sees it, held-back changes included
        self._run = self._start = run
        self._values: dict[str, Any] = {}
        self._events: list[tuple[str, str, dict[str, Any]]] = []
        #: whether the run's row is written: ``unwritten`` (``run``) is inserted by the first
        #: flush, its ``run.created`` first among the events
        self._stored = unwritten is None
        if unwritten is not None:
            self._events.append(unwritten.created_event)
        #: turns started in this transaction and not inserted yet, by id
        self._turns: dict[str, Turn] = {}
        #: rows of other tables held back (:meth:`insert_with_flush`), inserted after the turns
        self._rows: list[tuple[sa.Table, Mapping[str, Any]]] = []
        #: UPDATEs held back (:meth:`update_with_flush`), each with what receives its outcome
        self._updates: list[
            tuple[sa.Update | sa.Insert, Mapping[str, Any], Callable[[list[Any]], None]]
        ] = []
        #: events whose payload hangs on a held-back update: index → (update, payload if it hits)
        self._alternatives: dict[int, tuple[int, dict[str, Any]]] = {}
        #: held-back events whose payload gets the database's clock: event index to the field
        self._stamps: dict[int, str] = {}
        #: whether the stored row is known to be held by this claim: the flush's UPDATE then
        #: also requires epoch, owner and ``running`` (a transaction that lost its lock must
        #: not write over a takeover)
        self._row_held = held
        #: the connection's own dict, where the store counts the statements that wrote events
        self._info = conn.info
        #: event writes on it so far: one more means someone appended to a run through
        #: :attr:`conn`, and the sequence must be read again
        self._writes_seen = self._info.get(EVENT_WRITES, 0)
        #: the :data:`COMMIT_POINTS` this transaction passes (a join settled, a retry created)
        self.commit_points: list[str] = []
        #: deployments' active digests (None: never activated) read in this transaction with
        #: the fence, for an admission in it (``Leases.fenced(deployment=...)``)
        self.active_digests: dict[str, str | None] = {}
        #: whether the store is in recovery mode, as read in this transaction (None: not read;
        #: see :meth:`look_up`): a dispatch marked here is not sent when it is (invariant 18)
        self.in_recovery: bool | None = None

    @property
    def _run(self) -> Run:
        if self._fence is not None:
            self.await_fence()
        return self._current

    @_run.setter
    def _run(self, run: Run) -> None:
        self._current = run

    def fence_arrived(self, rows: list[dict[str, Any]]) -> None:
        """The fence's row is in (:class:`PendingFence`): raises :class:`FenceRefused` when
        the claim no longer holds the run, failing the statement it travelled with."""
        fence = self._fence
        if fence is None or fence.row is not None:
            return
        (row,) = rows
        fence.row = row
        if not fence.holds(row):
            self.refused = row
            raise FenceRefused(row)

    def abandon_fence(self) -> None:
        """The body failed before the fence's row was in: the row, when it comes (with the
        statement that undoes the body), is handed to no one, so that undoing never fails
        for it. A fence that refused the claim already stays refused."""
        if self._fence is not None and self._fence.row is None:
            self._fence = None

    def await_fence(self) -> None:
        """Have the fence's row and start from the run it says, sending the fence now if it
        has not gone yet (nothing followed it); raises :class:`FenceRefused` when the claim no
        longer holds the run. Nothing to do for a fence read before the body."""
        fence = self._fence
        if fence is None:
            return
        if self.refused is not None:
            raise FenceRefused(self.refused)
        if fence.row is None:
            fastsql.send_owed(self._conn)
        if fence.row is None:  # its pipeline failed before handing it over: read again
            self.fence_arrived(fence.read())
        assert fence.row is not None
        run = fence.start(fence.row)
        self._fence = None
        self._current = self._start = run

    def look_up(self, deployment: str) -> bool:
        """Whether the store is in recovery mode, with the active digest of ``deployment`` in
        :attr:`active_digests`, both as read in this transaction: by one statement, unless the
        transaction read them already (with its fence or the creation it joins)."""
        if self.in_recovery is None or deployment not in self.active_digests:
            (row,) = fastsql.execute(self._conn, DEPLOYED_AND_RECOVERY, {"p_name": deployment})
            self.active_digests[deployment] = row["active_digest"]
            self.in_recovery = row["recovery_id"] is not None
        return self.in_recovery

    @property
    def conn(self) -> sa.Connection:
        """The transaction's connection, after writing the changes held back so far."""
        self.flush()
        return self._conn

    @property
    def row_conn(self) -> sa.Connection:
        """The transaction's connection, with held-back changes left held back: only for
        statements on other tables that append no run events themselves (pass
        :meth:`append_event` where a helper takes an event sink) and read no row held back
        with :meth:`insert_with_flush`."""
        return self._conn

    @property
    def row_stored(self) -> bool:
        """Whether the run's row is written: a run this transaction creates is written by its
        first flush, and a row that refers to the run goes in that flush too
        (:meth:`insert_with_flush`)."""
        return self._stored

    def insert_with_flush(self, table: sa.Table, row: Mapping[str, Any]) -> None:
        """Insert ``row`` into ``table`` with the held-back changes (on PostgreSQL by the
        statement that appends the run's events): for a row nothing reads back before then."""
        self._rows.append((table, row))

    def update_with_flush(
        self,
        stmt: sa.Update | sa.Insert,
        params: Mapping[str, Any],
        then: Callable[[list[Any]], None],
    ) -> None:
        """Run ``stmt`` (an UPDATE or INSERT built once, returning one column) with the
        held-back changes (on PostgreSQL by the statement that appends the run's events);
        ``then`` receives the values it returned, before the transaction commits (again if an
        :meth:`attempt` undid the flush that wrote it: the last call tells). For a write to
        another table whose outcome nothing in the transaction needs before then."""
        self._updates.append((stmt, params, then))

    def flush(self) -> None:
        """Write the held-back turns and rows, updates, run changes and events (INSERTs,
        UPDATEs, an UPDATE, an INSERT; on PostgreSQL one statement). A run not written yet is
        inserted as it is now instead of updated (before the turns, on SQLite)."""
        started = [(turns, turn.__dict__) for turn in self._turns.values()] + self._rows
        held, alternatives, stamps = self._updates, self._alternatives, self._stamps
        updates = [(stmt, params) for stmt, params, _then in held]
        self._turns, self._rows, self._updates, self._alternatives = {}, [], [], {}
        self._stamps = {}
        if not self._events and not self._values:
            combined.insert_each(self._conn, started)
            self._updated(held, combined.update_each(self._conn, updates))
            return
        fence = Fence(self.claim.epoch, self.claim.worker_id) if self._row_held else None
        values = self._values
        if not self._stored:  # the whole row; ``wait_name``, not a field of a run: as set here
            values = {"wait_name": None, **values, **self._run.__dict__}
        row = append_events(
            self._conn, self.claim.run_id, self._events, now=self.now, values=values,
            fence=fence, inserts=started, updates=updates, alternatives=alternatives,
            insert_run=not self._stored, stamps=stamps,
        )  # fmt: skip
        if row is None or int(row["last_event_seq"]) != self._run.last_event_seq:
            # The row is locked by this transaction; a mismatch is a bug, never a race.
            raise StoreError(f"run {self.claim.run_id} changed under its lock", code="internal")
        self._updated(held, row["updated"])
        self._values, self._events, self._stored = {}, [], True
        self._writes_seen = self._info.get(EVENT_WRITES, 0)
        run = self._run
        self._row_held = (
            run.status == RunStatus.RUNNING
            and run.epoch == self.claim.epoch
            and run.lease_owner == self.claim.worker_id
        )

    def attempt(self, body: Callable[[], T]) -> T | None:
        """``body()``, written in this transaction; or None when it raised an error that is not
        a database fault, and then nothing it did is kept: its statements are rolled back to a
        savepoint taken before it, and the changes held back are as they were. The transaction
        goes on as if ``body`` had not been called.

        For work that may be done here or in a transaction of its own (an action prepared with
        the turn that enters its state, docs/decisions/0013): where it fails, it is done again
        on its own, where the failure is met and reported. A database fault (the connection
        lost, a lock timeout) propagates: the transaction cannot go on.
        """
        held = (
            self._run, dict(self._values), list(self._events), dict(self._turns),
            list(self._rows), list(self._updates), dict(self._alternatives), dict(self._stamps),
            self._row_held, dict(self.active_digests), list(self.commit_points), self._stored,
        )  # fmt: skip
        writes, seen = self._info.get(EVENT_WRITES, 0), self._writes_seen
        open_savepoint(self._conn, ATTEMPT_SAVEPOINT)
        try:
            return body()
        except Exception as exc:
            if transient(exc) or self._conn.invalidated:
                raise
            log.debug("run %s: attempt in a fenced transaction failed: %s", self.claim.run_id, exc)
            execute_driver_sql(self._conn, f"ROLLBACK TO SAVEPOINT {ATTEMPT_SAVEPOINT}")
        (
            self._run, self._values, self._events, self._turns, self._rows, self._updates,
            self._alternatives, self._stamps, self._row_held, self.active_digests,
            self.commit_points, self._stored,
        ) = held  # fmt: skip
        # the events the body wrote through the connection are undone: they do not count as
        # someone else's appends
        self._writes_seen = seen + self._info.get(EVENT_WRITES, 0) - writes
        return None

    def held_run(self) -> Run | None:
        """The run as this transaction has written it, when the claim still holds it and
        nothing written through :attr:`conn` since the last flush may have changed it (None
        otherwise): what the claim's next fenced write can start from once this one commits.

        Each JSON column changed here is decoded afresh from its JSON text, so the run holds
        what a read of the row returns (lists for tuples, string keys), not the caller's
        objects."""
        if (
            not self._row_held
            or self._values
            or self._events
            or self._info.get(EVENT_WRITES, 0) != self._writes_seen
        ):
            return None
        run, start = self._run, self._start
        fresh = {
            name: loads_json(compact_json(getattr(run, name)))
            for name in JSON_FIELDS
            if getattr(run, name) is not getattr(start, name)
        }
        return evolve(run, **fresh) if fresh else run

    @staticmethod
    def _updated(
        held: list[tuple[sa.Update | sa.Insert, Mapping[str, Any], Callable[[list[Any]], None]]],
        outcomes: list[list[Any]],
    ) -> None:
        for (_stmt, _params, then), returned in zip(held, outcomes, strict=True):
            then(returned)

    def _sync_counters(self) -> None:
        if self._info.get(EVENT_WRITES, 0) == self._writes_seen:
            return
        (row,) = fastsql.execute(self._conn, SELECT_COUNTERS, {"p_id": self.claim.run_id})
        self._run = evolve(
            self._run, last_event_seq=row["last_event_seq"], revision=row["revision"]
        )
        self._writes_seen = self._info.get(EVENT_WRITES, 0)

    def _change(
        self,
        event_type: str,
        payload: dict[str, Any],
        *,
        if_updated: dict[str, Any] | None = None,
        **values: Any,
    ) -> Run:
        """Hold back ``values`` and one event describing them; the run as it will be. The
        event's payload is ``if_updated`` instead if the last update held back (and not
        written yet) changes a row."""
        self._sync_counters()
        self._values.update(values)
        if if_updated is not None:
            self._alternatives[len(self._events)] = (len(self._updates) - 1, if_updated)
        self._events.append((event_type, self.actor, payload))
        seen = {k: v for k, v in values.items() if k in RUN_FIELDS}
        if "status" in seen:
            seen["status"] = run_status(seen["status"])
        seq = self._run.last_event_seq + 1
        self._run = evolve(
            self._run, **seen, last_event_seq=seq, revision=self._run.revision + 1,
            updated_at=self.now,
        )  # fmt: skip
        return self._run

    def run(self) -> Run:
        """The run as this transaction sees it (including changes not written yet)."""
        self._sync_counters()
        return self._run

    def update_run(
        self,
        *,
        status: RunStatus | _Unset = UNSET,
        current_state: str | _Unset | None = UNSET,
        context: RunContext | _Unset = UNSET,
        waiting: Waiting | _Unset | None = UNSET,
        wake_at: datetime | _Unset | None = UNSET,
        budget_used: dict[str, Any] | _Unset = UNSET,
        event: str = "run.updated",
        payload: dict[str, Any] | None = None,
        describe: bool = True,
        end: RunEnd | None = None,
    ) -> Run:
        """Change the run and append ``event`` describing it, in this transaction.

        Any status other than ``running`` releases the lease: the claim is finished and any
        later write with it is rejected. A status that ends the run needs ``end``, what the
        end settled before this change (see the module docstring), and ``event`` says what
        that did to the objective (``objective``). Waiting for an inbound event goes through
        :meth:`register_event_wait` instead, so early events are matched. The new status,
        state, wake-up time and (non-empty) wait are added to ``payload`` unless ``describe``
        is False (the caller's payload says it already).
        """
        if status == RunStatus.WAITING_FOR_EVENT:
            raise StoreError("use register_event_wait to wait for an event", code="usage_error")
        values = _changed_values(
            status=status, current_state=current_state, context=context, waiting=waiting,
            wake_at=wake_at, budget_used=budget_used,
        )  # fmt: skip
        if "status" in values and values["status"] != RunStatus.RUNNING:
            values.update(lease_released())
        if values.get("status") in TERMINAL_RUN_STATUSES:
            if end is None:
                raise StoreError(
                    f"run {self.claim.run_id} ends without what its end settled (end=)",
                    code="usage_error",
                )
            self._passes(end)
        described = _described(values) if describe else {}
        if end is not None and end.objective is not None:
            described["objective"] = end.objective
        said = {**(payload or {}), **described}
        if end is None or end.if_updated is None:
            return self._change(event, said, **values)
        return self._change(event, said, if_updated={**said, "objective": end.if_updated}, **values)

    def _passes(self, end: RunEnd) -> None:
        """The commit points a run's end passes: its objective's retry created, its parent's
        join settled."""
        if end.objective is not None and "retry" in end.objective:
            self.commit_points.append(RETRY_CREATED)
        if end.join_settled:
            self.commit_points.append(JOIN_SETTLED)

    def repin(self, digest: str) -> Run:
        """Pin a retry run that has not started yet to version ``digest`` (the one active
        now): a run is pinned from its first turn on (invariant 12), and a retry should run
        what is deployed when it starts, not when it was scheduled."""
        payload = {"workflow_digest": digest, "previous_digest": self._run.workflow_digest}
        return self._change("run.pinned", payload, workflow_digest=digest)

    def append_event(
        self, type: str, payload: dict[str, Any], actor: str | None = None, *,
        stamp: str | None = None,
    ) -> Event:  # fmt: skip
        """Append event ``type`` to the run, held back with the other changes. With ``stamp``,
        its payload's field of that name is set to the database's clock as the statement that
        writes it runs (seconds since the epoch: after whatever was sent before it; on SQLite
        the clock as it is written); the event returned has no such field."""
        self._sync_counters()
        if stamp is not None:
            self._stamps[len(self._events)] = stamp
        self._events.append((type, actor or self.actor, payload))
        seq = self._run.last_event_seq + 1
        self._run = evolve(
            self._run, last_event_seq=seq, revision=self._run.revision + 1, updated_at=self.now
        )
        return Event(self.claim.run_id, seq, type, actor or self.actor, payload, self.now)

    # -- turns -----------------------------------------------------------------------

    def start_turn(
        self,
        state: str,
        phase: str = "started",
        *,
        seq: int | None = None,
        values: dict[str, Any] | None = None,
    ) -> Turn:
        """Persist a turn before it executes (invariant 2); its seq counts from 1 per run.

        ``seq`` saves looking the last one up when the caller knows it; ``values`` are run
        changes (entering the state, charging its budget) that ``turn.started`` describes.
        """
        if seq is None and self._turns:
            seq = max(t.seq for t in self._turns.values()) + 1
        elif seq is None:
            found = fastsql.execute(self._conn, LAST_TURN_SEQ, {"p_run": self.claim.run_id})
            last = next(iter(found[0].values())) if found else None
            seq = (last or 0) + 1
        turn = Turn(
            id=new_id(),
            run_id=self.claim.run_id,
            seq=seq,
            state=state,
            phase=phase,
            status="running",
            epoch=self.claim.epoch,
            worker=self.claim.worker_id,
            started_at=self.now,
            finished_at=None,
            error=None,
        )
        self._turns[turn.id] = turn  # inserted with the transaction's other writes
        self._change("turn.started", {"seq": turn.seq, "state": state}, **(values or {}))
        return turn

    def record_turn(
        self,
        turn_id: str,
        *,
        phase: str | None = None,
        status: str | None = None,
        error: str | None = None,
        event: bool = True,
    ) -> Turn | None:
        """Save a turn's new phase and/or final status (``status`` other than running ends it)
        and return it.

        With ``event=False`` no ``turn.updated`` is appended: the caller appends the event that
        says how the turn ended (``state.advanced``, ``wait.registered``, ``run.completed``)
        in this same transaction. The turn's UPDATE is then held back with that event
        (:meth:`update_with_flush`) and None is returned for a turn not started in this
        transaction (the row is not read back).
        """
        values: dict[str, Any] = {}
        if phase is not None:
            values["phase"] = phase
        if status is not None:
            values["status"] = status
            values["finished_at"] = None if status == "running" else self.now
        if error is not None:
            values["error"] = error
        held = self._turns.get(turn_id)
        params = {f"v_{k}": v for k, v in values.items()}
        params.update(p_id=turn_id, p_run=self.claim.run_id)
        if held is not None:  # started in this transaction: changed before it is inserted
            turn = self._turns[turn_id] = evolve(held, **values)
        elif not event:
            self.update_with_flush(
                _turn_update(tuple(sorted(values)), whole_row=False), params,
                lambda ids: None if ids else self._no_turn(turn_id),
            )  # fmt: skip
            return None
        else:
            stmt = _turn_update(tuple(sorted(values)))
            row = fastsql.one_or_none(fastsql.execute(self._conn, stmt, params))
            if row is None:
                self._no_turn(turn_id)
            turn = Turn.from_row(row)
        if event:
            payload = {"seq": turn.seq, "phase": turn.phase, "status": turn.status}
            if error is not None:
                payload["error"] = error
            self._change("turn.updated", payload)
        return turn

    def _no_turn(self, turn_id: str) -> NoReturn:
        """An UPDATE of the turn matched nothing."""
        raise NotFound(f"turn {turn_id} not found on run {self.claim.run_id}")

    # -- activities --------------------------------------------------------------------

    def abandon_open_turns(self) -> None:
        """Close the turns a previous claim left running (it crashed, stalled or was paused)."""
        stmt = sa.select(turns.c.id).where(
            turns.c.run_id == self.claim.run_id,
            turns.c.status == "running",
            turns.c.epoch < self.claim.epoch,
        )
        for turn_id in self.conn.execute(stmt).scalars().all():
            self.record_turn(turn_id, status="abandoned", error="the claim that ran it was lost")

    def get_activity(self, activity_id: str) -> Activity | None:
        params = {"p_run": self.claim.run_id, "p_activity": activity_id}
        row = fastsql.one_or_none(fastsql.execute(self._conn, SELECT_ACTIVITY, params))
        return None if row is None else Activity.from_row(row)

    def replayed(self, activity_id: str, input_hash: str) -> Activity | None:
        """The activity already recorded under ``activity_id``, which a replay returns instead
        of computing it again (invariant 4); None when nothing is recorded yet.

        The same id recorded for a different input is an :class:`IdempotencyConflict`: the
        workflow asked something else under a name it had used.
        """
        found = self.get_activity(activity_id)
        if found is not None and found.input_hash != input_hash:
            raise IdempotencyConflict(
                f"activity {activity_id} was recorded for a different request"
            )
        return found

    def record_activity(
        self, activity_id: str, kind: str, input_hash: str, result: Any
    ) -> Activity:
        """Record a model/tool result before the workflow advances (invariants 2 and 4).

        Idempotent: the same id and input hash return the stored activity unchanged (the
        recorded result wins); the same id with another input hash is a conflict.
        """
        existing = self.replayed(activity_id, input_hash)
        if existing is not None:
            return existing
        activity = Activity(self.claim.run_id, activity_id, kind, input_hash, result, self.now)
        fastsql.execute(self._conn, INSERT_ACTIVITY, activity.__dict__)
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
        self._db.lock_event_name(self.conn, name)
        waiting: EventWait = {
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
        early = first_unconsumed_match(self.conn, name, correlation, run.scope)
        if early is not None:
            self._run = consume(self.conn, early, run, self.now, self.actor)
            self._writes_seen = self._info.get(EVENT_WRITES, 0)  # consume's is the last
            self._db.notify_work(self._conn, run.id)
        return early


def _changed_values(**given: Any) -> dict[str, Any]:
    """The run's columns ``given`` a value (not ``UNSET``); a new wait clears its name."""
    values = {key: value for key, value in given.items() if not isinstance(value, _Unset)}
    if "waiting" in values:
        values["wait_name"] = None
    return values


def _described(values: dict[str, Any]) -> dict[str, Any]:
    """What a run change's event says of it: the new status, state, wake-up time and wait."""
    described = {k: v for k, v in values.items() if k in ("status", "current_state")}
    if "wake_at" in values:
        described["wake_at"] = iso(values["wake_at"])
    if values.get("waiting") is not None:
        described["waiting"] = values["waiting"]
    return described
