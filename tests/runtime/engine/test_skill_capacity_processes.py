"""A skill's concurrency cap held by real ``openseal worker`` processes (both backends): 40 runs
whose actions call a skill capped at 2, across 4 workers of 2 threads each, never have more
than 2 calls in flight — checked from the runs' events and from the destination's own log, not
from the slot table — while one worker is SIGKILLed right after marking its action dispatched:
that call keeps its slot through the takeover and while its outcome is unknown, until it is
sent again with its key and settles."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV, SKIP_ENV
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from tests.runtime import capacity_skills
from tests.runtime.engine.test_capacity_processes import most_in_flight
from tests.runtime.engine.test_skill_capacity import call_intervals
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.support import Backend, eventually, every_run_ended

pytestmark = pytest.mark.slow

RUNS = 40
CAP = 2
LEASE = "2"


@pytest.fixture
def capped(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    # a short timeout: the killed call is sent again once it can no longer be in flight
    text = (DEFS / "skill_capacity.hcl").read_text(encoding="utf-8")
    quick = text.replace('timeout     = "30s"', 'timeout     = "3s"')
    assert quick != text
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "skill_capacity.hcl").write_text(quick, encoding="utf-8")
    register(store, compile_files(tmp_path / "defs" / "skill_capacity.hcl"))
    (tmp_path / "responses.yaml").write_text("{}\n", encoding="utf-8")
    return store


def test_a_skill_cap_of_2_across_4_workers_with_one_killed_mid_call(
    capped: Store, backend: Backend, tmp_path: Path
) -> None:
    ids = []
    for n in range(RUNS):
        request = service.StartObjective("orders", {"n": n}, priority=n % 3)
        created = service.create_objective(capped, request, service.CLI)
        assert created.run is not None
        ids.append(created.run.id)
    destination = tmp_path / "destination.jsonl"
    skill_env = {capacity_skills.LOG_ENV: str(destination), capacity_skills.SECONDS_ENV: "0.1"}
    options = ("--concurrency", "2", "--lease-seconds", LEASE, "--poll-interval", "0.2")
    faults = tmp_path / "faults"
    faults.mkdir()
    victim_env = {POINT_ENV: "action.dispatched", DIR_ENV: str(faults), SKIP_ENV: "3", **skill_env}
    victim = spawn(backend, tmp_path, *options, env=victim_env, log="victim")
    workers: list[subprocess.Popen[bytes]] = [victim]
    try:
        # the victim blocks right after the transaction that took its slot and marked its
        # action dispatched committed, before it calls the skill
        reached = faults / "action.dispatched.reached"
        eventually(reached.exists, timeout=300)
        held = reached.read_text(encoding="utf-8").strip()
        workers += [
            spawn(backend, tmp_path, *options, env=skill_env, log=f"w{i}") for i in range(3)
        ]
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        eventually(lambda: every_run_ended(capped), timeout=600)
    finally:
        for worker in workers[1:]:
            worker.send_signal(signal.SIGTERM)
        codes = [finish(worker) for worker in workers[1:]]
    assert codes == [0, 0, 0]
    assert {capped.runs.get(i).status for i in ids} == {RunStatus.COMPLETED}

    intervals = []
    for run_id in ids:
        intervals += call_intervals(capped.runs.events(run_id, 0, 10_000))
    assert len(intervals) == RUNS
    # never more than the cap, though 6 threads dispatched; the cap bound them: runs waited
    assert 1 <= most_in_flight(intervals) <= CAP
    waited = [
        i for i in ids
        if any(e.type == "capacity.waiting" for e in capped.runs.events(i, 0, 10_000))
    ]  # fmt: skip
    assert waited
    # the destination saw every order, never more than the cap at once, and a second time
    # only an order the killed worker had sent (its other thread's call, whose reply died with
    # it) or was about to send, again with its key once that attempt could no longer be in flight
    begun = [c["q"] for c in capacity_skills.calls(destination) if c["event"] == "begin"]
    assert set(begun) == {f"order-{n}" for n in range(RUNS)}
    assert capacity_skills.most_at_once(destination) <= CAP
    with capped.read() as conn:
        attempts = {
            a.key: a.attempts for i in ids for a in capped.actions.of_run(conn, i)
        }  # fmt: skip
    # sent again: the killed worker's actions only (one per thread), each once more at most
    assert sorted(attempts.values())[: RUNS - 2] == [1] * (RUNS - 2)
    assert max(attempts.values()) == 2
    assert RUNS <= len(begun) < sum(attempts.values())  # the blocked attempt was never sent

    # the killed worker's call: taken over, unknown, sent again with its key, settled — one
    # slot from its first dispatch to that settlement (its interval above)
    types = [e.type for e in capped.runs.events(held, 0, 10_000)]
    assert "action.unknown" in types
    takeover = [
        e for e in capped.runs.events(held, 0, 10_000)
        if e.type == "lease.claimed" and "previous_owner" in e.payload
    ]  # fmt: skip
    assert takeover, "the killed worker's run was never taken over"
    with capped.read() as conn:
        (action,) = capped.actions.of_run(conn, held)
        assert (action.status, action.attempts) == (ActionStatus.SUCCEEDED, 2)
        assert capped.capacity.calls_in_flight(conn, "skill:submit") == []
        assert capped.capacity.waiting_keys(conn) == []
