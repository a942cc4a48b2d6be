"""The inbound events repository: events delivered from outside and the runs waiting for them.

A run waits for an event by name plus a correlation dict; an inbound event matches when every
key/value of the wait's correlation equals the event's. An event may arrive before the run
registers its wait: it is kept unconsumed and matched at registration. Either way the match
is recorded in ``runs.waiting["delivered"]`` and the run is made runnable by setting
``wake_at`` to now, so a worker claims it and the engine reads what arrived.

A sender that retries (its acknowledgement was lost) delivers the same event again. With a
delivery key (the sender's event id, or the API's ``Idempotency-Key``) the second delivery is
acknowledged with the first one's event and changes nothing: it is not stored again, so it
cannot satisfy a later wait. Keys are unique per event name (a unique index), so two
deliveries racing with one key store it once.

What the event fires (the event triggers of its name) is written by the caller's ``fire`` in
the transaction that stores it: a stored event has its firings, and an event whose delivery
did not commit has none, so the sender's retry stores it and fires them then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.contract import EventDelivery, EventWait
from openseal.errors import StoreError
from openseal.runtime.clock import iso, new_id
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES
from openseal.runtime.store.db.errors import IdempotencyConflict
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.repos.run_rows import load_run
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import InboundEvent, Run, TriggerFiring

inbound = schema.inbound_events
runs = schema.runs


def correlation_matches(wanted: dict[str, Any], offered: dict[str, Any]) -> bool:
    """True when every key/value the wait asks for is present and equal in the event."""
    return all(key in offered and offered[key] == value for key, value in wanted.items())


def delivered_wait(waiting: EventWait, event: InboundEvent, now: datetime) -> EventWait:
    """The run's ``waiting`` document once ``event`` satisfied it."""
    delivery: EventDelivery = {
        "inbound_event_id": event.id,
        "payload": event.payload,
        "received_at": iso(event.received_at),
        "delivered_at": iso(now),
    }
    return {**waiting, "delivered": delivery}


def _event_wait(run: Run) -> EventWait:
    waiting = run.waiting
    assert waiting is not None and waiting["kind"] == "event", f"run {run.id} waits for no event"
    return waiting


def consume(conn: sa.Connection, event: InboundEvent, run: Run, now: datetime, actor: str) -> Run:
    """Mark ``event`` consumed by ``run`` and make the run runnable, with its event row."""
    conn.execute(
        sa.update(inbound)
        .where(inbound.c.id == event.id)
        .values(consumed_by_run_id=run.id, consumed_at=now)
    )
    updated, _ = change_run(
        conn,
        run.id,
        event_type="wait.event_delivered",
        actor=actor,
        payload={"inbound_event_id": event.id, "name": event.name},
        now=now,
        values={
            "waiting": delivered_wait(_event_wait(run), event, now),
            "wait_name": None,
            "wake_at": now,
        },
    )
    return updated


def first_unconsumed_match(
    conn: sa.Connection, name: str, correlation: dict[str, Any], scope: str
) -> InboundEvent | None:
    """The oldest kept event ``name`` matching ``correlation`` that may wake a run in
    ``scope``."""
    stmt = (
        sa.select(inbound)
        .where(inbound.c.name == name, inbound.c.consumed_at.is_(None))
        .order_by(inbound.c.received_at, inbound.c.id)
    )
    for row in conn.execute(stmt).mappings():
        event = InboundEvent.from_row(row)
        if event.reaches(scope) and correlation_matches(correlation, event.correlation):
            return event
    return None


class _Retry(Exception):
    """Raised inside a delivery transaction to roll it back and start over."""


_DELIVERY_ATTEMPTS = 5

#: writes, in the delivery's transaction, what a newly stored event fires
Fire = Callable[[sa.Connection, InboundEvent], list[TriggerFiring]]
#: a crash test's points: the event and its firings written, the commit not issued; and
#: committed, not yet answered (the hook gets the point and the event's id)
RECEIVE_POINTS = ("event.received", "event.received.committed")
ReceiveHook = Callable[[str, str], None]


@dataclass(frozen=True)
class Delivery:
    """What :meth:`InboundEvents.receive` did with an event."""

    #: the stored event: this delivery's, or the first one's when this was a duplicate
    event: InboundEvent
    #: True when the delivery key had been delivered before: nothing was stored or consumed
    duplicate: bool
    #: what the event fired, in the transaction that stored it (nothing for a duplicate)
    fired: tuple[TriggerFiring, ...] = ()


class InboundEvents(Repository):
    """``store.inbound_events``: delivering events to waiting runs, once per delivery key."""

    def deliver(
        self,
        name: str,
        correlation: dict[str, Any],
        payload: Any,
        *,
        key: str | None = None,
        actor: str = "system",
        scopes: list[str] | None = None,
    ) -> InboundEvent:
        """Store an inbound event and hand it to the oldest run waiting for it, if any.

        The returned event's ``consumed_by_run_id`` says which run got it; ``None`` means it
        is kept until a run registers a matching wait. ``key`` is the sender's id for the
        delivery: see :meth:`receive`.
        """
        return self.receive(name, correlation, payload, key=key, actor=actor, scopes=scopes).event

    def receive(
        self,
        name: str,
        correlation: dict[str, Any],
        payload: Any,
        *,
        key: str | None = None,
        actor: str = "system",
        scopes: list[str] | None = None,
        fire: Fire | None = None,
        hook: ReceiveHook | None = None,
    ) -> Delivery:
        """:meth:`deliver`, saying whether it was a redelivery. ``scopes``: the scopes whose
        runs the event may wake (None: every scope). ``fire`` writes what the stored event
        fires in the same transaction (``Delivery.fired``); ``hook`` is a crash test's
        (:data:`RECEIVE_POINTS`).

        With ``key``, an event ``name`` already delivered under that key is not stored again:
        the first delivery's event is returned as it stands (``duplicate=True``), and fires
        nothing again. The same key with another correlation or payload is refused
        (``idempotency_conflict``).
        """
        now = self._store.now()
        event = InboundEvent(
            new_id(), name, correlation, payload, now, None, None, key,
            None if scopes is None else sorted(set(scopes)),
        )  # fmt: skip
        for _ in range(_DELIVERY_ATTEMPTS):
            try:
                with self._store.write() as conn:
                    delivery = self._deliver(conn, event, actor)
                    if fire is not None and not delivery.duplicate:
                        delivery = replace(delivery, fired=tuple(fire(conn, delivery.event)))
                    if hook is not None and not delivery.duplicate:
                        hook(RECEIVE_POINTS[0], event.id)
                if hook is not None and not delivery.duplicate:
                    hook(RECEIVE_POINTS[1], event.id)
                return delivery
            except _Retry:
                continue
            except sa.exc.IntegrityError:
                # A concurrent delivery stored this key first (the name lock makes that rare).
                if key is None:
                    raise
                with self._store.read() as conn:
                    first = _by_key(conn, name, key)
                if first is None:
                    raise
                return Delivery(_same_event(first, event), True)
        raise StoreError(f"could not deliver event {name!r}: waiters kept changing", code="busy")

    def _deliver(self, conn: sa.Connection, event: InboundEvent, actor: str) -> Delivery:
        # Lock order, the same as a fenced transaction registering a wait: the run row first,
        # then the event-name lock. The name lock closes the race with a registration that
        # is not committed yet; the re-check under it sees every committed waiter.
        candidate = self._find_waiter(conn, event)
        if candidate is not None:
            load_run(self._store, conn, candidate.id, lock=True)
        self._store.lock_event_name(conn, event.name)
        if event.delivery_key is not None:
            # Under the name lock every earlier delivery of this name has committed.
            first = _by_key(conn, event.name, event.delivery_key)
            if first is not None:
                return Delivery(_same_event(first, event), True)
        conn.execute(
            sa.insert(inbound).values(
                id=event.id,
                name=event.name,
                correlation=event.correlation,
                payload=event.payload,
                received_at=event.received_at,
                delivery_key=event.delivery_key,
                scopes=event.scopes,
            )
        )
        waiter = self._find_waiter(conn, event)
        if waiter is None:
            return Delivery(event, False)
        if candidate is None or waiter.id != candidate.id:
            raise _Retry  # another waiter appeared; start over, locking that one first
        now = event.received_at
        consume(conn, event, waiter, now, actor)
        self._store.notify_work(conn, waiter.id)
        consumed = replace(event, consumed_by_run_id=waiter.id, consumed_at=now)
        return Delivery(consumed, False)

    def _find_waiter(self, conn: sa.Connection, event: InboundEvent) -> Run | None:
        stmt = sa.select(runs).where(runs.c.wait_name == event.name).order_by(runs.c.id)
        if event.scopes is not None:
            stmt = stmt.where(runs.c.scope.in_(event.scopes))
        for row in conn.execute(stmt).mappings():
            run = Run.from_row(row)
            waiting = run.waiting
            wanted = waiting["correlation"] if waiting and waiting["kind"] == "event" else {}
            if (
                run.status not in TERMINAL_RUN_STATUSES
                and event.reaches(run.scope)
                and correlation_matches(wanted, event.correlation)
            ):
                return run
        return None

    def get(self, event_id: str) -> InboundEvent | None:
        with self._store.read() as conn:
            row = conn.execute(sa.select(inbound).where(inbound.c.id == event_id))
            found = row.mappings().one_or_none()
        return None if found is None else InboundEvent.from_row(found)


def _by_key(conn: sa.Connection, name: str, key: str) -> InboundEvent | None:
    row = conn.execute(
        sa.select(inbound).where(inbound.c.name == name, inbound.c.delivery_key == key)
    )
    found = row.mappings().one_or_none()
    return None if found is None else InboundEvent.from_row(found)


def _same_event(first: InboundEvent, again: InboundEvent) -> InboundEvent:
    """``first`` when ``again`` is the same event redelivered; a conflict otherwise."""
    if (first.correlation, first.payload, first.scopes) != (
        again.correlation, again.payload, again.scopes,
    ):  # fmt: skip
        raise IdempotencyConflict(
            f"event {first.name!r} with delivery key {first.delivery_key!r} was already "
            "delivered with a different correlation, payload or sender's scopes"
        )
    return first
