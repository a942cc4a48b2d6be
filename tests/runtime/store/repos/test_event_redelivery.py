"""A sender that retries delivers an inbound event twice: with its event id (the delivery key)
the second delivery is acknowledged with the first one's event and stored nowhere, so it can
never satisfy a later wait. Both backends, including deliveries racing on separate
connections."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import IdempotencyConflict
from openseal.runtime.store.repos.inbound_events import Delivery
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Claim
from tests.runtime.support import Backend, new_run


def _wait_for(store: Store, name: str, correlation: dict[str, object]) -> str:
    held: Claim | None = store.leases.claim("w1")
    assert held is not None
    with store.leases.fenced(held) as tx:
        tx.register_event_wait(name, correlation)
    return held.run_id


def _stored(store: Store, name: str) -> int:
    with store.read() as conn:
        count = sa.select(sa.func.count()).where(schema.inbound_events.c.name == name)
        return int(conn.execute(count).scalar_one())


def test_a_redelivered_event_does_not_satisfy_a_later_wait(store: Store) -> None:
    first_run, later_run = new_run(store, n=1), new_run(store, n=2)
    assert _wait_for(store, "shipped", {}) == first_run.id
    delivered = store.inbound_events.receive("shipped", {}, {"po": "PO-1"}, key="evt_1")
    assert not delivered.duplicate and delivered.event.consumed_by_run_id == first_run.id
    store.runs.pause(first_run.id, "user:op", "out of the way: paused runs are not claimed")

    assert _wait_for(store, "shipped", {}) == later_run.id
    again = store.inbound_events.receive("shipped", {}, {"po": "PO-1"}, key="evt_1")
    assert again.duplicate
    assert again.event.id == delivered.event.id
    assert again.event.consumed_by_run_id == first_run.id
    assert store.runs.get(later_run.id).status == RunStatus.WAITING_FOR_EVENT
    assert _stored(store, "shipped") == 1


def test_a_redelivery_before_any_wait_is_kept_once(store: Store) -> None:
    first_run, later_run = new_run(store, n=1), new_run(store, n=2)
    kept = store.inbound_events.deliver("shipped", {"order": 7}, None, key="evt_2")
    assert store.inbound_events.deliver("shipped", {"order": 7}, None, key="evt_2") == kept
    assert _wait_for(store, "shipped", {"order": 7}) == first_run.id
    woken = store.runs.get(first_run.id).waiting or {}
    assert woken["delivered"]["inbound_event_id"] == kept.id
    store.runs.pause(first_run.id, "user:op", "out of the way: paused runs are not claimed")
    assert _wait_for(store, "shipped", {"order": 7}) == later_run.id
    assert store.runs.get(later_run.id).status == RunStatus.WAITING_FOR_EVENT
    assert _stored(store, "shipped") == 1


def test_the_same_key_for_another_event_is_refused(store: Store) -> None:
    store.inbound_events.deliver("shipped", {"order": 7}, {"n": 1}, key="evt_3")
    with pytest.raises(IdempotencyConflict):
        store.inbound_events.deliver("shipped", {"order": 7}, {"n": 2}, key="evt_3")
    with pytest.raises(IdempotencyConflict):
        store.inbound_events.deliver("shipped", {"order": 8}, {"n": 1}, key="evt_3")
    # keys are the sender's ids for one event name: another name is another event
    assert not store.inbound_events.receive("delivered", {}, None, key="evt_3").duplicate
    assert _stored(store, "shipped") == 1


def test_events_without_a_key_are_each_delivered(store: Store) -> None:
    store.inbound_events.deliver("ping", {}, None)
    store.inbound_events.deliver("ping", {}, None)
    assert _stored(store, "ping") == 2


def test_concurrent_redeliveries_store_the_event_once(backend: Backend) -> None:
    stores = [backend.open() for _ in range(6)]
    run = new_run(stores[0])
    assert _wait_for(stores[0], "shipped", {"order": 9}) == run.id
    start = threading.Barrier(len(stores))
    results: list[Delivery | BaseException] = []

    def deliver(store: Store) -> None:
        start.wait(timeout=30)
        try:
            results.append(store.inbound_events.receive("shipped", {"order": 9}, None, key="evt_4"))
        except BaseException as exc:  # reported below, with the others
            results.append(exc)

    threads = [threading.Thread(target=deliver, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a delivery hung"
    assert all(isinstance(r, Delivery) for r in results), results
    deliveries = [r for r in results if isinstance(r, Delivery)]
    assert sorted(d.duplicate for d in deliveries) == [False] + [True] * (len(stores) - 1)
    assert {d.event.id for d in deliveries} == {deliveries[0].event.id}
    assert {d.event.consumed_by_run_id for d in deliveries} == {run.id}
    assert _stored(stores[0], "shipped") == 1
    delivered = [e for e in stores[0].runs.events(run.id) if e.type == "wait.event_delivered"]
    assert len(delivered) == 1
