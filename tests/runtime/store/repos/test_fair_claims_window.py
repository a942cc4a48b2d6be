"""How a process decides to look past a busy scope (``leases.FairClaims``): only once one or two
scopes took half of its latest claims, and, after a look found no other scope's run, not again
for ``FAIR_IDLE_SECONDS`` — so a store with one busy scope pays a statement a second, not one a
claim; two scopes with backlogs take turns, whichever backlog is older (both backends). The
flood itself is measured with worker processes in ``tests/runtime/flow``."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from openseal.runtime.store import Run, Store
from openseal.runtime.store.repos.leases import FAIR_IDLE_SECONDS, FAIR_SHARE, FairClaims
from tests.runtime.support import WORKFLOW, Backend, deploy


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
    assert fair.looks() == []
    for _ in range(FAIR_SHARE):
        claim(fair, "a")
    assert fair.looks() == [("a",)]


def test_a_look_that_found_no_other_scope_is_not_made_again_for_a_second(clock: Clock) -> None:
    fair = FairClaims()
    for _ in range(FAIR_SHARE):
        claim(fair, "flood")
    assert fair.looks() == [("flood",)]
    fair.none_other(("flood",))
    claim(fair, "flood")
    assert fair.looks() == []  # one busy scope: claims go on in the plain order
    clock.now += FAIR_IDLE_SECONDS / 2
    assert fair.looks() == []
    clock.now += FAIR_IDLE_SECONDS / 2
    assert fair.looks() == [("flood",)]  # a second later, one more look


def test_two_busy_scopes_are_both_looked_past_then_the_one_claimed_last(clock: Clock) -> None:
    fair = FairClaims()
    for scope in ["x", "y"] * FAIR_SHARE:
        claim(fair, scope)
    assert fair.looks() == [("x", "y"), ("y",)]  # a third scope first, else x's turn
    fair.none_other(("x", "y"))  # no third scope: only the turn-taking look, for a second
    assert fair.looks() == [("y",)]
    claim(fair, "x")
    assert fair.looks() == [("x",)]


def test_a_second_scope_with_a_backlog_takes_turns_with_an_older_flood(backend: Backend) -> None:
    store = backend.open()
    flood = [new_run_in(store, "flood") for _ in range(40)]
    calm = {new_run_in(store, "calm").id for _ in range(10)}  # created after the whole flood
    order = []
    for _ in range(30):
        claimed = store.leases.claim("test-worker")
        assert claimed is not None
        order.append(claimed.run_id)
    # in arrival order all 40 of the flood would come first; fairly, the calm runs are all
    # claimed among the first claims, about every other one
    assert calm <= set(order[:22]), [r in calm for r in order]
    assert len(flood) == 40


def new_run_in(store: Store, scope: str) -> Run:
    if store.definitions.active_version(WORKFLOW) is None:
        deploy(store)
    created = store.objectives.create("acme", WORKFLOW, {"n": 1}, actor="user:test", scope=scope)
    assert created.run is not None
    return created.run
