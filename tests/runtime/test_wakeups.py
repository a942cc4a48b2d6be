"""Idle workers are woken when runnable work is committed, not only when they next poll."""

from __future__ import annotations

import threading

from openseal.runtime.store import Store
from tests.runtime.support import Backend, deploy, new_run


def _waiter(store: Store, woken: list[bool], ready: threading.Event) -> threading.Thread:
    def wait() -> None:
        ready.set()
        woken.append(store.wait_for_work(600))

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
        woken.append(store.wait_for_local_work(2))

    thread = threading.Thread(target=wait)
    thread.start()
    ready.wait(timeout=30)
    try:
        with store.write() as conn:
            store.notify_work(conn)
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    thread.join(timeout=30)
    assert woken == [False]
