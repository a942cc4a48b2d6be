"""The capacity repository: concurrency slots, runs waiting for capacity, operator settings.

A slot of limit key ``k`` is a row ``(k, run, epoch)`` that counts while the run is
``running`` at that epoch (invariant 20). It is taken in the claim's transaction, under
``k``'s lock (on PostgreSQL a transaction advisory lock, :func:`lock_ids`, taken after the
run's row: invariant 15; on SQLite the database's write lock, held from the transaction's
start), and is given back by whatever ends that claim in the same transaction — the run's
status leaving ``running`` or a takeover raising its epoch — with no statement of its own:
a row that no
longer counts is removed by the next taker of ``k``. A dead worker's run stays ``running``
until its lease is taken over, so its slot comes back then, never earlier.

A slot of a skill's key (``skill:<name>``: calls in flight to its destination) is held by an
action instead, a row ``(k, action)`` of ``capacity_calls`` taken in the transaction that marks
the action dispatched (:meth:`Capacity.take_call`). It counts while the action's outcome is
open — ``dispatched``, ``unknown``, ``needs_attention``: the call may still be in flight, and
reconciling sends its lookups and same-key retries under the same slot — so the transaction
that settles the action gives it back, whichever writer that is. An action sent before its
skill declared a cap holds no row, yet counts the same while its outcome is open.

Which keys a run needs and what their caps are is decided above, by
:mod:`openseal.runtime.engine.capacity`; this module only counts, takes and waits.
"""

from __future__ import annotations

import functools
import threading
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from openseal.runtime.statuses import LIVE_RUN_STATUSES, OPEN_OUTCOME, RunStatus
from openseal.runtime.store.db import fastsql
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run

if TYPE_CHECKING:
    from openseal.runtime.store.repos.fenced import FencedTx

settings_table = schema.capacity_settings
limits = schema.capacity_limits
slots = schema.capacity_slots
calls = schema.capacity_calls
waits = schema.capacity_waits
runs = schema.runs
actions = schema.actions


#: a slot counts while its run is running at the slot's epoch — or while the claim that took
#: it has not written the run's row yet, which only the transaction taking it can see (another
#: claim sharing its commit): a row whose run is one epoch behind it is that claim's
def _counts(table: Any) -> sa.Exists:
    return sa.exists().where(
        runs.c.id == table.c.run_id,
        sa.or_(
            sa.and_(runs.c.epoch == table.c.epoch, runs.c.status == RunStatus.RUNNING),
            runs.c.epoch + 1 == table.c.epoch,
        ),
    )


_COUNTS = _counts(slots)
#: a call's slot counts while its action's outcome is open, or a tool call's while its claim
#: holds the run
_CALL_COUNTS = sa.or_(
    sa.and_(
        calls.c.epoch.is_(None),
        sa.exists().where(
            actions.c.id == calls.c.action_id,
            actions.c.status.in_([str(s) for s in OPEN_OUTCOME]),
        ),
    ),
    sa.and_(
        calls.c.epoch.is_not(None),
        sa.exists().where(
            runs.c.id == calls.c.run_id,
            runs.c.epoch == calls.c.epoch,
            runs.c.status == RunStatus.RUNNING,
        ),
    ),
)
#: the actions whose outcome is open
_OPEN = [str(s) for s in OPEN_OUTCOME]


def _unslotted(key: Any, skill: Any) -> Any:
    """The actions of ``skill`` whose outcome is open and that hold no slot of ``key``: sent
    before the skill declared its cap (or while it had none). They count as if they held one
    (docs/decisions/0022)."""
    return sa.select(actions.c.id, actions.c.run_id, actions.c.dispatched_at).where(
        actions.c.status.in_(_OPEN),
        actions.c.skill == skill,
        ~sa.exists().where(calls.c.key == key, calls.c.action_id == actions.c.id),
    )


def _calls_counted(key: str, besides: str | None = None) -> Any:
    """The statement counting the calls in flight to skill key ``key`` (action ``besides`` left
    out): those holding a slot, and those sent before the skill declared its cap."""
    held = sa.select(sa.func.count()).where(calls.c.key == key, _CALL_COUNTS)
    unslotted = _unslotted(key, key.removeprefix(SKILL_PREFIX)).subquery()
    before = sa.select(sa.func.count()).select_from(unslotted)
    if besides is not None:
        held = held.where(calls.c.action_id != besides)
        before = before.where(unslotted.c.id != besides)
    return sa.select(held.scalar_subquery() + before.scalar_subquery())


@dataclass(frozen=True)
class CallSlot:
    """A call in flight to a skill's destination, counted against its cap: an action's
    (``action_id``; ``taken_at``: when its slot was taken, or, sent before the skill declared
    its cap, when it was dispatched) or a read a turn calls (``action_id`` None)."""

    key: str
    run_id: str
    scope: str
    action_id: str | None
    taken_at: datetime


#: how many takes of a store sweep once the key's rows that no longer count
SWEEP_EVERY = 16
#: the keys of skills' caps, whose slots are held by calls in flight, not by claims
SKILL_PREFIX = "skill:"


def _int4(value: int) -> int:
    """An unsigned 32-bit value as the signed ``int4`` PostgreSQL takes."""
    return value - (1 << 32) if value >= 1 << 31 else value


#: the first half of a key's advisory lock on PostgreSQL: every capacity key's lock is in
#: this space of two-``int4`` locks (which no single-``bigint`` lock shares)
LOCK_SPACE = _int4(zlib.crc32(b"openseal.capacity"))


def lock_ids(keys: Iterable[str]) -> list[int]:
    """The second halves of the advisory locks of ``keys`` on PostgreSQL, in the order they
    are taken: each key's CRC-32, sorted, once each. Every taker takes them in this one order,
    so two takers never wait for each other's locks; two keys with one CRC share a lock, which
    only puts their takers one after another."""
    return sorted({_int4(zlib.crc32(key.encode())) for key in keys})


#: :func:`lock_ids` by sorted keys (a process takes a few sets of keys, on every claim)
_lock_ids = functools.lru_cache(maxsize=1024)(lock_ids)


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


@dataclass
class Taking:
    """Slots sent with a claim's write (:meth:`Capacity.take_with_flush`): the keys whose
    slots it took are known once that write is sent."""

    caps: Mapping[str, int]
    #: the keys it took a slot of (None: not written yet)
    taken: frozenset[str] | None = None

    def written(self, keys: list[Any]) -> None:
        self.taken = frozenset(str(key) for key in keys)

    def refused(self) -> str | None:
        """The first key (in sorted order) whose slot was not taken, once written; None when
        every slot was."""
        if self.taken is None:
            raise RuntimeError("the slots' write has not been sent")
        return next((key for key in sorted(self.caps) if key not in self.taken), None)


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
        #: SQLite: the caps this store recorded last, by key (:meth:`take`)
        self._recorded: dict[str, int] = {}

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
    ) -> Full | None:
        """Take a slot of each key of ``caps`` (its cap) for ``run_id`` at ``epoch``; the first
        key (in sorted order) that is full, else None. Slots taken of the other keys when one is
        full stay written but count for nothing once the caller moves the run out of
        ``running`` in this transaction.

        The run's row must be locked by this transaction (invariant 15: the run first). Two
        statements whatever the number of keys, sent in one round trip on PostgreSQL: take the
        keys' advisory locks (:func:`lock_ids`: one order among the keys), then count each
        key's slots and write this run's where there is room. The second is a statement of its
        own so that its snapshot (READ COMMITTED takes one per statement) is taken once the
        locks are held: it sees every slot a claim that held a lock before it committed. An
        advisory lock lives in the server's memory: taking it writes no row and no WAL.

        On SQLite the transaction holds the database's write lock from its start, which
        serialises every taker already, and no lock is sent. On both, each key's cap is
        recorded in its ``capacity_limits`` row (what a waker falls back on) only when this
        store has not recorded that cap yet, by an upsert after the locks; and every
        :data:`SWEEP_EVERY` takes, the keys' rows that no longer count are removed (both
        before the count). A cap that never binds costs a claim two statements on PostgreSQL,
        one on SQLite."""
        keys = sorted(caps)
        _record, write = self._statements(len(keys))
        params = self._take_parameters(run_id, epoch, keys, caps, now)
        statements = self._before_count(keys, caps, params)
        statements.append((write, params))
        written = fastsql.execute_together(conn, statements)[-1]
        taken = {str(row["key"]) for row in written}
        for key in keys:
            if key not in taken:
                in_use = self.in_use(conn, [key], besides=run_id)[key]
                return Full(key, caps[key], in_use)
        return None

    def take_with_flush(
        self, tx: FencedTx, run_id: str, epoch: int, caps: Mapping[str, int], now: datetime
    ) -> Taking:
        """PostgreSQL: :meth:`take`, sent with the claim's own write instead of a round trip
        of its own, for a caller that goes on as if every slot was taken and rolls ``tx`` back
        when one was not (:meth:`Taking.refused`, known once ``tx`` has flushed).

        The keys' locks (and the cap's record, the sweep, when due) go with ``tx``'s next
        statement, as statements of their own; the count and write of the slots go in the
        statement that writes ``tx``'s held-back changes (``FencedTx.update_with_flush``), which
        comes after them, so its snapshot is taken once the locks are held, as :meth:`take`'s
        is. A key found full has no slot written; the run's write went with it all the same,
        so ``tx`` must not commit then."""
        keys = sorted(caps)
        _record, write = self._statements(len(keys))
        params = self._take_parameters(run_id, epoch, keys, caps, now)
        conn = tx.row_conn
        for stmt, given in self._before_count(keys, caps, params):
            fastsql.execute_with_next(conn, stmt, given)
        taking = Taking(caps)
        tx.update_with_flush(write, params, taking.written)
        return taking

    def rolled_back(self, taking: Taking) -> None:
        """``taking``'s transaction was rolled back: the caps it recorded are not recorded."""
        with self._lock:
            for key in taking.caps:
                self._recorded.pop(key, None)

    def _take_parameters(
        self, run_id: str, epoch: int, keys: list[str], caps: Mapping[str, int], now: datetime
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"p_run": run_id, "p_epoch": epoch, "p_now": now}
        for i, key in enumerate(keys):
            params[f"p_key{i}"] = key
            params[f"p_max{i}"] = caps[key]
        return params

    def _before_count(
        self, keys: list[str], caps: Mapping[str, int], params: Mapping[str, Any]
    ) -> list[tuple[Any, Mapping[str, Any]]]:
        """What a take sends before the count: the keys' locks, the caps' record when this
        store has not recorded them, and every :data:`SWEEP_EVERY` takes the sweep."""
        record, _write = self._statements(len(keys))
        statements = self._locked(keys)
        if any(self._recorded.get(key) != cap for key, cap in caps.items()):
            statements.append((record, params))
            with self._lock:
                self._recorded.update(caps)
        self._takes += 1
        if self._takes % SWEEP_EVERY == 0:
            statements.append((self._sweep(len(keys)), params))
        return statements

    def _locked(self, keys: Sequence[str]) -> list[tuple[Any, Mapping[str, Any]]]:
        """The statement taking ``keys``' advisory locks on PostgreSQL (none on SQLite, whose
        write lock the transaction holds already), in a list a taker adds its own to."""
        if self._store.dialect != "postgresql":
            return []
        ids = _lock_ids(tuple(keys))
        built: dict[int, Any] = self.__dict__.setdefault("_locks", {})
        stmt = built.get(len(ids))
        if stmt is None:
            space = sa.cast(sa.bindparam("p_space"), sa.Integer)
            # one expression per lock, taken in the order of the select list
            stmt = built[len(ids)] = sa.select(
                *(
                    sa.func.pg_advisory_xact_lock(
                        space, sa.cast(sa.bindparam(f"p_lock{i}"), sa.Integer)
                    ).label(f"l{i}")
                    for i in range(len(ids))
                )
            )
        params = {"p_space": LOCK_SPACE, **{f"p_lock{i}": id_ for i, id_ in enumerate(ids)}}
        return [(stmt, params)]

    def _statements(self, n: int) -> tuple[Any, Any]:
        """The statements :meth:`take` sends for ``n`` keys, built once each: the upsert that
        records their caps, and the count and write of this run's slots."""
        built: dict[int, tuple[Any, Any]] = self.__dict__.setdefault("_built", {})
        found = built.get(n)
        if found is not None:
            return found
        insert = self._insert()
        pairs = [
            (
                sa.bindparam(f"p_key{i}", type_=limits.c.key.type),
                sa.bindparam(f"p_max{i}", type_=sa.Integer),
            )
            for i in range(n)
        ]
        stmt = insert(limits).values([{"key": k, "max_slots": m} for k, m in pairs])
        record = stmt.on_conflict_do_update(
            index_elements=[limits.c.key],
            set_={"max_slots": stmt.excluded.max_slots},
            where=limits.c.max_slots.is_distinct_from(stmt.excluded.max_slots),
        )
        selects = [sa.select(k.label("key"), m.label("cap")) for k, m in pairs]
        wanted = (sa.union_all(*selects) if n > 1 else selects[0]).subquery("wanted")
        others = slots.alias("others")
        in_use = (
            sa.select(sa.func.count())
            .select_from(others)
            .where(
                others.c.key == wanted.c.key,
                others.c.run_id != sa.bindparam("p_run"),
                _counts(others),
            )
            .scalar_subquery()
        )
        rows = sa.select(
            wanted.c.key,
            sa.bindparam("p_run", type_=slots.c.run_id.type),
            sa.bindparam("p_epoch", type_=sa.Integer),
            sa.bindparam("p_now", type_=slots.c.taken_at.type),
        ).where(in_use < wanted.c.cap)
        mine = insert(slots).from_select(["key", "run_id", "epoch", "taken_at"], rows)
        write = mine.on_conflict_do_update(
            index_elements=[slots.c.key, slots.c.run_id],
            set_={"epoch": mine.excluded.epoch, "taken_at": mine.excluded.taken_at},
        ).returning(slots.c.key)
        built[n] = (record, write)
        return record, write

    def _insert(self) -> Any:
        """The dialect's ``INSERT`` (with ``ON CONFLICT``)."""
        return postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert

    def _sweep(self, n: int) -> Any:
        """Remove the rows of ``n`` keys that no longer count."""
        built: dict[int, Any] = self.__dict__.setdefault("_sweeps", {})
        if n not in built:
            keys = [sa.bindparam(f"p_key{i}", type_=limits.c.key.type) for i in range(n)]
            built[n] = sa.delete(slots).where(slots.c.key.in_(keys), ~_COUNTS)
        return built[n]

    def in_use(
        self, conn: sa.Connection, keys: Iterable[str], *, besides: str | None = None
    ) -> dict[str, int]:
        """How many slots of each key count now (those of run ``besides`` left out): a
        skill's key counts its calls in flight, any other its claims."""
        wanted = list(keys)
        counted: dict[str, int] = {}
        claims = [key for key in wanted if not key.startswith(SKILL_PREFIX)]
        if claims:
            stmt = sa.select(slots.c.key, sa.func.count()).where(slots.c.key.in_(claims), _COUNTS)
            if besides is not None:
                stmt = stmt.where(slots.c.run_id != besides)
            counted.update((str(k), int(n)) for k, n in conn.execute(stmt.group_by(slots.c.key)))
        for key in wanted:
            if key.startswith(SKILL_PREFIX):
                counted[key] = int(conn.execute(_calls_counted(key)).scalar_one())
        return {key: counted.get(key, 0) for key in wanted}

    def take_call(
        self,
        conn: sa.Connection,
        key: str,
        cap: int,
        *,
        action_id: str,
        run_id: str,
        now: datetime,
        epoch: int | None = None,
    ) -> Full | None:
        """Take a slot of skill key ``key`` (its cap: ``cap``) for ``action_id``, about to be
        marked ``dispatched`` by this transaction; the key, full, when ``cap`` calls other than
        this action's are in flight (nothing is taken then). The calls in flight count those
        sent before the skill declared its cap, which hold no row. An action whose outcome is
        open (a same-key retry) is counted already: it is never refused, even by a cap
        lowered below the calls in flight, and gets a row if it had none.
        With ``epoch``, the slot is a tool call's (``action_id`` its own id), held by the claim
        of ``run_id`` at ``epoch`` until :meth:`give_back_call`.

        The run's row must be locked by this transaction (invariant 15). The key's lock is
        taken first, as in :meth:`take` (so takers of one key count one after another), and
        the count is a statement of its own after it; the key's rows that no longer count
        (their actions settled) are removed on the way."""
        record, _ = self._statements(1)
        statements = self._locked([key])
        if self._recorded.get(key) != cap:
            statements.append((record, {"p_key0": key, "p_max0": cap}))
            with self._lock:
                self._recorded[key] = cap
        for stmt, params in statements:
            conn.execute(stmt, params)
        conn.execute(sa.delete(calls).where(calls.c.key == key, ~_CALL_COUNTS))
        in_use = conn.execute(_calls_counted(key, besides=action_id)).scalar_one()
        if in_use >= cap and not self._open(conn, action_id):
            return Full(key, cap, int(in_use))
        row = self._insert()(calls).values(
            key=key, action_id=action_id, run_id=run_id, taken_at=now, epoch=epoch
        )
        conn.execute(row.on_conflict_do_nothing(index_elements=[calls.c.key, calls.c.action_id]))
        return None

    @staticmethod
    def _open(conn: sa.Connection, action_id: str) -> bool:
        """Whether ``action_id``'s outcome is open: its call counts already, and a same-key
        retry of it is the same call, never one more."""
        found = conn.execute(
            sa.select(actions.c.id).where(actions.c.id == action_id, actions.c.status.in_(_OPEN))
        ).first()
        return found is not None

    def give_back_call(self, conn: sa.Connection, key: str, call_id: str) -> None:
        """A tool call's slot (``call_id``, taken with an epoch) is given back: its result is
        recorded, or it was not sent."""
        conn.execute(sa.delete(calls).where(calls.c.key == key, calls.c.action_id == call_id))

    def calls_in_flight(self, conn: sa.Connection, key: str) -> list[tuple[str, str]]:
        """The ``(action, run)`` pairs counted against skill key ``key``'s cap now."""
        return [(call.action_id or "", call.run_id) for call in self.calls_held(conn, keys=[key])]

    def call_keys(self, conn: sa.Connection) -> list[str]:
        """The skill keys some call holds a slot of now."""
        stmt = sa.select(calls.c.key).where(_CALL_COUNTS).distinct().order_by(calls.c.key)
        return [str(key) for key in conn.execute(stmt).scalars()]

    def calls_held(
        self, conn: sa.Connection, *, keys: Sequence[str], owner: str | None = None
    ) -> list[CallSlot]:
        """The calls counted against the caps of skill ``keys`` now, of the runs whose
        objective ``owner`` (``agent.x``, ``team.t``) owns when given, by key and time: the
        slots held (in ``capacity_calls``) and the actions sent before their skill declared
        its cap, which count as if they held one."""
        objectives = schema.objectives
        found: list[CallSlot] = []
        for key in sorted(keys):
            unslotted = _unslotted(key, key.removeprefix(SKILL_PREFIX)).subquery()
            parts = [
                sa.select(
                    calls.c.run_id.label("run_id"),
                    sa.case((calls.c.epoch.is_(None), calls.c.action_id)).label("action_id"),
                    calls.c.taken_at.label("taken_at"),
                ).where(calls.c.key == key, _CALL_COUNTS),
                sa.select(unslotted.c.run_id, unslotted.c.id, unslotted.c.dispatched_at),
            ]
            held = sa.union_all(*parts).subquery()
            stmt = (
                sa.select(held.c.run_id, held.c.action_id, held.c.taken_at, runs.c.scope)
                .outerjoin(runs, runs.c.id == held.c.run_id)
                .outerjoin(objectives, objectives.c.id == runs.c.objective_id)
                .order_by(held.c.taken_at, held.c.run_id, held.c.action_id)
            )
            if owner is not None:
                stmt = stmt.where(objectives.c.owner == owner)
            for run_id, action_id, taken_at, scope in conn.execute(stmt).all():
                found.append(CallSlot(key, str(run_id), str(scope or ""), action_id, taken_at))
        return found

    def caps(self, conn: sa.Connection, keys: Iterable[str]) -> dict[str, int]:
        """The cap each key's last taker recorded."""
        wanted = list(keys)
        rows = conn.execute(
            sa.select(limits.c.key, limits.c.max_slots).where(limits.c.key.in_(wanted))
        ).all()
        return {str(key): int(cap) for key, cap in rows if cap is not None}

    def held(
        self,
        conn: sa.Connection,
        run_ids: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> list[Slot]:
        """The slots that count now (of ``run_ids`` only, of runs in ``scopes`` only, when
        given), by key and run."""
        stmt = sa.select(slots).where(_COUNTS).order_by(slots.c.key, slots.c.run_id)
        if run_ids is not None:
            stmt = stmt.where(slots.c.run_id.in_(list(run_ids)))
        if scopes is not None:
            stmt = stmt.where(slots.c.run_id.in_(_runs_in(scopes)))
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

    def waiting_for(
        self, conn: sa.Connection, key: str, limit: int, scopes: Sequence[str] | None = None
    ) -> list[str]:
        """The runs waiting for ``key`` (of runs in ``scopes`` only, when given), in the order
        they will be woken."""
        if scopes is None:
            return self.waiters(conn, key, limit)
        rows = conn.execute(
            _in_wake_order(sa.select(waits.c.run_id).where(waits.c.key == key))
            .where(waits.c.run_id.in_(_runs_in(scopes)))
            .limit(limit)
        ).all()
        return [str(row.run_id) for row in rows]

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
            _in_wake_order(sa.select(waits.c.run_id).where(waits.c.key == key)).limit(limit)
        ).all()
        return [str(row.run_id) for row in rows]

    def wake(self, conn: sa.Connection, run_id: str, key: str, now: datetime) -> bool:
        """Make ``run_id`` runnable again (``queued``) if it still waits for capacity, with
        ``capacity.woken``; its wait is removed either way. Locks the run's row.

        The run gets back the ``waiting`` record its capacity wait kept (``resumes``: what
        woke it before the limit held it, a delivered event's payload, an approval's
        decision...), which the turn it starts reads and its outcome clears."""
        row = conn.execute(
            self._store.for_update(
                sa.select(runs.c.status, runs.c.waiting).where(runs.c.id == run_id)
            )
        ).first()
        conn.execute(sa.delete(waits).where(waits.c.run_id == run_id))
        if row is None or row.status != RunStatus.WAITING_FOR_CAPACITY:
            return False
        kept = (row.waiting or {}).get("resumes")
        change_run(
            conn, run_id, event_type="capacity.woken", actor="openseal",
            payload={"limit": key}, now=now,
            values={"status": RunStatus.QUEUED, "waiting": kept, "wake_at": None},
        )  # fmt: skip
        self._store.notify_work(conn, run_id)
        return True


def _in_wake_order(stmt: sa.Select[Any]) -> sa.Select[Any]:
    """Waiters as they are woken: higher priority first, then longest waiting."""
    return stmt.order_by(waits.c.priority.desc(), waits.c.since, waits.c.run_id)


def _runs_in(scopes: Sequence[str]) -> sa.Select[Any]:
    """The ids of the runs in ``scopes``."""
    return sa.select(runs.c.id).where(runs.c.scope.in_(list(scopes)))
