"""One wake-up per runnable run: how the idle threads of one process share the offered runs."""

from __future__ import annotations

import threading
from collections.abc import Callable

from openseal.runtime.store.db.work_signal import TRIGGERS, Wake, WorkSignal
from tests.runtime.support import eventually

HANG_GUARD = 60.0  # a wait that should end at once; never reached unless something is broken


def _waiters(signal: WorkSignal, count: int) -> tuple[list[Wake], list[threading.Thread]]:
    wakes: list[Wake] = []
    threads = [
        threading.Thread(target=lambda: wakes.append(signal.wait(HANG_GUARD)), daemon=True)
        for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    eventually(lambda: signal.waiting == count)
    return wakes, threads


def _ended(threads: list[threading.Thread], count: int) -> Callable[[], bool]:
    return lambda: sum(not t.is_alive() for t in threads) == count


def test_one_run_wakes_one_idle_thread_with_its_id_and_the_others_sleep_on() -> None:
    signal = WorkSignal()
    wakes, threads = _waiters(signal, 3)
    assert signal.offer(["r1"]) == 1
    eventually(_ended(threads, 1))
    assert [(w.woken, w.run_id) for w in wakes] == [(True, "r1")]
    assert signal.waiting == 2  # no timeout, no broadcast: nothing else can end their wait
    assert signal.offer(["r2", "r3", "r4"]) == 2  # as many as are idle
    eventually(_ended(threads, 3))
    assert sorted(w.run_id or "" for w in wakes) == ["r1", "r2", "r3"]


def test_a_run_offered_twice_before_it_is_taken_wakes_one_thread() -> None:
    signal = WorkSignal()
    _wakes, threads = _waiters(signal, 2)
    with signal._cond:  # both offers land before any woken thread runs
        assert signal.offer(["r1"]) == 1
        assert signal.offer(["r1"]) == 0
    eventually(_ended(threads, 1))
    assert signal.waiting == 1
    signal.broadcast()
    eventually(_ended(threads, 2))


def test_an_offer_while_no_thread_waits_ends_the_next_wait_of_a_thread_that_was_looking() -> None:
    signal = WorkSignal()
    mark = signal.mark()  # a thread starts looking for work...
    assert signal.offer(["r1"]) == 0  # ...nobody is idle: the run is not handed to anyone
    wake = signal.wait(HANG_GUARD, since=mark)  # its look may have missed r1: it looks again
    assert (wake.woken, wake.run_id) == (True, None)
    assert signal.wait(0, since=wake.mark).woken is False  # and only once


def test_a_thread_whose_named_run_is_gone_looks_again_for_runs_offered_meanwhile() -> None:
    signal = WorkSignal()
    _wakes, threads = _waiters(signal, 1)
    with signal._cond:
        signal.offer(["r1"])  # handed to the one idle thread
        signal.offer(["r2"])  # no idle thread left: only the generation moves
    eventually(_ended(threads, 1))
    (wake,) = _wakes
    assert wake.run_id == "r1"
    # r1 turns out to be claimed elsewhere; the thread waits from the mark it was given, and
    # r2, offered after r1, ends that wait at once so that the thread looks for it.
    again = signal.wait(HANG_GUARD, since=wake.mark)
    assert (again.woken, again.run_id) == (True, None)


def test_a_broadcast_wakes_every_thread() -> None:
    signal = WorkSignal()
    wakes, threads = _waiters(signal, 3)
    signal.broadcast()
    eventually(_ended(threads, 3))
    assert [(w.woken, w.run_id) for w in wakes] == [(True, None)] * 3


def test_a_wait_without_offers_times_out() -> None:
    wake = WorkSignal().wait(0)
    assert (wake.woken, wake.run_id) == (False, None)


def test_asking_the_trigger_schedulers_to_look_moves_their_mark_and_wakes_one_thread() -> None:
    signal = WorkSignal()
    wakes, threads = _waiters(signal, 1)
    assert signal.offer([TRIGGERS]) == 1
    eventually(_ended(threads, 1))
    # the woken thread looks for any work (and polls its scheduler): no run is named
    assert [(w.woken, w.run_id) for w in wakes] == [(True, None)]
    assert signal.triggers_mark == 1
    # with no thread idle the mark still moves: a busy thread's next poll reads the store
    assert signal.offer([TRIGGERS]) == 0 and signal.triggers_mark == 2
