"""The rate-limits repository: token buckets every worker shares, one row per limit.

A limit lets ``burst`` units go at once and one more each ``interval`` seconds. Its row holds
the limit's virtual clock, ``due``: taking ``n`` units moves it ``n`` intervals on (from now,
when it lags behind), and the units may go once ``due`` is no more than ``burst`` intervals
ahead of now. So in any window of ``w`` seconds at most ``burst + w / interval`` units go,
whichever process took them: each take reads and moves the row locked. A take is one short
transaction of its own, or the last statements of its caller's write transaction where that
locks nothing more for longer (:meth:`RateLimits.rides`): a model call's place is taken with
its budget's reservation on SQLite, whose one write lock already orders every writer, and on
PostgreSQL when that transaction is not a batch of group commit, holding the row to a commit
a round trip away. The rows are locked last, in the keys' order, so they add no cycle to the
lock order (invariant 15). A taker is told how long to wait for its turn; a unit taken is spent
even if its taker never goes (the limit errs on the side of sending less, never more).

An endpoint that answered ``429`` holds its limit back (:meth:`RateLimits.hold_back`): the
row's ``held_until`` says when it said to come back, every take waits until then, and a worker
that took its place before the ``429`` looks again before it sends (:meth:`RateLimits.held_back`).
A limit with no rate (``interval`` 0) only holds back: :meth:`RateLimits.take` only reads it.

Times are the store's clock (``store.now()``), as leases are: hosts sharing one PostgreSQL are
expected to keep their clocks in step.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.store.db import group_commit
from openseal.runtime.store.db.base import Connection
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.values import epoch_seconds

table = schema.rate_limits
#: a bucket's clock moved (executed once for many rows)
SET_DUE = (
    sa.update(table)
    .where(table.c.key == sa.bindparam("b_key"))
    .values(due=sa.bindparam("b_due"), updated_at=sa.bindparam("b_at"))
)


@dataclass(frozen=True)
class Bucket:
    """One limit: ``burst`` units at once, one more each ``interval`` seconds (0: no rate,
    the row only holds back after a ``429``)."""

    key: str
    interval: float = 0.0
    burst: float = 0.0


@dataclass(frozen=True)
class Taken:
    """The answer to a take: ``taken`` (go after ``wait`` seconds) or not (the units could
    not go within the time allowed; ``wait`` says how long they would have waited)."""

    taken: bool
    wait: float
    #: the first bucket's hold by an endpoint when the take read it (store clock's seconds)
    held_until: float | None = None


class RateLimits(Repository):
    """``store.rate_limits``: shared token buckets (:class:`Bucket`), by key."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self._lock = threading.Lock()
        #: corrections not written yet (:meth:`give_back_later`), by key
        self._owed: dict[str, tuple[Bucket, float]] = {}

    def rides(self, conn: Connection) -> bool:
        """Whether a take belongs in the caller's write transaction on ``conn`` (:meth:`take_all`
        with it), as its last statements, sparing a commit (an fsync) of its own. On SQLite
        always: the transaction holds the database's one write lock from its start, so a take
        there locks nothing more and for no longer than it already does. On PostgreSQL unless
        ``conn`` is a batch's of group commit: the row's lock would last to the batch's commit,
        while other members' writes lock other rows after it (batches taking in different
        orders would deadlock); alone, the transaction locks nothing after the row and lets it
        go at its commit, sooner than a transaction of its own (its ``SELECT``, ``UPDATE`` and
        ``COMMIT``) would."""
        return self._store.dialect == "sqlite" or not group_commit.shares(conn)

    def take_all(
        self,
        wanted: Sequence[tuple[Bucket, float]],
        *,
        within: float,
        conn: Connection | None = None,
    ) -> Taken:
        """Take ``units`` of each ``(bucket, units)`` if all may go within ``within`` seconds,
        in one transaction (the rows locked in the keys' order), with the corrections owed to
        those buckets; the answer's wait is the longest, its ``held_until`` the first bucket's
        hold. Buckets with no rate are only read: when none has one, nothing is written.

        With ``conn``, in that transaction (where :meth:`rides`): what it
        takes commits or rolls back with it (corrections it wrote are then lost: the limit
        errs towards sending less); else in a short transaction of its own."""
        if all(bucket.interval <= 0 for bucket, _ in wanted):
            return self._holds(wanted, within, conn)
        if conn is not None:
            return self._take_all_in(conn, wanted, within)
        with self._store.write_alone() as alone:
            return self._take_all_in(alone, wanted, within)

    def _take_all_in(
        self, conn: Connection, wanted: Sequence[tuple[Bucket, float]], within: float
    ) -> Taken:
        moment = self._store.now()
        now = _seconds(moment)
        owed = self._owed_to([bucket.key for bucket, _ in wanted])
        found = self._rows(conn, [bucket.key for bucket, _ in wanted], moment)
        for bucket, _ in wanted:
            if bucket.key in owed:
                due, held = found[bucket.key]
                found[bucket.key] = (max(due - owed[bucket.key] * bucket.interval, now), held)
        wait, moved = 0.0, {}
        for bucket, units in wanted:
            due, held = found[bucket.key]
            if bucket.interval <= 0:
                wait = max(wait, held - now)
                continue
            moved[bucket.key] = max(due, now) + units * bucket.interval
            wait = max(wait, moved[bucket.key] - bucket.burst * bucket.interval - now,
                       held - now)  # fmt: skip
        first = found[wanted[0][0].key][1]
        if wait > within:
            moved = {key: found[key][0] for key in owed}
        if moved:
            conn.execute(
                SET_DUE,
                [{"b_key": key, "b_due": due, "b_at": moment} for key, due in moved.items()],
            )
        return Taken(wait <= within, wait, first)

    def _holds(
        self, wanted: Sequence[tuple[Bucket, float]], within: float, conn: Connection | None
    ) -> Taken:
        keys = [bucket.key for bucket, _ in wanted]
        select = sa.select(table.c.key, table.c.held_until).where(table.c.key.in_(keys))
        if conn is not None:
            rows = dict(conn.execute(select).all())
        else:
            with self._store.read() as reading:
                rows = dict(reading.execute(select).all())
        now = _seconds(self._store.now())
        wait = max([0.0] + [float(rows[key]) - now for key in keys if key in rows])
        first = rows.get(keys[0])
        return Taken(wait <= within, wait, None if first is None else float(first))

    def give_back_later(self, bucket: Bucket, units: float) -> None:
        """Owe ``bucket`` a correction of ``units`` (as :meth:`give_back`), written with the
        next take of it by this store (:meth:`take_all`) or by :meth:`settle`, whichever comes
        first: a call's correction costs no transaction of its own."""
        if bucket.interval <= 0 or units == 0:
            return
        with self._lock:
            _, owed = self._owed.get(bucket.key, (bucket, 0.0))
            self._owed[bucket.key] = (bucket, owed + units)

    def settle(self) -> int:
        """Write every correction owed (one transaction); how many buckets it corrected."""
        with self._lock:
            if not self._owed:
                return 0
            owed, self._owed = self._owed, {}
        with self._store.write_alone() as conn:
            moment = self._store.now()
            for key in sorted(owed):
                bucket, units = owed[key]
                due, _ = self._row(conn, key, moment)
                self._set(conn, key, moment,
                          due=max(due - units * bucket.interval, _seconds(moment)))  # fmt: skip
        return len(owed)

    def _owed_to(self, keys: Sequence[str]) -> dict[str, float]:
        """The corrections owed to ``keys``, taken off the books (the caller writes them)."""
        with self._lock:
            if not self._owed:
                return {}
            return {key: self._owed.pop(key)[1] for key in keys if key in self._owed}

    def take(self, bucket: Bucket, units: float = 1.0, *, within: float) -> Taken:
        """Take ``units`` of ``bucket`` if they may go within ``within`` seconds."""
        if bucket.interval <= 0:
            wait = self.held_back(bucket.key)
            return Taken(wait <= within, wait)
        with self._store.write_alone() as conn:
            moment = self._store.now()
            now = _seconds(moment)
            due, held = self._row(conn, bucket.key, moment)
            moved = max(due, now) + units * bucket.interval
            wait = max(0.0, moved - bucket.burst * bucket.interval - now, held - now)
            if wait > within:
                return Taken(False, wait)
            self._set(conn, bucket.key, moment, due=moved)
        return Taken(True, wait)

    def give_back(self, bucket: Bucket, units: float) -> None:
        """Correct a take by ``units`` (negative: more were used than taken). A unit given back
        never lets more than ``burst`` go at once: the clock is not moved behind now."""
        if bucket.interval <= 0 or units == 0:
            return
        with self._store.write_alone() as conn:
            moment = self._store.now()
            due, _ = self._row(conn, bucket.key, moment)
            moved = max(due - units * bucket.interval, _seconds(moment))
            self._set(conn, bucket.key, moment, due=moved)

    def hold_back(self, bucket: Bucket, seconds: float) -> None:
        """Let nothing of ``bucket`` go for ``seconds`` (an endpoint's ``Retry-After``), then
        one unit an interval: the burst is used up."""
        with self._store.write_alone() as conn:
            moment = self._store.now()
            due, held = self._row(conn, bucket.key, moment)
            until = _seconds(moment) + seconds
            if until > held:
                drained = until + max(bucket.burst - 1, 0) * bucket.interval
                self._set(conn, bucket.key, moment, due=max(due, drained), held_until=until)

    def held_back(self, key: str) -> float:
        """Seconds until ``key`` is no longer held back by an endpoint (0: it is not)."""
        return self._ahead(key, table.c.held_until)

    def held_until(self, key: str) -> float | None:
        """When ``key``'s hold by an endpoint ends, in the store clock's seconds (None: never
        held): a hold another worker sets moves it."""
        with self._store.read() as conn:
            value = conn.execute(sa.select(table.c.held_until).where(table.c.key == key)).scalar()
        return None if value is None else float(value)

    def due_in(self, key: str) -> float:
        """Seconds ``key``'s clock is ahead of now: what was taken and is not yet refilled."""
        return self._ahead(key, table.c.due)

    def _ahead(self, key: str, column: sa.Column[float]) -> float:
        with self._store.read() as conn:
            value = conn.execute(sa.select(column).where(table.c.key == key)).scalar()
        if value is None:
            return 0.0
        return max(0.0, float(value) - _seconds(self._store.now()))

    def _row(self, conn: Connection, key: str, moment: datetime) -> tuple[float, float]:
        """The row's clock and hold, locked for this transaction; a new row starts at
        ``moment``, held back by nothing."""
        stmt = self._store.for_update(
            sa.select(table.c.due, table.c.held_until).where(table.c.key == key)
        )
        row = conn.execute(stmt).one_or_none()
        if row is None:
            now = _seconds(moment)
            values = {"key": key, "due": now, "held_until": now, "updated_at": moment}
            conn.execute(self._store.insert_new(table, "key"), values)
            row = conn.execute(stmt).one()
        return float(row.due), float(row.held_until)

    def _rows(
        self, conn: Connection, keys: Sequence[str], moment: datetime
    ) -> dict[str, tuple[float, float]]:
        """The rows' clocks and holds by key, locked for this transaction in the keys' order
        (one statement); a new row starts at ``moment``, held back by nothing."""
        stmt = self._store.for_update(
            sa.select(table.c.key, table.c.due, table.c.held_until)
            .where(table.c.key.in_(keys))
            .order_by(table.c.key)
        )
        found = {row.key: (float(row.due), float(row.held_until)) for row in conn.execute(stmt)}
        missing = sorted(set(keys) - set(found))
        if missing:
            for key in missing:
                self._row(conn, key, moment)
            found = {row.key: (float(row.due), float(row.held_until)) for row in conn.execute(stmt)}
        return found

    def _set(self, conn: Connection, key: str, moment: datetime, **values: float) -> None:
        conn.execute(sa.update(table).where(table.c.key == key).values(updated_at=moment, **values))


def _seconds(moment: datetime) -> float:
    seconds = epoch_seconds(moment)
    assert seconds is not None
    return seconds
