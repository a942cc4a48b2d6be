"""The one way a run changes: an UPDATE that bumps the event sequence, plus its event rows.

Invariant 1: a run's state change and the events describing it commit together, and each run's
event sequence is gap-free. Both follow from doing them in the same transaction with the
sequence taken from ``runs.last_event_seq`` in the same UPDATE that changes the run — the row
lock (PostgreSQL) or the write lock (SQLite ``BEGIN IMMEDIATE``) orders concurrent appends. A
run claimed in the transaction that creates it is written once instead, by an INSERT of the
row as its events leave it, sequence included (``append_events(insert_run=True)``).

The statements are built once per shape (which columns change, whether the UPDATE is fenced)
and reused with bound parameters: building and hashing a SQLAlchemy statement costs more than
executing it on SQLite, and these run several times per turn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from openseal.runtime.store.db import combined, fastsql
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Event, Run

runs = schema.runs

_lock = threading.Lock()
#: ``conn.info`` key counting the event writes made on a connection, so a FencedTx knows
#: whether someone appended events to its run behind its back
EVENT_WRITES = "openseal_event_writes"
_updates: dict[tuple[tuple[str, ...], bool, bool], sa.Update] = {}
_inserts: dict[tuple[str, ...], sa.Insert] = {}
#: event payloads that depend on an update: (event index, update index) pairs, in order
Alternatives = tuple[tuple[int, int], ...]
#: event payloads given the database's clock: (event index, the payload's field) pairs, in order
Stamps = tuple[tuple[int, str], ...]
_with_events: dict[
    tuple[
        tuple[str, ...],
        bool,
        bool,
        int,
        combined.Shape,
        tuple[sa.Update | sa.Insert, ...],
        Alternatives,
        Stamps,
    ],
    sa.Insert,
] = {}
INSERT_EVENTS: sa.Insert = sa.insert(schema.events)


@dataclass(frozen=True)
class Fence:
    """The claim an UPDATE must still match: epoch, lease owner, and status ``running``."""

    epoch: int
    owner: str


def _run_update(keys: tuple[str, ...], fenced: bool, whole_row: bool) -> sa.Update:
    """``UPDATE runs SET <keys>, last_event_seq += :count ... RETURNING ...``, built once."""
    shape = (keys, fenced, whole_row)
    stmt = _updates.get(shape)
    if stmt is not None:
        return stmt
    count = sa.bindparam("p_count", type_=sa.Integer)
    values: dict[str, Any] = {key: sa.bindparam(f"v_{key}", type_=runs.c[key].type) for key in keys}
    values.update(
        last_event_seq=runs.c.last_event_seq + count,
        revision=runs.c.revision + count,
        updated_at=sa.bindparam("p_now", type_=runs.c.updated_at.type),
    )
    conditions = [runs.c.id == sa.bindparam("p_id", type_=runs.c.id.type)]
    if fenced:
        conditions += [
            runs.c.epoch == sa.bindparam("p_epoch", type_=sa.Integer),
            runs.c.lease_owner == sa.bindparam("p_owner", type_=runs.c.lease_owner.type),
            runs.c.status == sa.bindparam("p_running", type_=runs.c.status.type),
        ]
    returning = tuple(runs.c) if whole_row else (runs.c.last_event_seq,)
    stmt = sa.update(runs).where(*conditions).values(**values).returning(*returning)
    with _lock:
        _updates[shape] = stmt
    return stmt


def _run_insert(keys: tuple[str, ...]) -> sa.Insert:
    """``INSERT INTO runs (<keys>) VALUES (:v_<key>, ...) RETURNING last_event_seq``, built
    once: a run written for the first time with its events (PostgreSQL)."""
    stmt = _inserts.get(keys)
    if stmt is None:
        values = {key: sa.bindparam(f"v_{key}", type_=runs.c[key].type) for key in keys}
        stmt = sa.insert(runs).values(**values).returning(runs.c.last_event_seq)
        with _lock:
            _inserts[keys] = stmt
    return stmt


def _event_payloads(
    count: int, alternatives: Alternatives, stamps: Stamps, updated: list[sa.CTE]
) -> list[sa.ColumnElement[Any]]:
    """The payloads of :func:`_run_write_with_events`'s ``count`` events: each its bound
    value, or the alternative one when its update changed a row, stamped where asked."""
    payload = schema.events.c.payload.type
    payloads: list[sa.ColumnElement[Any]] = [
        sa.bindparam(f"e_payload_{i}", type_=payload) for i in range(count)
    ]
    for i, u in alternatives:
        instead = sa.bindparam(f"e_payload_if_{i}", type_=payload)
        payloads[i] = sa.case((sa.exists(updated[u].select()), instead), else_=payloads[i])
    for i, field in stamps:
        payloads[i] = _stamped(payloads[i], field)
    return payloads


def _run_write_with_events(
    keys: tuple[str, ...],
    fenced: bool,
    insert_run: bool,
    count: int,
    inserts: combined.Shape,
    updates: tuple[sa.Update | sa.Insert, ...],
    alternatives: Alternatives,
    stamps: Stamps,
) -> sa.Insert:
    """PostgreSQL: ``WITH changed AS (UPDATE runs ... RETURNING last_event_seq) INSERT INTO
    events ... SELECT ... FROM changed`` for ``count`` events, built once per shape (with
    ``insert_run``, ``changed`` is ``INSERT INTO runs ... RETURNING last_event_seq``). The
    events take the sequence numbers the UPDATE made room for (the ones the inserted row
    ends at); a fenced UPDATE that matches nothing inserts nothing (and returns no row). The
    rows of ``inserts`` and the ``updates`` (:mod:`.combined`) are written by the same
    statement, whatever the UPDATE matches; each row it returns also holds what the updates
    returned. Event ``i`` of a pair ``(i, u)`` of ``alternatives`` has payload
    ``e_payload_if_<i>`` instead when update ``u`` changed a row. Event ``i`` of a pair
    ``(i, field)`` of ``stamps`` has ``field`` set to the server's clock in its payload."""
    shape = (keys, fenced, insert_run, count, inserts, updates, alternatives, stamps)
    stmt = _with_events.get(shape)
    if stmt is not None:
        return stmt
    events = schema.events
    write = _run_insert(keys) if insert_run else _run_update(keys, fenced, whole_row=False)
    changed = write.cte("changed")
    updated = combined.update_ctes(updates)
    payloads = _event_payloads(count, alternatives, stamps, updated)
    rows = [
        sa.select(
            sa.literal_column(str(i), sa.Integer).label("ord"),
            sa.bindparam(f"e_type_{i}", type_=events.c.type.type).label("type"),
            sa.bindparam(f"e_actor_{i}", type_=events.c.actor.type).label("actor"),
            payloads[i].label("payload"),
        )
        for i in range(count)
    ]
    new = (sa.union_all(*rows) if count > 1 else rows[0]).subquery("new_events")
    first = changed.c.last_event_seq - sa.literal_column(str(count - 1), sa.Integer)
    source = sa.select(
        sa.bindparam("p_id", type_=events.c.run_id.type),
        first + new.c.ord,
        new.c.type,
        new.c.actor,
        new.c.payload,
        sa.bindparam("p_now", type_=events.c.at.type),
    ).select_from(changed.join(new, sa.true()))
    columns = ["run_id", "seq", "type", "actor", "payload", "at"]
    stmt = sa.insert(events).from_select(columns, source)
    stmt = stmt.returning(events.c.seq, *combined.updated(updated))
    stmt = stmt.add_cte(*combined.insert_ctes(inserts), *updated, changed)
    with _lock:
        _with_events[shape] = stmt
    return stmt


def append_events(
    conn: sa.Connection,
    run_id: str,
    events: Sequence[tuple[str, str, dict[str, Any]]],
    *,
    now: datetime,
    values: dict[str, Any] | None = None,
    fence: Fence | None = None,
    whole_row: bool = False,
    inserts: Sequence[tuple[sa.Table, Mapping[str, Any]]] = (),
    updates: Sequence[combined.HeldUpdate] = (),
    alternatives: Mapping[int, tuple[int, dict[str, Any]]] | None = None,
    insert_run: bool = False,
    stamps: Mapping[int, str] | None = None,
) -> Mapping[str, Any] | None:
    """Apply ``values`` to the run and append ``events`` (type, actor, payload) after it.

    One UPDATE and one (multi-row) INSERT, whatever the number of events; on PostgreSQL one
    statement doing both, unless the whole row is asked for. With ``fence`` the
    UPDATE only matches while the claim still holds the run; None is returned (and nothing of
    the run or its events is written) when it does not. The row returned holds
    ``last_event_seq`` (all columns with ``whole_row``). ``values`` may not hold SQL
    expressions; see :func:`change_run`. The rows of ``inserts`` (table, row) are inserted
    first, whether or not the fence holds (the caller raises when it does not), and so are
    ``updates``: on PostgreSQL by the same statement. What each update returned is the row's
    ``updated`` (a list per update). ``alternatives`` maps the index of an event whose payload
    depends on an update to that update's index and the payload the event has instead when the
    update changed a row. ``stamps`` maps the index of an event to a field its payload gets:
    the database's clock (seconds since the epoch) as the statement writing it runs, after
    every statement sent before it (on SQLite, the clock as the events are inserted).

    With ``insert_run`` the run is not stored yet: ``values`` are its whole row as the events
    leave it (``last_event_seq`` counting every one of them, which are numbered from 1), and
    it is inserted, before the rows of ``inserts`` (which may refer to it), instead of updated.
    """
    plain = values or {}
    alternatives = alternatives or {}
    stamps = stamps or {}
    if events and not whole_row and conn.dialect.name == "postgresql":
        return _append_in_one_statement(
            conn, run_id, events, now=now, values=plain, fence=fence, inserts=inserts,
            updates=updates, alternatives=alternatives, insert_run=insert_run, stamps=stamps,
        )  # fmt: skip
    if stamps:
        at = time.time()
        events = [
            (kind, actor, {**payload, stamps[i]: at} if i in stamps else payload)
            for i, (kind, actor, payload) in enumerate(events)
        ]
    return _append_in_steps(
        conn, run_id, events, now=now, values=plain, fence=fence, whole_row=whole_row,
        inserts=inserts, updates=updates, alternatives=alternatives, insert_run=insert_run,
    )  # fmt: skip


def _append_in_one_statement(
    conn: sa.Connection,
    run_id: str,
    events: Sequence[tuple[str, str, dict[str, Any]]],
    *,
    now: datetime,
    values: dict[str, Any],
    fence: Fence | None,
    inserts: Sequence[tuple[sa.Table, Mapping[str, Any]]],
    updates: Sequence[combined.HeldUpdate],
    alternatives: Mapping[int, tuple[int, dict[str, Any]]],
    insert_run: bool,
    stamps: Mapping[int, str],
) -> Mapping[str, Any] | None:
    """:func:`append_events` on PostgreSQL in one round trip: the UPDATE in a WITH, the events
    inserted from what it returns."""
    together = _run_write_with_events(
        tuple(sorted(values)), fence is not None, insert_run, len(events),
        combined.shape_of(inserts), tuple(stmt for stmt, _params in updates),
        tuple(sorted((i, u) for i, (u, _payload) in alternatives.items())),
        tuple(sorted(stamps.items())),
    )  # fmt: skip
    params = _run_parameters(run_id, values, len(events), now, fence)
    params.update(combined.parameters(inserts))
    params.update(combined.update_parameters(updates))
    for i, (kind, actor, payload) in enumerate(events):
        params.update({f"e_type_{i}": kind, f"e_actor_{i}": actor, f"e_payload_{i}": payload})
    params.update({f"e_payload_if_{i}": payload for i, (_u, payload) in alternatives.items()})
    written = fastsql.execute(conn, together, params)
    if not written:
        return None
    _count_event_write(conn)
    return {
        "last_event_seq": max(int(r["seq"]) for r in written),
        "updated": combined.updated_values(written[0], len(updates)),
    }


def _stamped(payload: sa.ColumnElement[Any], field: str) -> sa.ColumnElement[Any]:
    """``payload`` with ``field`` set to the server's clock, in seconds since the epoch: read
    as the statement runs (``clock_timestamp()``), not when its transaction began."""
    clock = sa.extract("epoch", sa.func.clock_timestamp())
    merged = sa.cast(payload, postgresql.JSONB).op("||", return_type=postgresql.JSONB)(
        sa.func.jsonb_build_object(sa.literal(field, sa.String), clock)
    )
    return sa.cast(merged, schema.events.c.payload.type)


def _append_in_steps(
    conn: sa.Connection,
    run_id: str,
    events: Sequence[tuple[str, str, dict[str, Any]]],
    *,
    now: datetime,
    values: dict[str, Any],
    fence: Fence | None,
    whole_row: bool,
    inserts: Sequence[tuple[sa.Table, Mapping[str, Any]]],
    updates: Sequence[combined.HeldUpdate],
    alternatives: Mapping[int, tuple[int, dict[str, Any]]],
    insert_run: bool,
) -> Mapping[str, Any] | None:
    """:func:`append_events` statement by statement: the rows and updates, the run's UPDATE
    (or its INSERT's sequence), then one multi-row INSERT of the events."""
    combined.insert_each(conn, [(runs, values), *inserts] if insert_run else inserts)
    updated = combined.update_each(conn, updates)
    for i, (u, payload) in alternatives.items():
        if updated[u]:
            kind, actor, _payload = events[i]
            events = [*events[:i], (kind, actor, payload), *events[i + 1 :]]
    row: dict[str, Any] | None
    if insert_run:
        row = {"last_event_seq": values["last_event_seq"]}
    else:
        stmt = _run_update(tuple(sorted(values)), fence is not None, whole_row)
        params = _run_parameters(run_id, values, len(events), now, fence)
        row = fastsql.one_or_none(fastsql.execute(conn, stmt, params))
        if row is None:
            return None
    row["updated"] = updated
    _count_event_write(conn)
    if events:
        first = int(row["last_event_seq"]) - len(events) + 1
        fastsql.execute(
            conn,
            INSERT_EVENTS,
            [
                {"run_id": run_id, "seq": first + i, "type": kind, "actor": actor,
                 "payload": payload, "at": now}
                for i, (kind, actor, payload) in enumerate(events)
            ],
        )  # fmt: skip
    return row


def _count_event_write(conn: sa.Connection) -> None:
    """Count one more statement that wrote ``conn``'s run events (:data:`EVENT_WRITES`)."""
    info = conn.info  # a property reaching through the pool's connection: read once
    info[EVENT_WRITES] = info.get(EVENT_WRITES, 0) + 1


def _run_parameters(
    run_id: str, values: Mapping[str, Any], count: int, now: datetime, fence: Fence | None
) -> dict[str, Any]:
    """The bound values of a statement of :func:`_run_update` or :func:`_run_insert`."""
    params: dict[str, Any] = {f"v_{key}": value for key, value in values.items()}
    params.update(p_id=run_id, p_count=count, p_now=now)
    if fence is not None:
        params.update(p_epoch=fence.epoch, p_owner=fence.owner, p_running="running")
    return params


def change_run(
    conn: sa.Connection,
    run_id: str,
    *,
    event_type: str,
    actor: str,
    payload: dict[str, Any],
    now: datetime,
    values: dict[str, Any] | None = None,
) -> tuple[Run, Event]:
    """Apply ``values`` to the run and append one event describing the change.

    ``values`` may hold SQL expressions (``runs.c.epoch + 1``); such updates are built afresh,
    the others reuse a prepared statement.
    """
    values = values or {}
    row: Mapping[Any, Any] | None
    if any(isinstance(v, sa.ColumnElement) for v in values.values()):
        row = _change_with_expressions(conn, run_id, now, values)
        _count_event_write(conn)
        if row is not None:
            conn.execute(
                INSERT_EVENTS,
                {"run_id": run_id, "seq": row["last_event_seq"], "type": event_type,
                 "actor": actor, "payload": payload, "at": now},
            )  # fmt: skip
    else:
        row = append_events(
            conn, run_id, ((event_type, actor, payload),), now=now, values=values, whole_row=True
        )
    if row is None:
        raise NotFound(f"run {run_id} not found")
    run = Run.from_row(row)
    event = Event(
        run_id=run_id, seq=run.last_event_seq, type=event_type, actor=actor, payload=payload, at=now
    )
    return run, event


def _change_with_expressions(
    conn: sa.Connection, run_id: str, now: datetime, values: dict[str, Any]
) -> sa.RowMapping | None:
    stmt = (
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            last_event_seq=runs.c.last_event_seq + 1,
            revision=runs.c.revision + 1,
            updated_at=now,
            **values,
        )
        .returning(*runs.c)
    )
    return conn.execute(stmt).mappings().one_or_none()


def lease_released() -> dict[str, Any]:
    """Column values that drop a run's lease (invariant 5: only a running run holds one)."""
    return {"lease_owner": None, "lease_expires_at": None}
