"""Leases and fencing as the engine meets them: racing workers and a stalled worker."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine, StepReport
from openseal.runtime.providers import fixed, read_calls
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Claim
from tests.runtime.engine_support import (
    PICK_7,
    engine,
    event_types,
    register,
    scripted,
    small_workflow,
)
from tests.runtime.support import Backend


def test_two_engines_racing_for_one_run_execute_one_turn(backend: Backend, tmp_path: Path) -> None:
    setup = backend.open()
    register(setup, small_workflow(tmp_path))
    run = service.create_objective(
        setup, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    provider, calls = scripted(tmp_path, PICK_7)
    engines = [Engine(backend.open(), fixed(provider), worker_id=f"w{i}") for i in range(2)]
    barrier = threading.Barrier(2)
    reports: list[StepReport | None] = [None, None]

    def race(index: int) -> None:
        barrier.wait()
        reports[index] = engines[index].step()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    winners = [r for r in reports if r is not None]
    assert len(winners) == 1
    assert len(read_calls(calls)) == 1
    assert setup.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    assert event_types(setup, run).count("lease.claimed") == 1


def test_a_stalled_worker_is_fenced_off_after_a_takeover(backend: Backend, tmp_path: Path) -> None:
    """Worker A stalls between recording the model result and advancing. Its lease runs out
    (simulated with B's clock one hour ahead, so no test waits for real time), B takes the run
    over and replays; A's late write is rejected by the epoch and A drops its turn."""
    setup = backend.open()
    register(setup, small_workflow(tmp_path))
    run = service.create_objective(
        setup, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    provider, calls = scripted(tmp_path, PICK_7)
    reached, release = threading.Event(), threading.Event()

    def stall(point: str, claim: Claim) -> None:
        if point == "turn.before_advance" and claim.worker_id == "A":
            reached.set()
            release.wait(timeout=120)

    slow = Engine(backend.open(), fixed(provider), worker_id="A", lease_seconds=5, hook=stall)
    outcome: list[StepReport | None] = []
    thread = threading.Thread(target=lambda: outcome.append(slow.step()))
    thread.start()
    assert reached.wait(timeout=60)

    later = backend.open()
    real_clock = later.clock
    later.clock = lambda: real_clock() + timedelta(hours=1)
    Engine(later, fixed(provider), worker_id="B").run_until_idle()
    assert setup.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT

    release.set()
    thread.join(timeout=120)
    assert outcome and outcome[0] is not None and outcome[0].ending == "lost"
    stored = setup.runs.get(run.id)
    assert stored.stale_writes == 1
    assert stored.status == RunStatus.WAITING_FOR_EVENT
    assert "write.rejected_stale_epoch" in event_types(setup, run)
    assert len(read_calls(calls)) == 1  # B replayed A's recorded model call


def test_pausing_a_run_mid_turn_fences_the_worker(backend: Backend, tmp_path: Path) -> None:
    setup = backend.open()
    register(setup, small_workflow(tmp_path))
    run = service.create_objective(
        setup, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    provider, calls = scripted(tmp_path, PICK_7)
    reached, release = threading.Event(), threading.Event()

    def hold(point: str, claim: Claim) -> None:
        if point == "activity.recorded":
            reached.set()
            release.wait(timeout=120)

    worker = Engine(backend.open(), fixed(provider), worker_id="A", hook=hold)
    outcome: list[StepReport | None] = []
    thread = threading.Thread(target=lambda: outcome.append(worker.step()))
    thread.start()
    assert reached.wait(timeout=60)
    paused = service.pause_run(setup, service.RunCommand(run.id, "operator"), service.CLI)
    assert paused.status == RunStatus.PAUSED
    release.set()
    thread.join(timeout=120)
    assert outcome[0] is not None and outcome[0].ending == "lost"
    assert setup.runs.get(run.id).status == RunStatus.PAUSED

    service.resume_run(setup, service.RunCommand(run.id), service.CLI)
    Engine(backend.open(), fixed(provider), worker_id="B").run_until_idle()
    assert setup.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    assert len(read_calls(calls)) == 1


def test_a_run_given_back_after_its_turns_waits_behind_the_others(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, {"ask": [{"output": {"pick": 7}}] * 3})
    runs = [
        service.create_objective(store, service.StartObjective("small", {"n": 5}), service.CLI).run
        for _ in range(3)
    ]
    worker = engine(store, provider, max_turns_per_claim=1)
    claimed = [report.run_id for report in (worker.step() for _ in range(6)) if report]
    assert claimed == [r.id for r in runs] * 2
