"""Idle workers are woken when runnable work is committed, not only when they next poll."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.work_signal import Wake
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import (
    PICK_7,
    engine,
    register,
    scripted,
    small_workflow,
    write_script,
)
from tests.runtime.support import Backend, deploy, eventually, new_run

HANG_GUARD = 120.0  # far below any poll here, far above a wake-up


def _waiter(store: Store, woken: list[bool], ready: threading.Event) -> threading.Thread:
    def wait() -> None:
        ready.set()
        woken.append(store.wait_for_work(600).woken)

    thread = threading.Thread(target=wait)
    thread.start()
    return thread


def test_new_work_wakes_an_idle_worker_of_the_same_store(backend: Backend) -> None:
    store = backend.open()
    deploy(store)
    store.poll_interval = 600  # a wake-up can only come from the commit
    woken: list[bool] = []
    ready = threading.Event()
    thread = _waiter(store, woken, ready)
    ready.wait(timeout=30)
    # The waiter may not be waiting yet when the run commits; keep creating until it wakes.
    for n in range(100):
        new_run(store, n=n)
        thread.join(timeout=0.5)
        if not thread.is_alive():
            break
    assert not thread.is_alive()
    assert woken == [True]


def test_a_rolled_back_transaction_wakes_nobody(store: Store) -> None:
    woken: list[bool] = []
    ready = threading.Event()

    def wait() -> None:
        ready.set()
        woken.append(store.wait_for_local_work(2).woken)

    thread = threading.Thread(target=wait)
    thread.start()
    ready.wait(timeout=30)
    try:
        with store.write() as conn:
            store.notify_work(conn, "r-1")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    thread.join(timeout=30)
    assert woken == [False]


def test_a_run_made_elsewhere_wakes_one_idle_thread_of_another_store_with_its_id(
    backend: Backend,
) -> None:
    """Another store stands for another process: NOTIFY on PostgreSQL, a datagram on SQLite."""
    waiter, writer = backend.open(), backend.open()
    deploy(writer)
    waiter.wait_for_work(0)  # listening: the LISTEN session, or the wake-up socket
    wakes: list[Wake] = []
    threads = [
        threading.Thread(target=lambda: wakes.append(waiter.wait_for_work(600)), daemon=True)
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    eventually(lambda: waiter.work_signal.waiting == 3)
    run = new_run(writer)
    eventually(lambda: len(wakes) == 1, timeout=60)
    assert [(w.woken, w.run_id) for w in wakes] == [(True, run.id)]
    assert waiter.work_signal.waiting == 2  # the others sleep on (their poll is 600 s away)
    waiter.interrupt_waits()
    for thread in threads:
        thread.join(timeout=60)
    assert len(wakes) == 3


def test_a_run_wakes_one_idle_process_of_many_and_is_passed_by_busy_ones(
    backend: Backend,
) -> None:
    """Five other stores stand for five processes listening: three of them busy (no thread
    waiting), two with one idle thread each. Each run made runnable reaches one idle thread in
    all (the store's counters of runs handed to a thread), never a busy process's, however the
    processes are ordered for it: a busy process that hears of it first passes it on."""
    writer = backend.open()
    deploy(writer)
    busy = [backend.open() for _ in range(3)]
    idle = [backend.open() for _ in range(2)]
    for store in busy + idle:
        store.wait_for_work(0)  # listening: the LISTEN session, or the wake-up socket
    woken: list[str | None] = []
    stopping = threading.Event()

    def keep_waiting(store: Store) -> None:
        while not stopping.is_set():
            wake = store.wait_for_work(600)
            if wake.run_id is not None:
                woken.append(wake.run_id)

    threads = [threading.Thread(target=keep_waiting, args=(s,), daemon=True) for s in idle]
    for thread in threads:
        thread.start()
    runs = []
    try:
        for _ in range(8):
            eventually(lambda: all(s.work_signal.waiting == 1 for s in idle))
            runs.append(new_run(writer).id)
            eventually(lambda: len(woken) == len(runs), timeout=60)
        time.sleep(0.5)  # what else a run would have woken has arrived by now
        assert woken == runs
        assert [s.work_signal.handed for s in busy] == [0, 0, 0]
        assert sum(s.work_signal.handed for s in idle) == len(runs)  # one wake-up per run
    finally:
        stopping.set()
        for store in idle:
            store.interrupt_waits()
        for thread in threads:
            thread.join(timeout=60)


def test_workers_polling_once_a_minute_run_everything_that_becomes_runnable(
    backend: Backend, tmp_path: Path
) -> None:
    """Two engines of three threads each (two processes, as far as wake-ups go) race for every
    run; a thread whose named run was taken by the other sleeps on. Nothing but the wake-ups
    can make progress before the 60 s poll, and every run still reaches its wait."""
    creator = backend.open()
    register(creator, small_workflow(tmp_path))
    provider, _calls = scripted(tmp_path, {"ask": PICK_7["ask"] * 8})  # one answer per run
    engines = [engine(backend.open(), provider, worker_id=f"w{i}") for i in range(2)]
    threads = [
        threading.Thread(target=e.run_forever, kwargs={"poll_interval": 60}, daemon=True)
        for e in engines
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    try:
        eventually(lambda: all(e.store.work_signal.waiting == 3 for e in engines), timeout=60)
        runs = [
            service.create_objective(
                creator, service.StartObjective("small", {"n": 5}), service.CLI
            ).run
            for _ in range(8)
        ]
        eventually(
            lambda: all(creator.runs.get(r.id).status == RunStatus.WAITING_FOR_EVENT for r in runs),
            timeout=60,
        )
    finally:
        for e in engines:
            e.stop()
        for thread in threads:
            thread.join(timeout=60)


@pytest.mark.slow
def test_worker_processes_polling_every_ten_minutes_start_new_work_at_once(
    backend: Backend, tmp_path: Path
) -> None:
    """Real processes: two workers of two threads each, whose poll is 600 s away, are woken
    through ``NOTIFY`` (PostgreSQL) or datagrams (SQLite) for each new run, one thread per run."""
    store = backend.open()
    register(store, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", {"ask": PICK_7["ask"] * 6})
    args = ("--poll-interval", "600", "--concurrency", "2")
    workers = [spawn(backend, tmp_path, *args, log=f"w{i}") for i in range(2)]
    try:
        # Both are idle and waiting once the logs say so; a run created before a worker
        # listens is found by its first look anyway.
        eventually(
            lambda: all(b"started" in (tmp_path / f"w{i}.log").read_bytes() for i in range(2)),
            timeout=HANG_GUARD,
        )
        runs = [
            service.create_objective(
                store, service.StartObjective("small", {"n": 5}), service.CLI
            ).run
            for _ in range(6)
        ]
        eventually(
            lambda: all(store.runs.get(r.id).status == RunStatus.WAITING_FOR_EVENT for r in runs),
            timeout=HANG_GUARD,
        )
    finally:
        for worker in workers:
            worker.terminate()
        assert [finish(worker) for worker in workers] == [0, 0]


def test_an_idle_worker_takes_over_a_crashed_holders_run_once_its_lease_expires(
    backend: Backend, tmp_path: Path
) -> None:
    """Nobody announces a lease that expires: an idle worker sleeps until the earliest lease
    held expires, not for its whole poll (600 s here), and takes the run over then."""
    creator = backend.open()
    register(creator, small_workflow(tmp_path))
    run = service.create_objective(
        creator, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    crashed = creator.leases.claim("crashed-worker", lease_seconds=2)  # and never heard of again
    assert crashed is not None and crashed.run_id == run.id
    provider, _calls = scripted(tmp_path, {"ask": PICK_7["ask"]})
    survivor = engine(backend.open(), provider, worker_id="survivor")
    thread = threading.Thread(
        target=survivor.run_forever, kwargs={"poll_interval": 600}, daemon=True
    )
    thread.start()
    try:
        eventually(
            lambda: creator.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT,
            timeout=HANG_GUARD,
        )
    finally:
        survivor.stop()
        thread.join(timeout=60)
    claims = [e.payload for e in creator.runs.events(run.id) if e.type == "lease.claimed"]
    assert [c["worker"] for c in claims] == ["crashed-worker", "survivor"]
    assert claims[1]["previous_owner"] == "crashed-worker"
