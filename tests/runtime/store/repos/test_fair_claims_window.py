"""How a process decides to look past a busy scope (``leases.FairClaims``): only once one or two
scopes took half of its latest claims, and, after a look found no other scope's run, not again
for ``FAIR_IDLE_SECONDS`` — so a store with one busy scope pays a statement a second, not one a
claim. The flood itself is measured with worker processes in ``tests/runtime/flow``."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from openseal.runtime.store.repos.leases import FAIR_IDLE_SECONDS, FAIR_SHARE, FairClaims


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(time, "monotonic", ticking)
    return ticking


def claim(fair: FairClaims, scope: str) -> None:
    run: Any = SimpleNamespace(scope=scope)
    fair.claimed(run)


def test_no_look_past_anyone_before_a_scope_took_half_of_the_latest_claims(clock: Clock) -> None:
    fair = FairClaims()
    for scope in ["a", "b", "c", "a", "b", "c", "d", "e"]:
        claim(fair, scope)
    assert fair.busy() is None
    for _ in range(FAIR_SHARE):
        claim(fair, "a")
    assert fair.busy() == ("a",)


def test_a_look_that_found_no_other_scope_is_not_made_again_for_a_second(clock: Clock) -> None:
    fair = FairClaims()
    for _ in range(FAIR_SHARE):
        claim(fair, "flood")
    assert fair.busy() == ("flood",)
    fair.none_other()
    claim(fair, "flood")
    assert fair.busy() is None  # one busy scope: claims go on in the plain order
    clock.now += FAIR_IDLE_SECONDS / 2
    assert fair.busy() is None
    clock.now += FAIR_IDLE_SECONDS / 2
    assert fair.busy() == ("flood",)  # a second later, one more look


def test_two_busy_scopes_are_both_looked_past(clock: Clock) -> None:
    fair = FairClaims()
    for scope in ["x", "y"] * FAIR_SHARE:
        claim(fair, scope)
    assert fair.busy() == ("x", "y")
