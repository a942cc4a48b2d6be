"""The shared buckets (``store.rate_limits``) on both backends: a burst, then one unit an
interval; exact when many stores and threads take from one bucket at once; an endpoint's
``429`` holding a bucket back; corrections that never let more than a burst go."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from openseal.runtime.store import Bucket, Store
from openseal.runtime.store.repos.rate_limits import Taken
from tests.runtime.support import Backend

NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _frozen(store: Store, moment: datetime = NOW) -> Store:
    store.clock = lambda: moment
    return store


def test_a_burst_goes_at_once_then_one_unit_an_interval(store: Store) -> None:
    _frozen(store)
    bucket = Bucket("skill:lookup", interval=2.0, burst=3)
    waits = [store.rate_limits.take(bucket, within=10).wait for _ in range(5)]
    assert waits == [0.0, 0.0, 0.0, 2.0, 4.0]
    refused = store.rate_limits.take(bucket, within=5)
    assert (refused.taken, refused.wait) == (False, 6.0)
    # a refusal takes nothing: the next unit waits as long
    assert store.rate_limits.take(bucket, within=6).wait == 6.0


def test_the_clock_refills_the_bucket_but_never_past_its_burst(store: Store) -> None:
    bucket = Bucket("skill:lookup", interval=1.0, burst=2)
    _frozen(store)
    assert [store.rate_limits.take(bucket, within=0).taken for _ in range(3)] == [
        True,
        True,
        False,
    ]
    _frozen(store, NOW + timedelta(seconds=100))  # long idle: still only a burst of 2
    assert [store.rate_limits.take(bucket, within=0).taken for _ in range(3)] == [
        True,
        True,
        False,
    ]


def test_tokens_are_taken_in_any_amount_and_corrected(store: Store) -> None:
    _frozen(store)
    tokens = Bucket("model:m:tokens", interval=0.01, burst=1000)  # 100 tokens a second
    assert store.rate_limits.take(tokens, 800, within=0).taken
    assert not store.rate_limits.take(tokens, 800, within=5).taken  # would wait 6 s
    store.rate_limits.give_back(tokens, 700)  # the call used 100
    assert store.rate_limits.take(tokens, 800, within=0).taken
    # giving back more than was ever taken leaves a full bucket, not a bigger one
    store.rate_limits.give_back(tokens, 10_000)
    assert store.rate_limits.take(tokens, 1000, within=0).taken
    assert not store.rate_limits.take(tokens, 1, within=0).taken


def test_a_hold_back_stops_every_taker_until_it_passes(backend: Backend) -> None:
    one, other = _frozen(backend.open()), _frozen(backend.open())
    plain = Bucket("model:plain")  # no rate declared: it only holds back
    assert one.rate_limits.take(plain, within=0).taken
    one.rate_limits.hold_back(plain, 30)
    assert other.rate_limits.held_back("model:plain") == 30.0
    refused = other.rate_limits.take(plain, within=10)
    assert (refused.taken, refused.wait) == (False, 30.0)
    _frozen(other, NOW + timedelta(seconds=30))
    assert other.rate_limits.take(plain, within=0).taken
    # a limited bucket held back comes back one unit an interval, not with a burst
    limited = Bucket("model:limited", interval=1.0, burst=5)
    one.rate_limits.hold_back(limited, 10)
    _frozen(other, NOW + timedelta(seconds=10))
    waits = [other.rate_limits.take(limited, within=60).wait for _ in range(3)]
    assert waits == [0.0, 1.0, 2.0]
    # a shorter hold back does not shorten a longer one
    one.rate_limits.hold_back(plain, 100)
    one.rate_limits.hold_back(plain, 5)
    assert one.rate_limits.held_back("model:plain") == 100.0


def test_takers_in_many_stores_and_threads_never_take_more_than_the_limit(
    backend: Backend,
) -> None:
    stores = [_frozen(backend.open()) for _ in range(3)]
    bucket = Bucket("skill:purchase", interval=1.0, burst=4)
    taken: list[float] = []
    lock = threading.Lock()

    def taker(store: Store) -> None:
        for _ in range(6):
            answer = store.rate_limits.take(bucket, within=10)
            if answer.taken:
                with lock:
                    taken.append(answer.wait)

    threads = [threading.Thread(target=taker, args=(s,)) for s in stores for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    # 4 at once, then one a second for 10 seconds: 14 of the 54 tries, each at its own time
    assert sorted(taken) == [0.0] * 4 + [float(n) for n in range(1, 11)]


def test_a_call_takes_its_request_and_tokens_together_or_neither(store: Store) -> None:
    _frozen(store)
    requests = Bucket("model:m", interval=1.0, burst=2)
    tokens = Bucket("model:m:tokens", interval=0.01, burst=1000)
    first = store.rate_limits.take_all([(requests, 1), (tokens, 900)], within=0)
    assert (first.taken, first.wait) == (True, 0.0)
    # the tokens would wait 8 s: neither the request nor the tokens are taken
    refused = store.rate_limits.take_all([(requests, 1), (tokens, 900)], within=5)
    assert (refused.taken, refused.wait) == (False, pytest.approx(8.0))
    assert store.rate_limits.due_in("model:m") == 1.0
    assert store.rate_limits.due_in("model:m:tokens") == pytest.approx(9.0)


def test_a_correction_owed_is_written_with_the_next_take_or_when_settled(
    backend: Backend,
) -> None:
    one, other = backend.open(), backend.open()
    _frozen(one)
    _frozen(other)
    tokens = Bucket("model:m:tokens", interval=0.01, burst=1000)
    requests = Bucket("model:m", interval=1.0, burst=5)
    assert one.rate_limits.take_all([(requests, 1), (tokens, 800)], within=0).taken
    one.rate_limits.give_back_later(tokens, 700)  # the call used 100
    assert other.rate_limits.due_in("model:m:tokens") == pytest.approx(8.0)  # not written yet
    # the next take writes it: 100 + 800 taken, 9 s of 10 s of burst
    assert one.rate_limits.take_all([(requests, 1), (tokens, 800)], within=0).taken
    assert other.rate_limits.due_in("model:m:tokens") == pytest.approx(9.0)
    one.rate_limits.give_back_later(tokens, 750)
    assert one.rate_limits.settle() == 1
    assert one.rate_limits.settle() == 0
    assert other.rate_limits.due_in("model:m:tokens") == pytest.approx(1.5)


def test_a_profile_without_a_rate_is_only_read(store: Store) -> None:
    _frozen(store)
    plain = Bucket("model:plain")
    assert store.rate_limits.take_all([(plain, 1)], within=0) == Taken(True, 0.0, None)
    store.rate_limits.hold_back(plain, 30)
    held = store.rate_limits.take_all([(plain, 1)], within=10)
    assert (held.taken, held.wait) == (False, 30.0)
