"""A concurrency cap held by real ``openseal worker`` processes (both backends): 2,000 runs of
a workflow capped at 3, across 4 workers of 2 threads each, never have more than 3 turns in
flight — checked from the runs' events, not from the slot table — while one worker is SIGKILLed
holding a slot, whose slot comes back only when another worker takes its lease over."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV, SKIP_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Event, Store
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.support import Backend, eventually, every_run_ended

pytestmark = pytest.mark.slow

RUNS = 2000
CAP = 3
LEASE = "2"
#: events that end the claim a ``capacity.slot_taken`` belongs to (a takeover's claim too)
CLAIM_ENDS = {"lease.claimed", "lease.released", "turn.retry_scheduled", "capacity.waiting"}


def _ends_claim(event: Event) -> bool:
    status = event.payload.get("status") if isinstance(event.payload, dict) else None
    return event.type in CLAIM_ENDS or (status is not None and status != "running")


def slot_intervals(events: list[Event]) -> list[tuple[float, float, int]]:
    """``(taken, given back, epoch)`` of each slot a run's claims took, from its events: taken
    when its claim counted the slots (``taken_at``, after the cap's lock), given back by the
    first later event that ends the claim (its transaction's time, before it commits)."""
    found = []
    for index, event in enumerate(events):
        if event.type != "capacity.slot_taken":
            continue
        end = next((e for e in events[index + 1 :] if _ends_claim(e)), None)
        assert end is not None, f"run {event.run_id}: a slot never given back"
        taken = float(event.payload["taken_at"])
        # a claim that ends in its own transaction ends at that transaction's time
        found.append((taken, max(taken, end.at.timestamp()), event.seq))
    return found


def most_in_flight(intervals: list[tuple[float, float, int]]) -> int:
    points = sorted([(t, 1) for t, _, _ in intervals] + [(e, -1) for _, e, _ in intervals],
                    key=lambda p: (p[0], p[1]))  # fmt: skip
    # at an equal moment an end counts first: a slot given back and taken then is one slot
    most = current = 0
    for _, step in points:
        current += step
        most = max(most, current)
    return most


@pytest.fixture
def capped(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    register(store, compile_files(DEFS / "capacity.hcl"))
    script = {"work": [{"output": {"done": True}}]}
    (tmp_path / "responses.yaml").write_text(yaml.safe_dump(script), encoding="utf-8")
    return store


def _start(store: Store, n: int) -> list[str]:
    ids = []
    for i in range(n):
        request = service.StartObjective("capped", {}, priority=i % 3)
        created = service.create_objective(store, request, service.CLI)
        assert created.run is not None
        ids.append(created.run.id)
    return ids


def test_a_cap_of_3_across_4_workers_with_one_killed_mid_slot(
    capped: Store, backend: Backend, tmp_path: Path
) -> None:
    ids = _start(capped, RUNS)
    options = ("--concurrency", "2", "--lease-seconds", LEASE, "--poll-interval", "0.2")
    faults = tmp_path / "faults"
    faults.mkdir()
    victim_env = {POINT_ENV: "turn.started", DIR_ENV: str(faults), SKIP_ENV: "25"}
    victim = spawn(backend, tmp_path, *options, env=victim_env, log="victim")
    workers: list[subprocess.Popen[bytes]] = [victim]
    try:
        # the victim blocks right after a claim took its slot and saved the turn
        reached = faults / "turn.started.reached"
        eventually(reached.exists, timeout=300)
        held = reached.read_text(encoding="utf-8").strip()
        workers += [spawn(backend, tmp_path, *options, log=f"w{i}") for i in range(3)]
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        eventually(lambda: every_run_ended(capped), timeout=300)
    finally:
        for worker in workers[1:]:
            worker.send_signal(signal.SIGTERM)
        codes = [finish(worker) for worker in workers[1:]]
    assert codes == [0, 0, 0]
    statuses = {capped.runs.get(i).status for i in ids}
    assert statuses == {RunStatus.COMPLETED}

    intervals: list[tuple[float, float, int]] = []
    for run_id in ids:
        intervals += slot_intervals(capped.runs.events(run_id, 0, 10_000))
    assert len(intervals) >= RUNS
    # never more than the cap, though 6 threads claimed; and the cap bound them: runs waited
    # (the intervals read from the events end when the ending transaction began, so they may
    # overlap less than the slots did, never more)
    assert 2 <= most_in_flight(intervals) <= CAP
    waited = sum(
        1 for run_id in ids[:200] for e in capped.runs.events(run_id, 0, 10_000)
        if e.type == "capacity.waiting"
    )  # fmt: skip
    assert waited > 0
    # the killed worker's run: its slot was held until a takeover's claim, which took it anew
    events = capped.runs.events(held, 0, 10_000)
    takeover = [e for e in events if e.type == "lease.claimed" and "previous_owner" in e.payload]
    assert takeover, "the killed worker's run was never taken over"
    assert any(e.type == "capacity.slot_taken" and e.seq > takeover[0].seq for e in events)
    with capped.read() as conn:
        assert capped.capacity.held(conn) == []
        assert capped.capacity.waiting_keys(conn) == []


def test_the_event_check_sees_overlaps() -> None:
    """The check this file relies on counts what overlaps, and only that."""
    assert most_in_flight([(0, 2, 1), (1, 3, 1), (2, 4, 1)]) == 2
    assert most_in_flight([(0, 5, 1), (1, 5, 1), (2, 5, 1), (3, 4, 1)]) == 4
