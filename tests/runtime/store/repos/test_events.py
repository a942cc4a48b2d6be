from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from openseal.runtime.engine.endings import end_run
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, open_store
from openseal.runtime.store.tables.records import Claim
from tests.runtime.support import Backend, eventually, new_run

APPENDS = 40


def _append_many(store: Store, held: Claim, tag: str, count: int) -> None:
    for i in range(count):
        with store.leases.fenced(held) as tx:
            tx.append_event("test.append", {"tag": tag, "i": i})


def _assert_gap_free(store: Store, run_id: str, expected: int) -> None:
    seqs: list[int] = []
    after = 0
    while page := store.runs.events(run_id, after, limit=37):
        seqs.extend(e.seq for e in page)
        after = page[-1].seq
    assert seqs == list(range(1, expected + 1))
    assert store.runs.get(run_id).last_event_seq == expected


def test_concurrent_appends_from_two_threads_are_gap_free(backend: Backend) -> None:
    store = backend.open()
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    stores = [backend.open(), backend.open()]
    threads = [
        threading.Thread(target=_append_many, args=(stores[i], held, f"t{i}", APPENDS))
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    # run.created + lease.claimed + both threads' appends
    _assert_gap_free(store, run.id, 2 + 2 * APPENDS)
    tags = [e.payload.get("tag") for e in store.runs.events(run.id, limit=1000)]
    assert tags.count("t0") == tags.count("t1") == APPENDS


def _process_appender(home: str, held: Claim, tag: str) -> None:
    store = open_store(home=Path(home))
    try:
        _append_many(store, held, tag, APPENDS)
    finally:
        store.close()


@pytest.mark.slow
def test_concurrent_appends_from_two_sqlite_processes_are_gap_free(tmp_path: Path) -> None:
    store = open_store(home=tmp_path)
    try:
        run = new_run(store)
        held = store.leases.claim("w1")
        assert held is not None
        context = multiprocessing.get_context("spawn")
        processes = [
            context.Process(target=_process_appender, args=(str(tmp_path), held, f"p{i}"))
            for i in range(2)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=120)
            assert process.exitcode == 0
        _assert_gap_free(store, run.id, 2 + 2 * APPENDS)
    finally:
        store.close()


def test_state_change_and_event_commit_together(store: Store) -> None:
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    with store.leases.fenced(held) as tx:
        changed = tx.update_run(current_state="research", event="state.entered")
    event = store.runs.events(run.id)[-1]
    assert (event.type, event.seq, event.payload) == (
        "state.entered",
        changed.last_event_seq,
        {"current_state": "research"},
    )
    assert store.runs.get(run.id).revision == changed.revision


def test_follow_events_yields_new_events_until_the_run_ends(backend: Backend) -> None:
    store = backend.open()
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    seen: list[str] = []

    def follow() -> None:
        follower = backend.open()
        seen.extend(e.type for e in follower.runs.follow_events(run.id, timeout=60))

    thread = threading.Thread(target=follow)
    thread.start()
    eventually(lambda: "lease.claimed" in seen)
    with store.leases.fenced(held) as tx:
        tx.append_event("step", {})
        end_run(store, tx, RunStatus.COMPLETED, event="run.completed")
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert seen == ["run.created", "lease.claimed", "step", "run.completed"]


def test_a_stamped_event_gets_the_databases_clock_as_it_is_written(store: Store) -> None:
    """``append_event(stamp=...)``: the payload's field is the clock when the statement writing
    the event runs (on PostgreSQL the server's, read by that statement), not when the
    transaction began; the other events and the returned event are as given."""
    run = new_run(store)
    held = store.leases.claim("w1")
    assert held is not None
    with store.leases.fenced(held) as tx:
        returned = tx.append_event("test.stamped", {"n": 1}, stamp="at_clock")
        tx.append_event("test.plain", {"n": 2})
        flushed = time.time()  # later than the transaction's start and the append
        tx.flush()
        written = time.time()
    assert returned.payload == {"n": 1}
    stamped, plain = store.runs.events(run.id, 0, 100)[-2:]
    assert (stamped.type, plain.type) == ("test.stamped", "test.plain")
    assert stamped.payload["n"] == 1 and set(stamped.payload) == {"n", "at_clock"}
    assert flushed <= float(stamped.payload["at_clock"]) <= written
    assert plain.payload == {"n": 2}
