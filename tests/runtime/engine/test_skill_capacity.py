"""A skill's concurrency cap (invariant 20): an action takes a slot of ``skill:<name>`` in the
transaction that marks it dispatched and gives it back in the one that settles it; a call over
the cap leaves its action admitted and its run in ``waiting_for_capacity``, holding no worker,
woken in priority order when a slot frees; a dead worker's call holds its slot through the
takeover and while its outcome is unknown, until it is reconciled or resolved. Both backends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.engine.capacity import wake_free
from openseal.runtime.engine.engine import Engine
from openseal.runtime.requests import Resolution
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Claim, Event, Run, Store
from openseal.runtime.store.tables import schema
from tests.runtime import capacity_skills
from tests.runtime.engine.test_capacity_processes import most_in_flight
from tests.runtime.engine_support import DEFS, compile_files, engine, event_types, register
from tests.runtime.engine_support import scripted as scripted_provider
from tests.runtime.providers.test_lost_replies import Clock
from tests.runtime.support import eventually

#: events that settle an action (and so give its call's slot back)
SETTLED = {"action.succeeded", "action.failed"}


@pytest.fixture
def capped(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    register(store, compile_files(DEFS / "skill_capacity.hcl"))
    monkeypatch.setenv(capacity_skills.LOG_ENV, str(tmp_path / "destination.jsonl"))
    return store


def start(store: Store, workflow: str, n: int, priority: int | None = None) -> Run:
    request = service.StartObjective(workflow, {"n": n}, priority=priority)
    created = service.create_objective(store, request, service.CLI)
    assert created.run is not None
    return created.run


class Crash(BaseException):
    """The worker dies right after its action was marked dispatched (before the call)."""


def crash_after_dispatch(point: str, claim: Claim) -> None:
    if point == "action.dispatched":
        raise Crash(claim.run_id)


def dies(store: Store, run: Run) -> None:
    """A worker claims ``run``, marks its action dispatched, and dies holding the slot."""
    with pytest.raises(Crash):
        Engine(store, worker_id="dead", hook=crash_after_dispatch).step(run.id)


def action_of(store: Store, run: Run) -> tuple[ActionStatus, int]:
    table = schema.actions
    with store.read() as conn:
        status, attempts = conn.execute(
            sa.select(table.c.status, table.c.attempts).where(table.c.run_id == run.id)
        ).one()
    return ActionStatus(status), int(attempts)


def in_flight(store: Store, skill: str) -> list[str]:
    """The runs whose calls hold a slot of ``skill`` now."""
    with store.read() as conn:
        return [run for _, run in store.capacity.calls_in_flight(conn, f"skill:{skill}")]


def status(store: Store, run: Run) -> RunStatus:
    return store.runs.get(run.id).status


def call_intervals(events: list[Event]) -> list[tuple[float, float, int]]:
    """``(taken, given back, seq)`` of each call a run's actions held a slot for, from its
    events: taken when the dispatching transaction counted the slot (``taken_at``, after the
    cap's lock), given back by the event that settled the action (its transaction's time,
    before it commits). A same-key retry's take belongs to the slot its action holds."""
    found = []
    for index, event in enumerate(events):
        action = event.payload.get("action_id") if event.type == "capacity.slot_taken" else None
        if action is None:
            continue
        earlier = [
            e for e in events[:index]
            if e.type == "capacity.slot_taken" and e.payload.get("action_id") == action
        ]  # fmt: skip
        if earlier:
            continue
        end = next(
            (e for e in events[index + 1 :]
             if e.type in SETTLED and e.payload.get("action_id") == action),
            None,
        )  # fmt: skip
        assert end is not None, f"run {event.run_id}: a call's slot never given back"
        taken = float(event.payload["taken_at"])
        found.append((taken, max(taken, end.at.timestamp()), event.seq))
    return found


def test_a_call_over_the_cap_waits_admitted_and_is_woken_by_priority(
    capped: Store, tmp_path: Path
) -> None:
    clock = Clock()
    capped.clock = clock
    first, second = start(capped, "orders", 1), start(capped, "orders", 2)
    dies(capped, first)
    dies(capped, second)
    assert sorted(in_flight(capped, "submit")) == sorted([first.id, second.id])
    assert action_of(capped, first) == (ActionStatus.DISPATCHED, 1)

    low, high = start(capped, "orders", 3, priority=-1), start(capped, "orders", 4, priority=3)
    alive = Engine(capped, worker_id="alive")
    for run in (high, low):
        alive.step(run.id)
        waiting = capped.runs.get(run.id)
        assert waiting.status == RunStatus.WAITING_FOR_CAPACITY
        assert waiting.lease_owner is None
        assert waiting.waiting == {
            "kind": "capacity",
            "waits_for": {"kind": "concurrency", "limit": "skill:submit", "max": 2,
                          "in_use": 2},
        }  # fmt: skip
        assert event_types(capped, run)[-1] == "capacity.waiting"
        assert action_of(capped, run) == (ActionStatus.ADMITTED, 0)  # not sent
    assert wake_free(capped, ["skill:submit"]) == 0

    # the dead worker's lease expires and is taken over: its call may still be in flight, so
    # its action is unknown and keeps its slot while it waits to be retried with its key
    clock.advance(alive.lease_seconds + 1)
    alive.step(first.id)
    assert action_of(capped, first) == (ActionStatus.UNKNOWN, 1)
    assert status(capped, first) == RunStatus.SLEEPING
    assert first.id in in_flight(capped, "submit")
    assert wake_free(capped, ["skill:submit"]) == 0
    assert status(capped, high) == RunStatus.WAITING_FOR_CAPACITY

    # once the attempt can no longer be in flight, it is sent again under the same slot and
    # settles: its slot frees, and the waiter of the higher priority is woken
    clock.advance(60)
    alive.step(first.id)
    assert status(capped, first) == RunStatus.COMPLETED
    assert action_of(capped, first) == (ActionStatus.SUCCEEDED, 2)
    assert status(capped, high) == RunStatus.QUEUED
    assert "capacity.woken" in event_types(capped, high)
    assert status(capped, low) == RunStatus.WAITING_FOR_CAPACITY

    alive.step(second.id)  # the takeover: unknown, asleep
    alive.step(second.id)  # sent again and settled: the lower priority is woken
    assert status(capped, second) == RunStatus.COMPLETED
    assert status(capped, low) == RunStatus.QUEUED
    alive.run_until_idle()
    runs = (first, second, low, high)
    assert [status(capped, r) for r in runs] == [RunStatus.COMPLETED] * 4
    assert [action_of(capped, r)[0] for r in runs] == [ActionStatus.SUCCEEDED] * 4
    assert in_flight(capped, "submit") == []
    with capped.read() as conn:
        assert capped.capacity.waiting_keys(conn) == []
    assert capacity_skills.most_at_once(tmp_path / "destination.jsonl") == 1


def test_an_unsettled_call_holds_its_slot_until_an_operator_resolves_it(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lose = tmp_path / "lose"
    lose.write_text("order-1\n", encoding="utf-8")
    monkeypatch.setenv(capacity_skills.LOSE_ENV, str(lose))
    w = Engine(capped, worker_id="w1")
    lost, after = start(capped, "fragile_orders", 1), start(capped, "fragile_orders", 2)
    w.step(lost.id)
    # its reply was lost and the skill can neither look it up nor retry it: an operator must
    # say what happened, and until then the call may have happened, or still be under way
    assert action_of(capped, lost) == (ActionStatus.NEEDS_ATTENTION, 1)
    assert in_flight(capped, "fragile") == [lost.id]
    w.step(after.id)
    assert capped.runs.get(after.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "concurrency", "limit": "skill:fragile", "max": 1, "in_use": 1},
    }
    assert w.capacity.poll() == 0

    with capped.read() as conn:
        action = capped.actions.of_run(conn, lost.id)[0]
    service.resolve_action(
        capped,
        Resolution(action.id, "failed", "the destination has no such order"),
        service.CLI,
    )
    assert in_flight(capped, "fragile") == []
    # a worker's periodic look finds the freed slot
    assert Engine(capped, worker_id="w2").capacity.poll() == 1
    assert status(capped, after) == RunStatus.QUEUED
    w.run_until_idle()
    assert status(capped, after) == RunStatus.COMPLETED
    assert action_of(capped, after) == (ActionStatus.SUCCEEDED, 1)


@pytest.fixture
def workers(capped: Store) -> Iterator[list[Engine]]:
    engines = [Engine(capped, worker_id=f"w{i}") for i in range(4)]
    threads = [
        threading.Thread(target=e.run_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        for e in engines
    ]
    for thread in threads:
        thread.start()
    try:
        yield engines
    finally:
        for engine in engines:
            engine.stop()
        for thread in threads:
            thread.join(timeout=60)


def test_a_cap_of_2_holds_across_workers_from_the_events(
    capped: Store, tmp_path: Path, workers: list[Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(capacity_skills.SECONDS_ENV, "0.2")
    runs = [start(capped, "orders", n, priority=n % 3) for n in range(12)]

    def ended() -> bool:
        return all(status(capped, r) == RunStatus.COMPLETED for r in runs)

    eventually(ended, timeout=120)
    intervals = [i for r in runs for i in call_intervals(capped.runs.events(r.id, 0, 10_000))]
    assert len(intervals) == len(runs)
    # four workers called, two at a time (the intervals read from the events end when the
    # settling transaction began, so they may overlap less than the slots did, never more)
    assert 1 <= most_in_flight(intervals) <= 2
    assert capacity_skills.most_at_once(tmp_path / "destination.jsonl") <= 2
    waited = [r for r in runs if "capacity.waiting" in event_types(capped, r)]
    assert waited, "the cap never bound"
    assert in_flight(capped, "submit") == []


def test_a_read_in_a_turn_holds_its_skills_slot_while_it_is_called(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    monkeypatch.setattr(capacity_skills, "GATE", gate)
    looked = {"tool_calls": [{"name": "look", "arguments": {"q": "order"}}]}
    script = {"ask": [looked, {"output": {"done": True}}]}
    provider = scripted_provider(tmp_path, script)[0]
    first, second = start(capped, "looks", 1), start(capped, "looks", 2)
    calling = engine(capped, provider, worker_id="w1")
    thread = threading.Thread(target=calling.step, args=(first.id,))
    thread.start()
    try:
        # the call took its slot where its budget was reserved, and holds it while under way
        eventually(lambda: in_flight(capped, "look") == [first.id], timeout=30)
        other = engine(capped, provider, worker_id="w2")
        other.step(second.id)
        waiting = capped.runs.get(second.id)
        assert waiting.status == RunStatus.WAITING_FOR_CAPACITY
        assert waiting.lease_owner is None
        assert waiting.waiting == {
            "kind": "capacity",
            "waits_for": {"kind": "concurrency", "limit": "skill:look", "max": 1, "in_use": 1},
        }
        assert not waiting.budget_used.get("reserved")  # nothing was reserved for the call
    finally:
        gate.set()
        thread.join(timeout=60)
    # the call's result was recorded: its slot is free, and a worker's look wakes the waiter
    assert status(capped, first) == RunStatus.COMPLETED
    assert in_flight(capped, "look") == []
    assert Engine(capped, worker_id="w3").capacity.poll() == 1
    other.run_until_idle()
    assert status(capped, second) == RunStatus.COMPLETED
    assert capacity_skills.most_at_once(tmp_path / "destination.jsonl") == 1
    looks = [c for c in capacity_skills.calls(tmp_path / "destination.jsonl")]
    assert [c["event"] for c in looks] == ["begin", "end", "begin", "end"]
    # the waiting run's model call was replayed, not made again
    assert capped.runs.get(second.id).budget_used.get("model_calls") == 2


def test_calls_sent_before_the_skill_declared_its_cap_count_against_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two orders are sent while ``submit`` has no cap, and their workers die; a version
    declaring a cap of 1 is activated while their outcomes are open. They hold no slot, yet
    they count: a new order waits (2 of 1 in use), each is sent again with its key under the
    count it already has (never held back by the cap), and the new order goes once both have
    settled, not before."""
    monkeypatch.setenv(capacity_skills.LOG_ENV, str(tmp_path / "destination.jsonl"))
    text = (DEFS / "skill_capacity.hcl").read_text(encoding="utf-8")
    assert text.count("  concurrency = 2\n") == 1

    def deploy(name: str, cap: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        changed = text.replace("  concurrency = 2\n", cap) + f"# {name}\n"
        (folder / "skill_capacity.hcl").write_text(changed, encoding="utf-8")
        register(store, compile_files(folder / "skill_capacity.hcl"))

    clock = Clock()
    store.clock = clock
    deploy("uncapped", "")
    first, second = start(store, "orders", 1), start(store, "orders", 2)
    dies(store, first)
    dies(store, second)
    with store.read() as conn:
        assert (
            conn.execute(sa.select(sa.func.count()).select_from(schema.capacity_calls)).scalar()
            == 0
        )

    deploy("capped", "  concurrency = 1\n")
    assert sorted(in_flight(store, "submit")) == sorted([first.id, second.id])
    with store.read() as conn:
        assert store.capacity.in_use(conn, ["skill:submit"]) == {"skill:submit": 2}
    third = start(store, "orders", 3)
    alive = Engine(store, worker_id="alive")
    alive.step(third.id)
    assert store.runs.get(third.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "concurrency", "limit": "skill:submit", "max": 1, "in_use": 2},
    }
    assert action_of(store, third) == (ActionStatus.ADMITTED, 0)

    # the dead workers' leases are taken over: each call may still be in flight (unknown),
    # and is sent again with its key — the same call, under the count it already has
    clock.advance(alive.lease_seconds + 1)
    alive.step(first.id)
    alive.step(second.id)
    assert [action_of(store, r) for r in (first, second)] == [(ActionStatus.UNKNOWN, 1)] * 2
    clock.advance(60)
    alive.step(first.id)
    assert status(store, first) == RunStatus.COMPLETED
    assert action_of(store, first) == (ActionStatus.SUCCEEDED, 2)
    assert in_flight(store, "submit") == [second.id]
    assert wake_free(store, ["skill:submit"]) == 0  # 1 of 1 still in use
    assert status(store, third) == RunStatus.WAITING_FOR_CAPACITY

    alive.step(second.id)
    assert status(store, second) == RunStatus.COMPLETED
    assert status(store, third) == RunStatus.QUEUED  # woken by the call's settling
    alive.run_until_idle()
    assert status(store, third) == RunStatus.COMPLETED
    assert in_flight(store, "submit") == []
