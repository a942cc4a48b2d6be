from __future__ import annotations

from datetime import timedelta

from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Claim
from tests.runtime.support import Backend, new_run


def _claim(store: Store, worker: str = "w1") -> Claim:
    held = store.leases.claim(worker)
    assert held is not None
    return held


def test_event_after_the_wait_wakes_the_run(store: Store) -> None:
    run = new_run(store)
    with store.leases.fenced(_claim(store)) as tx:
        assert tx.register_event_wait("shipment", {"order": "po-1"}) is None
    waiting = store.runs.get(run.id)
    assert (waiting.status, waiting.lease_owner) == (RunStatus.WAITING_FOR_EVENT, None)
    assert store.leases.claim("w2") is None

    other = store.inbound_events.deliver("shipment", {"order": "po-2"}, {"n": 0})
    assert other.consumed_by_run_id is None
    delivered = store.inbound_events.deliver("shipment", {"order": "po-1", "extra": 1}, {"n": 1})
    assert delivered.consumed_by_run_id == run.id

    woken = _claim(store, "w2")
    assert woken.run_id == run.id
    assert woken.claimed_from == RunStatus.WAITING_FOR_EVENT
    assert woken.run.waiting is not None
    assert woken.run.waiting["delivered"]["payload"] == {"n": 1}
    assert woken.run.waiting["delivered"]["inbound_event_id"] == delivered.id
    assert "wait.event_delivered" in [e.type for e in store.runs.events(run.id)]


def test_event_before_the_wait_is_kept_and_matched_at_registration(store: Store) -> None:
    run = new_run(store)
    early = store.inbound_events.deliver("approval.signal", {"run": run.id}, {"ok": True})
    assert early.consumed_by_run_id is None
    held = _claim(store)
    with store.leases.fenced(held) as tx:
        matched = tx.register_event_wait("approval.signal", {"run": run.id})
    assert matched is not None and matched.id == early.id
    stored = store.inbound_events.get(early.id)
    assert stored is not None and stored.consumed_by_run_id == run.id
    woken = _claim(store, "w2")
    assert woken.run_id == run.id
    assert woken.run.waiting is not None
    assert woken.run.waiting["delivered"]["payload"] == {"ok": True}


def test_an_event_is_consumed_by_one_run_only(store: Store) -> None:
    first, second = new_run(store, n=1), new_run(store, n=2)
    for _ in range(2):
        with store.leases.fenced(_claim(store)) as tx:
            tx.register_event_wait("go", {})
    delivered = store.inbound_events.deliver("go", {"any": 1}, None)
    assert delivered.consumed_by_run_id == first.id
    assert store.runs.get(second.id).waiting == {
        "kind": "event",
        "name": "go",
        "correlation": {},
        "timeout_at": None,
    }
    assert store.inbound_events.deliver("go", {}, None).consumed_by_run_id == second.id


def test_wait_timeout_makes_the_run_runnable_without_delivery(store: Store) -> None:
    run = new_run(store)
    held = _claim(store)
    deadline = held.lease_expires_at + timedelta(minutes=5)
    with store.leases.fenced(held) as tx:
        tx.register_event_wait("never", {"k": 1}, timeout_at=deadline)
    assert store.leases.claim("w2", now=deadline - timedelta(seconds=1)) is None
    woken = store.leases.claim("w2", now=deadline)
    assert woken is not None and woken.run_id == run.id
    assert woken.run.waiting is not None and "delivered" not in woken.run.waiting


def test_a_paused_waiting_run_still_receives_its_event(store: Store) -> None:
    run = new_run(store)
    with store.leases.fenced(_claim(store)) as tx:
        tx.register_event_wait("sig", {"k": 1})
    store.runs.pause(run.id, "user:op", "hold")
    assert store.inbound_events.deliver("sig", {"k": 1}, "p").consumed_by_run_id == run.id
    assert store.leases.claim("w2") is None  # paused runs are never claimed
    store.runs.resume(run.id, "user:op")
    woken = store.leases.claim("w2")
    assert woken is not None and woken.run_id == run.id


def test_wait_for_work_wakes_on_new_work(backend: Backend) -> None:
    worker = backend.open()
    # Start listening before the work appears: LISTEN on PostgreSQL, the wake-up socket on
    # SQLite (another store object stands for another process).
    worker.wait_for_work(0)
    # As a worker does: take the mark before looking, so a wake-up delivered between the
    # look and the wait still counts (both deliver on a thread of their own).
    mark = worker.work_mark()
    new_run(backend.open())
    assert worker.wait_for_work(30, since=mark).woken is True
    assert worker.leases.claim("w1") is not None
