"""The leases repository: claims, leases and fencing (invariant 3).

A worker claims one runnable run with a lease; each claim increments the run's epoch. Every
write the engine makes goes through :meth:`Leases.fenced`, which re-checks the epoch and
owner inside the transaction, so a paused or partitioned old worker can never write after a
replacement took over (or after an operator paused or canceled the run).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

import sqlalchemy as sa

from openseal.runtime.clock import iso
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store.db import fastsql
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.errors import InRecoveryMode, StaleEpoch
from openseal.runtime.store.db.json_text import compact_json
from openseal.runtime.store.repos.events import change_run, lease_released
from openseal.runtime.store.repos.fenced import CommitHook, FencedTx, PendingFence
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Claim, Run, UnwrittenRun, evolve
from openseal.runtime.store.tables.statements import (
    ACTIVE_RECOVERY,
    first_runnable,
    runnable,
)

runs = schema.runs
T = TypeVar("T")
#: the column of a fence's SELECT that holds a deployment's active digest
ACTIVE_DIGEST_LABEL: Final = "deployment_active_digest"
RECOVERY_LABEL: Final = "active_recovery_id"
#: what a fence reads when it knows the run its claim's last write left (:meth:`Leases.fenced`):
#: the claim's check, the event sequence every other change of the row moves, and the lease
#: expiry a heartbeat moves without an event
FENCE_COLUMNS: Final = (
    runs.c.epoch, runs.c.status, runs.c.lease_owner, runs.c.last_event_seq,
    runs.c.lease_expires_at,
)  # fmt: skip
#: at most this many runs' last writes are kept (a claim given up without a last write, lost
#: to a takeover say, leaves its entry behind until then)
HELD_RUNS_KEPT: Final = 4096


#: the earliest lease expiry after ``:p_now`` (the running runs, from ``ix_runs_claim_queued``)
NEXT_EXPIRY: Final = sa.select(sa.func.min(runs.c.lease_expires_at)).where(
    runs.c.status == sa.bindparam("p_running"),
    runs.c.lease_expires_at > sa.bindparam("p_now", type_=runs.c.lease_expires_at.type),
)


def _row_holds(claim: Claim, row: Mapping[str, Any]) -> bool:
    """Whether a fence's ``row`` shows ``claim`` holding its run."""
    return bool(
        row["epoch"] == claim.epoch
        and row["lease_owner"] == claim.worker_id
        and row["status"] == RunStatus.RUNNING
    )


def _marked(table: sa.Table, marked: bool) -> tuple[Any, ...]:
    """The columns of ``table``, with the id of the recovery in progress when ``marked``."""
    if not marked:
        return (table,)
    return (table, ACTIVE_RECOVERY.scalar_subquery().label(RECOVERY_LABEL))


def _claimed(worker_id: str, epoch: int, before: Run) -> dict[str, Any]:
    """The payload of ``lease.claimed``: who claims ``before`` at which epoch, from what."""
    payload: dict[str, Any] = {
        "worker": worker_id,
        "epoch": epoch,
        "claimed_from": str(before.status),
    }
    if before.lease_owner is not None:
        payload["previous_owner"] = before.lease_owner
    return payload


#: how many of a process's latest claims :class:`FairClaims` looks at
FAIR_WINDOW: Final = 8
#: a scope that took this many of them is busy: the next claim looks at the others first
FAIR_SHARE: Final = 4
#: how long a process that found no other scope's run claims in the plain order
FAIR_IDLE_SECONDS: Final = 1.0


class FairClaims:
    """Claims shared fairly among scopes, per process: one scope's backlog does not hold the
    others' runs behind it.

    Claims take the oldest runnable run of the highest priority. When one scope took half of
    this process's latest :data:`FAIR_WINDOW` claims, the next claim first looks for the oldest
    run of *any other* scope, and takes that when there is one: a scope that floods the queue
    gets at most about half of the claims while another scope has runs waiting, and another
    scope's new run waits for a few claims, not for the flood to drain. When two scopes took
    half each, the next claim looks first for a third scope's run, then past the one of the
    two claimed last — so two scopes with backlogs take turns, whichever backlog is older. A
    look that finds nothing is not made again for :data:`FAIR_IDLE_SECONDS`, so a store with
    one busy scope pays one more statement a second, not one a claim."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: deque[str] = deque(maxlen=FAIR_WINDOW)
        #: by the scopes a look passed over: until when it is not made again
        self._idle_until: dict[tuple[str, ...], float] = {}

    def looks(self) -> list[tuple[str, ...]]:
        """The looks to make before the plain order, each past one or two scopes, in order
        (none: look in the plain order)."""
        with self._lock:
            if len(self._latest) < FAIR_SHARE:
                return []
            counted = Counter(self._latest)
            busy = tuple(sorted(scope for scope, n in counted.items() if n >= FAIR_SHARE))
            if not busy:
                return []
            wanted = [busy]
            if len(busy) == 2:  # then past the one claimed last (they took all 8): turns
                wanted.append((self._latest[-1],))
            now = time.monotonic()
            return [past for past in wanted if self._idle_until.get(past, 0.0) <= now]

    def none_other(self, past: tuple[str, ...]) -> None:
        """A look past ``past`` found no run: not again for :data:`FAIR_IDLE_SECONDS`."""
        with self._lock:
            self._idle_until[past] = time.monotonic() + FAIR_IDLE_SECONDS

    def claimed(self, run: Run) -> Run:
        with self._lock:
            self._latest.append(run.scope)
        return run


class Leases(Repository):
    """``store.leases``: claiming runs, heartbeats, giving runs back, fenced writes."""

    def __init__(self, store: StoreBase) -> None:
        super().__init__(store)
        self._expiry_lock = threading.Lock()
        #: (``time.monotonic()`` when read, the earliest expiry then), shared by the threads
        self._expiry: tuple[float | None, datetime | None] = (None, None)
        self._held_lock = threading.Lock()
        #: by run id: the claim (epoch, owner) that last wrote it from this store and the run
        #: as that committed write left it (:meth:`fenced`)
        self._held: dict[str, tuple[int, str, Run]] = {}
        #: called where a fenced transaction that passes a named commit point (a join settled,
        #: a retry created) is about to commit and once it has (None: no cost); only a crash
        #: test sets it, through the engine (:mod:`openseal.runtime.faults`)
        self.commit_hook: CommitHook | None = None
        #: which scope's run the next claim looks at first (:class:`FairClaims`)
        self._fair = FairClaims()

    def claim(
        self,
        worker_id: str,
        *,
        lease_seconds: float = 30,
        now: datetime | None = None,
        run_id: str | None = None,
        unwritten: UnwrittenRun | None = None,
    ) -> Claim | None:
        """Claim the runnable run of the highest priority that changed longest ago (or run
        ``run_id``, if runnable; or ``unwritten``, see :meth:`claim_and_start`), or return None
        if there is none.

        The claim sets the lease, increments the epoch and records ``lease.claimed``. Heartbeat
        at a third of ``lease_seconds``.
        """
        found = self.claim_and_start(
            worker_id, None, lease_seconds=lease_seconds, now=now, run_id=run_id,
            unwritten=unwritten,
        )  # fmt: skip
        return None if found is None else found[0]

    def claim_and_start(
        self,
        worker_id: str,
        start: Callable[[FencedTx], T] | None,
        *,
        lease_seconds: float = 30,
        now: datetime | None = None,
        run_id: str | None = None,
        unwritten: UnwrittenRun | None = None,
        refuse_in_recovery: bool = False,
    ) -> tuple[Claim, T | None] | None:
        """Claim a run like :meth:`claim`, then call ``start`` in the same transaction.

        ``start`` gets a :class:`FencedTx` of the new claim — the engine saves the run's first
        turn with it, so a claim and the turn it starts cost one commit. Its result is returned
        with the claim; if it raises, the claim is not taken either. With ``run_id`` only that
        run is claimed (if it is runnable).

        ``unwritten`` is a ``queued`` run that the transaction this write joins has created and
        not written (``Engine.submit`` creates an objective with ``write_run=False`` and claims
        its run in one ``together()`` block): nothing is read, and the claim writes the run
        once, already claimed (one INSERT of its row as the claim and ``start`` leave it), and
        its ``run.created`` with the claim's events (one INSERT), all at the run's creation
        time. If ``start`` raises nothing of the run is written: claim it alone then, with
        ``unwritten`` again. A run already stored under its id is refused (a duplicate key).
        ``refuse_in_recovery``: nothing is claimed in recovery mode (:meth:`_claimable`).
        """
        if now is None:  # a run written here: its creation's moment, for all its first events
            now = self._store.now() if unwritten is None else unwritten.run.created_at
        expires = now + timedelta(seconds=lease_seconds)
        with self._store.write() as conn:
            before = self._claimable(conn, now, run_id, unwritten, refuse_in_recovery)
            if before is None:
                return None
            self._forget_held(before.id)  # a claim's writes start from what it reads
            epoch = before.epoch + 1
            payload = _claimed(worker_id, epoch, before)
            claim = Claim(before.id, worker_id, epoch, expires, before.status, before)
            tx = FencedTx(self._store, conn, claim, now, before, held=False, unwritten=unwritten)
            # The row is locked (SKIP LOCKED on PostgreSQL, the write lock on SQLite), so the
            # new epoch can be computed here rather than in SQL.
            # A run woken by a timeout no longer takes deliveries for its old wait.
            after = tx._change(
                "lease.claimed", payload, status=RunStatus.RUNNING, lease_owner=worker_id,
                lease_expires_at=expires, epoch=epoch, wake_at=None, wait_name=None,
            )  # fmt: skip
            claim = evolve(claim, run=after)
            tx.claim = claim
            started = start(tx) if start is not None else None
            tx.flush()
            self._passing(tx)
            held = tx.held_run()
        self._keep_held(claim, held)
        self._passing(tx, committed=True)
        return claim, started

    def _claimable(
        self,
        conn: sa.Connection,
        now: datetime,
        run_id: str | None,
        unwritten: UnwrittenRun | None,
        refuse_in_recovery: bool = False,
    ) -> Run | None:
        """The run to claim (see :meth:`claim_and_start`), locked, or None.

        With ``refuse_in_recovery`` nothing is claimed while the store is in recovery mode
        (``InRecoveryMode``, invariant 18): the statement that looks for the run reads the
        marker too (a statement of its own only when there is no run to claim). For the first
        claim of ``Engine.step`` and ``run_until_idle``: a check per call, not per claim."""
        if unwritten is not None:
            # as a read would return it: its JSON decoded afresh, not the caller's objects
            run = unwritten.run
            return evolve(run, context=json.loads(compact_json(run.context)))
        marked = refuse_in_recovery
        if run_id is None:
            for past in self._fair.looks():  # first, the oldest run of the other scopes
                params = {"p_now": now, "p_busy1": past[0], "p_busy2": past[-1]}
                found = fastsql.execute(conn, self._select_other(marked), params)
                row = self._unless_recovering(conn, fastsql.one_or_none(found), marked)
                if row is not None:
                    return self._fair.claimed(Run.from_row(row))
                self._fair.none_other(past)
                marked = False  # read: the store is not in recovery mode
            found = fastsql.execute(conn, self._select_claimable(marked=marked), {"p_now": now})
            row = self._unless_recovering(conn, fastsql.one_or_none(found), marked)
            return None if row is None else self._fair.claimed(Run.from_row(row))
        params = {"p_now": now, "p_id": run_id}
        found = fastsql.execute(conn, self._select_claimable(one=True, marked=marked), params)
        row = self._unless_recovering(conn, fastsql.one_or_none(found), marked)
        return None if row is None else Run.from_row(row)

    @staticmethod
    def _unless_recovering(conn: sa.Connection, row: Any, marked: bool) -> Any:
        """``row``, read with the marker of recovery mode when ``marked``: ``InRecoveryMode``
        when the store is in recovery mode (read by a statement of its own when no row came,
        since nothing else says so then)."""
        if not marked:
            return row
        if row is not None:
            recovering = row[RECOVERY_LABEL]
        else:
            recovering = fastsql.one_or_none(fastsql.execute(conn, ACTIVE_RECOVERY, {}))
        if recovering is not None:
            raise InRecoveryMode("the store is in recovery mode after a restore")
        return row

    def _select_claimable(self, *, one: bool = False, marked: bool = False) -> sa.Select[Any]:
        """The run a worker may claim at ``:p_now`` that changed longest ago (``one``: run
        ``:p_id`` if it may be claimed), locked for the claim (``marked``: with the id of the
        recovery in progress); built once each."""
        name = f"_claimable_stmt_{one}_{marked}"
        stmt: sa.Select[Any] | None = getattr(self, name, None)
        if stmt is None:
            if one:
                now = sa.bindparam("p_now", type_=runs.c.wake_at.type)
                stmt = self._first(
                    sa.and_(runnable(now), runs.c.id == sa.bindparam("p_id")), marked
                )
            else:
                stmt = self._first_runnable(marked)
            setattr(self, name, stmt)
        return stmt

    def _select_other(self, marked: bool = False) -> sa.Select[Any]:
        """:meth:`_select_claimable` among the runs of scopes other than ``:p_busy1`` and
        ``:p_busy2`` (see :class:`FairClaims`); built once each."""
        name = f"_other_stmt_{marked}"
        stmt: sa.Select[Any] | None = getattr(self, name, None)
        if stmt is None:
            others = (
                runs.c.scope != sa.bindparam("p_busy1"),
                runs.c.scope != sa.bindparam("p_busy2"),
            )
            stmt = self._first_runnable(marked, *others)
            setattr(self, name, stmt)
        return stmt

    def _first_runnable(self, marked: bool, *only: sa.ColumnElement[bool]) -> sa.Select[Any]:
        """The first runnable run at ``:p_now`` in claim order (among ``only``): on SQLite
        looked for among the first queued run and the runs not queued (:func:`first_runnable`),
        not the whole backlog."""
        now = sa.bindparam("p_now", type_=runs.c.wake_at.type)
        if self._store.dialect == "sqlite":
            return self._first(first_runnable(now, *only), marked)
        return self._first(sa.and_(runnable(now), *only), marked)

    def _first(self, condition: sa.ColumnElement[bool], marked: bool) -> sa.Select[Any]:
        """The first run ``condition`` selects in claim order, locked for the claim."""
        # Higher priority first (its objective's); within a priority, least recently
        # changed first: a run given back after its turns (or a retry) goes behind the
        # runs that waited meanwhile, so one busy run cannot starve the others.
        ordered = (
            sa.select(*_marked(runs, marked))
            .where(condition)
            .order_by(runs.c.priority.desc(), runs.c.updated_at, runs.c.id)
        )
        return self._store.for_claim(ordered.limit(1))

    def next_expiry(self, *, now: datetime | None = None, max_age: float = 1.0) -> datetime | None:
        """When the earliest lease still held expires (a run then becomes claimable unless its
        holder renews it), or None when no run is held; what an idle worker sleeps until at
        most, so that recovering a crashed holder's run waits for its lease, not for a poll.

        Answers up to ``max_age`` seconds old are shared by the process's threads (an earlier
        wake-up only costs a look); a lease taken since is found at the next look."""
        now = now or self._store.now()
        with self._expiry_lock:
            checked, found = self._expiry
            if found is not None and found <= now:
                checked = None  # passed: what is the next one?
            if checked is not None and time.monotonic() - checked < max_age:
                return found
        with self._store.read() as conn:
            (row,) = fastsql.execute(conn, NEXT_EXPIRY, {"p_now": now, "p_running": "running"})
        earliest: datetime | None = next(iter(row.values()))
        with self._expiry_lock:
            self._expiry = (time.monotonic(), earliest)
        return earliest

    def heartbeat(
        self, claim: Claim, *, lease_seconds: float = 30, now: datetime | None = None
    ) -> bool:
        """Extend the lease; False once the claim lost the run (takeover, pause, cancel...)."""
        now = now or self._store.now()
        with self._store.write() as conn:
            result = conn.execute(
                sa.update(runs)
                .where(*self._holds(claim))
                .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
            )
            return result.rowcount == 1

    def release(self, claim: Claim) -> bool:
        """Give the run back to the queue (e.g. on worker shutdown); False if already lost."""
        self._forget_held(claim.run_id)
        now = self._store.now()
        with self._store.write() as conn:
            held = conn.execute(
                self._store.for_update(sa.select(runs.c.id).where(*self._holds(claim)))
            ).one_or_none()
            if held is None:
                return False
            change_run(
                conn,
                claim.run_id,
                event_type="lease.released",
                actor=f"worker:{claim.worker_id}",
                payload={"worker": claim.worker_id, "epoch": claim.epoch},
                now=now,
                values={"status": RunStatus.QUEUED, **lease_released()},
            )
            self._store.notify_work(conn, claim.run_id)
        return True

    def release_for_retry(
        self, claim: Claim, reason: str, delay: Callable[[int], float]
    ) -> datetime | None:
        """After an ordinary fault (invariant 13): drop the turn, give the run back, and make
        it runnable again after ``delay(n)`` seconds, ``n`` counting consecutive faults.

        The run sleeps until then, its ``waiting`` record kept (what woke it still applies)
        with ``retries``, ``retry_at`` and ``fault`` added. Returns when it is retried; None
        when the claim was already lost.
        """
        self._forget_held(claim.run_id)
        now = self._store.now()
        with self._store.write() as conn:
            held = conn.execute(
                self._store.for_update(sa.select(runs.c.waiting).where(*self._holds(claim)))
            ).one_or_none()
            if held is None:
                return None
            # whatever it waits for keeps its record, marked (the contract's RetryMarks)
            waiting = dict(held.waiting or {"kind": "retry"})
            retries = int(waiting.get("retries", 0)) + 1
            retry_at = now + timedelta(seconds=delay(retries))
            waiting.update(retries=retries, retry_at=iso(retry_at), fault=reason)
            change_run(
                conn,
                claim.run_id,
                event_type="turn.retry_scheduled",
                actor=f"worker:{claim.worker_id}",
                payload={"worker": claim.worker_id, "epoch": claim.epoch, "retries": retries,
                         "retry_at": iso(retry_at), "fault": reason},
                now=now,
                values={"status": RunStatus.SLEEPING, "wake_at": retry_at, "waiting": waiting,
                        **lease_released()},
            )  # fmt: skip
        return retry_at

    @staticmethod
    def _holds(claim: Claim) -> tuple[sa.ColumnElement[bool], ...]:
        return (
            runs.c.id == claim.run_id,
            runs.c.epoch == claim.epoch,
            runs.c.lease_owner == claim.worker_id,
            runs.c.status == RunStatus.RUNNING,
        )

    @contextmanager
    def fenced(
        self,
        claim: Claim,
        *,
        deployment: str | None = None,
        recovery: bool = False,
        pipelined: bool = False,
    ) -> Iterator[FencedTx]:
        """A write transaction that only proceeds while ``claim`` still holds the run.

        Raises :class:`StaleEpoch` (after recording ``write.rejected_stale_epoch`` and counting
        it in ``runs.stale_writes``) when it does not; nothing of the body is written then.
        The statement that checks the claim locks the run's row. The transaction starts from
        the run the claim's last write left when this store committed that write and nobody
        appended to the run since (an unchanged event sequence), else from the whole row, read
        (docs/decisions/0011). ``pipelined``: on PostgreSQL the check travels with the body's
        first statement (docs/decisions/0028), for a body that acts on nothing outside the
        database first. With ``deployment`` it reads the deployment's active version
        (:attr:`FencedTx.active_digests`) and, as with ``recovery``, the recovery mode
        (:attr:`FencedTx.in_recovery`; invariant 18).

        Example::

            with store.leases.fenced(claim) as tx:
                tx.record_activity("research:1:model", "model", digest, result)
                tx.update_run(current_state="draft", context=new_context)
        """
        now = self._store.now()
        tx: FencedTx | None = None
        stale: Mapping[str, Any] | None = None
        known = self._take_held(claim)
        try:
            with self._store.write() as conn:
                if pipelined and known is not None and deployment is None and not recovery:
                    tx = self._fence_with_next(conn, claim, now, known)
                if tx is None:
                    tx, stale = self._fence_first(conn, claim, now, known, deployment, recovery)
                if stale is None:
                    assert tx is not None
                    try:
                        yield tx
                    except BaseException:
                        tx.abandon_fence()  # undoing the body must not wait for it
                        raise
                    tx.await_fence()
                    tx.flush()
                    self._passing(tx)
                    known = tx.held_run()
        except BaseException:
            stale = tx.refused if tx is not None else None
            if stale is None:
                raise
            # the pipelined fence refused the claim: the body's writes were rolled back with it
            with self._store.write() as conn:
                self._record_stale(conn, claim, stale, now)
        if stale is not None:
            raise _no_longer_held(claim, stale)
        assert tx is not None
        self._keep_held(claim, known)
        self._passing(tx, committed=True)

    def _fence_first(
        self,
        conn: sa.Connection,
        claim: Claim,
        now: datetime,
        known: Run | None,
        deployment: str | None,
        recovery: bool,
    ) -> tuple[FencedTx | None, Mapping[str, Any] | None]:
        """:meth:`fenced`'s check sent before the body: its transaction, or the row that
        refused the claim (the rejection then recorded)."""
        row, run = self._locked_run(conn, claim, deployment, known, recovery)
        if run is None:
            # Nothing of the body ran, so the rejection is all this transaction writes (in a
            # batch, its thread's part of it: the other runs' writes are not touched).
            self._record_stale(conn, claim, row, now)
            return None, row
        tx = FencedTx(self._store, conn, claim, now, run)
        if deployment is not None:
            tx.active_digests[deployment] = row[ACTIVE_DIGEST_LABEL]
        if deployment is not None or recovery:
            tx.in_recovery = row[RECOVERY_LABEL] is not None
        return tx, None

    def _fence_with_next(
        self, conn: sa.Connection, claim: Claim, now: datetime, known: Run
    ) -> FencedTx | None:
        """A fenced transaction whose fence (:data:`FENCE_COLUMNS`, locking the row) is sent
        with the body's first statement (:class:`PendingFence`); None where the connection
        cannot send it so (SQLite), and nothing was sent."""
        stmt, params = self._select_run_locked(whole_row=False), {"p_id": claim.run_id}
        fence = PendingFence(
            read=lambda: fastsql.execute(conn, stmt, params),
            holds=lambda row: _row_holds(claim, row),
            start=lambda row: self._start_from(conn, claim, row, known),
        )
        tx = FencedTx(self._store, conn, claim, now, known, fence=fence)
        if not fastsql.execute_read_with_next(conn, stmt, params, tx.fence_arrived):
            return None
        return tx

    def _locked_run(
        self,
        conn: sa.Connection,
        claim: Claim,
        deployment: str | None,
        known: Run | None,
        recovery: bool = False,
    ) -> tuple[dict[str, Any], Run | None]:
        """Lock the run's row and check ``claim`` against it: the row read, and the run the
        transaction starts from (None when the claim no longer holds it). ``known`` (the run
        this store's last write left) stands for the row while its event sequence is the
        row's; otherwise the whole row is read."""
        if deployment is None:
            params = {"p_id": claim.run_id}
        else:
            params = {"p_id": claim.run_id, "p_deployment": deployment}
        stmt = self._select_run_locked(
            with_deployment=deployment is not None,
            whole_row=known is None,
            with_recovery=recovery or deployment is not None,
        )
        (row,) = fastsql.execute(conn, stmt, params)
        if not _row_holds(claim, row):
            return row, None
        if known is None:
            return row, Run.from_row(row)
        return row, self._start_from(conn, claim, row, known)

    def _start_from(
        self, conn: sa.Connection, claim: Claim, row: Mapping[str, Any], known: Run
    ) -> Run:
        """The run a fenced transaction starts from, given its fence's row: ``known`` while the
        event sequence is the row's, else the whole row, read."""
        if row["last_event_seq"] == known.last_event_seq:
            return evolve(known, lease_expires_at=row["lease_expires_at"])
        (whole,) = fastsql.execute(conn, self._select_run_locked(), {"p_id": claim.run_id})
        return Run.from_row(whole)

    def _take_held(self, claim: Claim) -> Run | None:
        """The run as ``claim``'s last committed write left it, if this store made that write;
        the entry is removed, and only a write that commits keeps its run again, so a write
        rolled back leaves nothing to start from."""
        held = self._forget_held(claim.run_id)
        if held is None or held[:2] != (claim.epoch, claim.worker_id):
            return None
        return held[2]

    def _forget_held(self, run_id: str) -> tuple[int, str, Run] | None:
        with self._held_lock:
            return self._held.pop(run_id, None)

    def _keep_held(self, claim: Claim, run: Run | None) -> None:
        """Keep ``run`` (None: nothing) as what ``claim``'s committed write left."""
        if run is None:
            return
        with self._held_lock:
            if len(self._held) >= HELD_RUNS_KEPT:
                del self._held[next(iter(self._held))]  # the oldest
            self._held[claim.run_id] = (claim.epoch, claim.worker_id, run)

    def _passing(self, tx: FencedTx, *, committed: bool = False) -> None:
        """The :attr:`commit_hook` at each commit point ``tx`` passes: all written and the
        commit not issued, or (``committed``) the commit done and the caller not gone on
        (except inside ``GroupCommit.together``, which commits at its block's end: only
        ``Engine.submit`` writes there, never a worker process)."""
        hook = self.commit_hook
        if hook is None:
            return
        for point in tx.commit_points:
            hook(f"{point}.committed" if committed else point, tx.claim)

    def _select_run_locked(
        self, *, with_deployment: bool = False, whole_row: bool = True, with_recovery: bool = False
    ) -> sa.Select[Any]:
        """``SELECT runs.* WHERE id = :p_id`` (not ``whole_row``: :data:`FENCE_COLUMNS`) with
        the dialect's row lock (``with_deployment``: and the active digest of deployment
        ``:p_deployment``, which is not locked; ``with_recovery``: and the id of the recovery
        in progress), built once each."""
        name = f"_run_locked_{with_deployment}_{whole_row}_{with_recovery}"
        stmt: sa.Select[Any] | None = getattr(self, name, None)
        if stmt is None:
            columns = (runs,) if whole_row else FENCE_COLUMNS
            stmt = sa.select(*columns).where(runs.c.id == sa.bindparam("p_id"))
            if with_deployment:
                deployments = schema.deployments
                digest = sa.select(deployments.c.active_digest).where(
                    deployments.c.name == sa.bindparam("p_deployment")
                )
                stmt = stmt.add_columns(digest.scalar_subquery().label(ACTIVE_DIGEST_LABEL))
            if with_recovery:
                stmt = stmt.add_columns(ACTIVE_RECOVERY.scalar_subquery().label(RECOVERY_LABEL))
            stmt = self._store.for_update(stmt)
            setattr(self, name, stmt)
        return stmt

    @staticmethod
    def _record_stale(
        conn: sa.Connection, claim: Claim, row: Mapping[str, Any], now: datetime
    ) -> None:
        """Record that ``claim``'s write was rejected, given the fence's ``row``."""
        run_epoch, owner, status = row["epoch"], row["lease_owner"], row["status"]
        change_run(
            conn,
            claim.run_id,
            event_type="write.rejected_stale_epoch",
            actor=f"worker:{claim.worker_id}",
            payload={
                "worker": claim.worker_id,
                "claim_epoch": claim.epoch,
                "run_epoch": run_epoch,
                "lease_owner": owner,
                "status": status,
            },
            now=now,
            values={"stale_writes": runs.c.stale_writes + 1},
        )


def _no_longer_held(claim: Claim, row: Mapping[str, Any]) -> StaleEpoch:
    """The error of a fenced write whose claim no longer holds the run (``row``: the run's)."""
    return StaleEpoch(
        f"run {claim.run_id} is no longer held by {claim.worker_id} at epoch {claim.epoch} "
        f"(run epoch {row['epoch']}, status {row['status']})",
        run_id=claim.run_id,
        claim_epoch=claim.epoch,
        run_epoch=row["epoch"],
    )
