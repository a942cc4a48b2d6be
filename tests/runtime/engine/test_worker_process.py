"""``openseal worker`` as real processes: racing, SIGKILL mid-turn, draining on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.providers import (
    CALLS_ENV,
    RESPONSES_ENV,
    ScriptedProvider,
    fixed,
    read_calls,
)
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine_support import PICK_7, event_types, register, small_workflow, write_script
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

LAUNCH = "import sys; from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"


def store_env(backend: Backend) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        env["OPENSEAL_DATABASE_URL"] = f"{backend.url}?options={options}"
    return env


def spawn(
    backend: Backend, tmp: Path, *args: str, env: dict[str, str] | None = None, log: str = "w"
) -> subprocess.Popen[bytes]:
    full_env = {
        **store_env(backend),
        RESPONSES_ENV: str(tmp / "responses.yaml"),
        CALLS_ENV: str(tmp / "calls.jsonl"),
        **(env or {}),
    }
    command = [sys.executable, "-c", LAUNCH, "worker", "--home", str(backend.home), *args]
    stderr = (tmp / f"{log}.log").open("wb")
    return subprocess.Popen(command, env=full_env, stdout=subprocess.DEVNULL, stderr=stderr)


def finish(process: subprocess.Popen[bytes]) -> int:
    try:
        return process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.fixture
def small(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    register(store, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", PICK_7)
    return store


def test_two_worker_processes_race_and_one_turn_runs(
    small: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        small, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    workers = [
        spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log=f"w{i}")
        for i in range(2)
    ]
    assert [finish(w) for w in workers] == [0, 0]
    assert small.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    assert len(read_calls(tmp_path / "calls.jsonl")) == 1
    logs = "".join((tmp_path / f"w{i}.log").read_text() for i in range(2))
    assert logs.count("state=ask") == 1  # one line per turn, from the worker that ran it


def test_sigkill_mid_turn_then_another_worker_finishes_without_repeating_calls(
    small: Store, backend: Backend, tmp_path: Path
) -> None:
    run = service.create_objective(
        small, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    fault = {POINT_ENV: "activity.recorded", DIR_ENV: str(tmp_path)}
    doomed = spawn(backend, tmp_path, "--lease-seconds", "1", "--worker-id", "doomed", env=fault)
    try:
        eventually(lambda: (tmp_path / "activity.recorded.reached").exists(), timeout=60)
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    crashed = small.runs.get(run.id)
    assert (crashed.status, crashed.lease_owner) == (RunStatus.RUNNING, "doomed")

    provider = ScriptedProvider.from_file(
        tmp_path / "responses.yaml", calls_file=tmp_path / "calls.jsonl"
    )
    rescuer = Engine(small, fixed(provider), worker_id="rescuer", lease_seconds=1)

    def rescued() -> bool:
        rescuer.run_until_idle()
        return small.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT

    eventually(rescued, timeout=60)
    calls = read_calls(tmp_path / "calls.jsonl")
    assert [(c["state"], c["call"]) for c in calls] == [("ask", 1)]  # never called again
    takeover = [e for e in small.runs.events(run.id, 0, 1000) if e.type == "lease.claimed"][-1]
    assert takeover.payload["previous_owner"] == "doomed"
    assert takeover.payload["claimed_from"] == "running"
    assert "turn.updated" in event_types(small, run)
    with small.read() as conn:
        statuses = (
            conn.execute(
                schema.turns.select()
                .where(schema.turns.c.run_id == run.id)
                .order_by(schema.turns.c.seq)
            )
            .mappings()
            .all()
        )
    assert statuses[0]["status"] == "abandoned"
    assert statuses[0]["worker"] == "doomed"


def test_sigterm_drains_and_exits(small: Store, backend: Backend, tmp_path: Path) -> None:
    worker = spawn(backend, tmp_path, "--poll-interval", "0.05", "--log-format", "json")
    run = service.create_objective(
        small, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    eventually(lambda: small.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT, timeout=60)
    worker.send_signal(signal.SIGTERM)
    assert finish(worker) == 0
    log = (tmp_path / "w.log").read_text()
    assert "SIGTERM: draining" in log
    assert '"state": "ask"' in log


def test_once_works_on_one_run_and_exits(small: Store, backend: Backend, tmp_path: Path) -> None:
    runs = [
        service.create_objective(small, service.StartObjective("small", {"n": n}), service.CLI).run
        for n in (5, 6)
    ]
    assert finish(spawn(backend, tmp_path, "--once")) == 0
    statuses = sorted(str(small.runs.get(run.id).status) for run in runs)
    assert statuses == ["queued", "waiting_for_event"]
