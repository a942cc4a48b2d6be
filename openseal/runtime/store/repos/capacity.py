"""The capacity repository: concurrency slots, runs waiting for capacity, operator settings.

A slot of limit key ``k`` is a row ``(k, run, epoch)`` that counts while the run is
``running`` at that epoch (invariant 20). It is taken in the claim's transaction, under the
lock of ``k``'s row in ``capacity_limits`` (taken after the run's row: invariant 15), and is
given back by whatever ends that claim in the same transaction — the run's status leaving
``running`` or a takeover raising its epoch — with no statement of its own: a row that no
longer counts is removed by the next taker of ``k``. A dead worker's run stays ``running``
until its lease is taken over, so its slot comes back then, never earlier.

Which keys a run needs and what their caps are is decided above, by
:mod:`openseal.runtime.engine.capacity`; this module only counts, takes and waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from openseal.runtime.statuses import LIVE_RUN_STATUSES, RunStatus
from openseal.runtime.store.db import fastsql
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run

settings_table = schema.capacity_settings
limits = schema.capacity_limits
slots = schema.capacity_slots
waits = schema.capacity_waits
runs = schema.runs

#: a slot counts while its run is running at the slot's epoch — or while the claim that took
#: it has not written the run's row yet, which only the transaction taking it can see (another
#: claim sharing its commit): a row whose run is one epoch behind it is that claim's
_COUNTS = sa.exists().where(
    runs.c.id == slots.c.run_id,
    sa.or_(
        sa.and_(runs.c.epoch == slots.c.epoch, runs.c.status == RunStatus.RUNNING),
        runs.c.epoch + 1 == slots.c.epoch,
    ),
)
#: how many takes of a store sweep once the key's rows that no longer count
SWEEP_EVERY = 16


@dataclass(frozen=True)
class Setting:
    """An operator's setting of one limit key: a cap (None: none), whether it is paused, a
    quota and a ready-queue depth."""

    key: str
    max_slots: int | None
    paused: bool
    updated_by: str
    updated_at: datetime
    #: a quota's size (``quota:`` keys), and what work over it does: ``wait`` or ``refuse``
    quota: int | None = None
    when_over: str | None = None
    #: a scope's ready-queue depth (``scope:`` keys)
    max_queued: int | None = None


@dataclass(frozen=True)
class Full:
    """A key whose slots are all taken (``max_slots`` 0: paused)."""

    key: str
    max_slots: int
    in_use: int


@dataclass(frozen=True)
class Slot:
    key: str
    run_id: str
    epoch: int
    taken_at: datetime


class Capacity(Repository):
    """``store.capacity``: slots, waits and settings of flow control."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self._lock = threading.Lock()
        #: (``time.monotonic()`` when read, the settings by key)
        self._settings: tuple[float, dict[str, Setting]] | None = None
        #: slots this store has taken (every :data:`SWEEP_EVERY`-th sweeps its key)
        self._takes = 0

    # -- settings --------------------------------------------------------------------

    def settings(self, *, max_age: float | None = None) -> dict[str, Setting]:
        """Every setting by key; with ``max_age``, an answer read up to that many seconds ago
        by this store may be given (the table is small and read on every claim's path)."""
        with self._lock:
            cached = self._settings
        if max_age is not None and cached is not None and time.monotonic() - cached[0] < max_age:
            return cached[1]
        with self._store.read() as conn:
            rows = conn.execute(sa.select(settings_table)).mappings().all()
        found = {row["key"]: Setting(**row) for row in rows}
        with self._lock:
            self._settings = (time.monotonic(), found)
        return found

    def set(
        self, key: str, *, by: str, max_slots: int | None = None, paused: bool | None = None,
        clear_max: bool = False, **others: Any,
    ) -> Setting:  # fmt: skip
        """Change ``key``'s setting (``max_slots`` set, or removed with ``clear_max``; ``paused``
        set; any of ``quota``, ``when_over``, ``max_queued`` given in ``others`` set to it, None
        removing it) and return it. Read by every store within the settings' cache age."""
        now = self._store.now()
        with self._store.write() as conn:
            row = conn.execute(
                self._store.for_update(
                    sa.select(settings_table).where(settings_table.c.key == key)
                )
            ).mappings().one_or_none()  # fmt: skip
            current = Setting(**row) if row is not None else Setting(key, None, False, by, now)
            new_max = None if clear_max else (current.max_slots if max_slots is None else max_slots)
            new_paused = current.paused if paused is None else paused
            values: dict[str, Any] = {"max_slots": new_max, "paused": new_paused, "updated_by": by,
                      "updated_at": now, "quota": current.quota,
                      "when_over": current.when_over, "max_queued": current.max_queued}  # fmt: skip
            unknown = set(others) - {"quota", "when_over", "max_queued"}
            if unknown:
                raise TypeError(f"no such setting: {sorted(unknown)}")
            values.update(others)
            if row is None:
                conn.execute(sa.insert(settings_table).values(key=key, **values))
            else:
                conn.execute(
                    sa.update(settings_table).where(settings_table.c.key == key).values(**values)
                )
        with self._lock:
            self._settings = None
        return Setting(key=key, **values)

    # -- slots -----------------------------------------------------------------------

    def take(
        self,
        conn: sa.Connection,
        run_id: str,
        epoch: int,
        caps: Mapping[str, int],
        now: datetime,
    ) -> Full | bool:
        """Take a slot of each key of ``caps`` (its cap) for ``run_id`` at ``epoch``, keys in
        sorted order (one lock order among the keys); the first key that is full, or, when
        every slot was taken, whether one of the keys is full now. Slots taken before a full
        key stay written but count for nothing once the caller moves the run out of
        ``running`` in this transaction.

        The run's row must be locked by this transaction (invariant 15: the run first). Three
        statements a key, built once: lock the key's row (an upsert recording the cap), count
        the others' slots, write this one; and every :data:`SWEEP_EVERY` takes, remove the
        rows that no longer count."""
        lock, count, write, sweep = self._statements()
        filled = False
        for key in sorted(caps):
            cap = caps[key]
            fastsql.execute(conn, lock, {"p_key": key, "p_max": cap})
            self._takes += 1
            if self._takes % SWEEP_EVERY == 0:
                fastsql.execute_count(conn, sweep, {"p_key": key})
            (row,) = fastsql.execute(conn, count, {"p_key": key, "p_run": run_id})
            in_use = int(next(iter(row.values())))
            if in_use >= cap:
                return Full(key, cap, in_use)
            params = {"p_key": key, "p_run": run_id, "p_epoch": epoch, "p_now": now}
            fastsql.execute(conn, write, params)
            filled = filled or in_use + 1 >= cap
        return filled

    def _statements(self) -> tuple[Any, Any, Any, Any]:
        """The statements :meth:`take` sends, built once for the store's dialect."""
        built: tuple[Any, Any, Any, Any] | None = getattr(self, "_built", None)
        if built is not None:
            return built
        insert = postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert
        key = sa.bindparam("p_key", type_=limits.c.key.type)
        cap = sa.bindparam("p_max", type_=sa.Integer)
        # an upsert locks the key's row on PostgreSQL (SQLite's write lock covers it)
        stmt = insert(limits).values(key=key, max_slots=cap)
        lock = stmt.on_conflict_do_update(
            index_elements=[limits.c.key], set_={"max_slots": stmt.excluded.max_slots}
        ).returning(limits.c.key)
        count = (
            sa.select(sa.func.count())
            .select_from(slots)
            .where(slots.c.key == key, slots.c.run_id != sa.bindparam("p_run"), _COUNTS)
        )
        mine = insert(slots).values(
            key=key, run_id=sa.bindparam("p_run"), epoch=sa.bindparam("p_epoch"),
            taken_at=sa.bindparam("p_now", type_=slots.c.taken_at.type),
        )  # fmt: skip
        write = mine.on_conflict_do_update(
            index_elements=[slots.c.key, slots.c.run_id],
            set_={"epoch": mine.excluded.epoch, "taken_at": mine.excluded.taken_at},
        ).returning(slots.c.key)
        sweep = sa.delete(slots).where(slots.c.key == key, ~_COUNTS)
        self._built = (lock, count, write, sweep)
        return self._built

    def in_use(self, conn: sa.Connection, keys: Iterable[str]) -> dict[str, int]:
        """How many slots of each key count now."""
        wanted = list(keys)
        found = conn.execute(
            sa.select(slots.c.key, sa.func.count())
            .where(slots.c.key.in_(wanted), _COUNTS)
            .group_by(slots.c.key)
        ).all()
        counted = {str(key): int(n) for key, n in found}
        return {key: counted.get(key, 0) for key in wanted}

    def caps(self, conn: sa.Connection, keys: Iterable[str]) -> dict[str, int]:
        """The cap each key's last taker recorded."""
        wanted = list(keys)
        rows = conn.execute(
            sa.select(limits.c.key, limits.c.max_slots).where(limits.c.key.in_(wanted))
        ).all()
        return {str(key): int(cap) for key, cap in rows if cap is not None}

    def held(self, conn: sa.Connection, run_ids: Sequence[str] | None = None) -> list[Slot]:
        """The slots that count now (of ``run_ids`` only, when given), by key and run."""
        stmt = sa.select(slots).where(_COUNTS).order_by(slots.c.key, slots.c.run_id)
        if run_ids is not None:
            stmt = stmt.where(slots.c.run_id.in_(list(run_ids)))
        return [Slot(**row) for row in conn.execute(stmt).mappings()]

    def live_runs_of(self, conn: sa.Connection, owner: str, limit: int) -> list[Run]:
        """The runs not ended whose objective ``owner`` (``agent.x``, ``team.t``) owns, the
        most recently changed first."""
        objectives = schema.objectives
        stmt = (
            sa.select(runs)
            .join(objectives, objectives.c.id == runs.c.objective_id)
            .where(objectives.c.owner == owner, runs.c.status.in_(list(LIVE_RUN_STATUSES)))
            .order_by(runs.c.updated_at.desc(), runs.c.id)
            .limit(limit)
        )
        return [Run.from_row(row) for row in conn.execute(stmt).mappings()]

    def waiting_for(self, conn: sa.Connection, key: str, limit: int) -> list[str]:
        """The runs waiting for ``key``, in the order they will be woken."""
        return self.waiters(conn, key, limit)

    # -- waits -----------------------------------------------------------------------

    def wait(
        self, conn: sa.Connection, run_id: str, key: str, priority: int, now: datetime
    ) -> None:
        """Record that ``run_id`` waits for ``key`` (it is moving to ``waiting_for_capacity``
        in this transaction)."""
        conn.execute(sa.delete(waits).where(waits.c.run_id == run_id))
        conn.execute(sa.insert(waits).values(run_id=run_id, key=key, priority=priority, since=now))

    def forget(self, conn: sa.Connection, run_id: str) -> None:
        """``run_id`` no longer waits for capacity (a migration made it ``queued`` again, to
        count against the limits of the state it moved to)."""
        conn.execute(sa.delete(waits).where(waits.c.run_id == run_id))

    def any_waiting(self, keys: Iterable[str]) -> bool:
        """Whether some run waits for one of ``keys`` (a read: most ends have none to wake)."""
        wanted = list(keys)
        with self._store.read() as conn:
            found = conn.execute(
                sa.select(waits.c.run_id).where(waits.c.key.in_(wanted)).limit(1)
            ).first()
        return found is not None

    def waiting_keys(self, conn: sa.Connection) -> list[str]:
        """The keys some run waits for."""
        rows = conn.execute(sa.select(waits.c.key).distinct().order_by(waits.c.key)).all()
        return [str(row.key) for row in rows]

    def waiters(self, conn: sa.Connection, key: str, limit: int) -> list[str]:
        """The first ``limit`` runs waiting for ``key``: higher priority first, then longest
        waiting."""
        rows = conn.execute(
            sa.select(waits.c.run_id)
            .where(waits.c.key == key)
            .order_by(waits.c.priority.desc(), waits.c.since, waits.c.run_id)
            .limit(limit)
        ).all()
        return [str(row.run_id) for row in rows]

    def wake(self, conn: sa.Connection, run_id: str, key: str, now: datetime) -> bool:
        """Make ``run_id`` runnable again (``queued``) if it still waits for capacity, with
        ``capacity.woken``; its wait is removed either way. Locks the run's row."""
        status = conn.execute(
            self._store.for_update(sa.select(runs.c.status).where(runs.c.id == run_id))
        ).scalar_one_or_none()
        conn.execute(sa.delete(waits).where(waits.c.run_id == run_id))
        if status != RunStatus.WAITING_FOR_CAPACITY:
            return False
        change_run(
            conn, run_id, event_type="capacity.woken", actor="openseal",
            payload={"limit": key}, now=now,
            values={"status": RunStatus.QUEUED, "waiting": None, "wake_at": None},
        )  # fmt: skip
        self._store.notify_work(conn, run_id)
        return True
