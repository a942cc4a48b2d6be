"""A bulk migration killed halfway (SIGKILL of the real process activating the change, on
SQLite and PostgreSQL): every run of 500 moved exactly once or not at all, as its events say,
and `openseal runs migrate` finishes it without moving any run twice (invariant 17)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from openseal.compiler import compile_paths
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.faults import DIR_ENV, MIGRATION_POINT, POINT_ENV, SKIP_ENV
from openseal.runtime.governance import flow as gov
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import LAUNCH, store_env
from tests.runtime.support import Backend, eventually

RUNS = 500
HALF = 250

DEFINITIONS = """model "m" {
  provider = "scripted"
  model    = "scripted-small"
}

agent "clerk" {
  model        = model.m
  instructions = "Hold the request until it is released."
  max_risk     = "read"
}

workflow "hold" {
  description = "%(description)s"
  owner       = agent.clerk
  start       = state.hold
  state "hold" {
    wait {
      event = "release"
    }
    next = state.released
  }
  state "released" {
    end = "completed"
  }
%(migrate)s}
"""

MIGRATE = """  migrate {
    version = "%s"
    state "hold" {
      to = state.hold
    }
  }
"""


def _compiled(folder: Path, description: str, migrate: str = "") -> dict[str, object]:
    folder.mkdir(parents=True)
    text = DEFINITIONS % {"description": description, "migrate": migrate}
    (folder / "hold.hcl").write_text(text, encoding="utf-8")
    result = compile_paths([folder])
    assert result.ok, [str(d) for d in result.diagnostics]
    return dict(result.documents)


def _moves(store: Store, run_ids: list[str]) -> Counter[str]:
    """How many ``run.migrated`` events each run has."""
    return Counter(
        {
            run_id: sum(
                1 for e in store.runs.events(run_id, limit=1000) if e.type == "run.migrated"
            )
            for run_id in run_ids
        }
    )


@pytest.mark.slow
def test_a_bulk_migration_killed_halfway_moves_each_run_once_or_not_at_all(
    backend: Backend, tmp_path: Path
) -> None:
    store = backend.open()
    v1_docs = _compiled(tmp_path / "v1", "Hold a request.")
    service.register_documents(store, v1_docs.values(), actor="user:test")  # type: ignore[arg-type]
    v1 = store.definitions.active_version("hold")
    assert v1 is not None
    run_ids = [
        service.create_objective(store, service.StartObjective("hold", {}), service.CLI).run.id
        for _ in range(RUNS)
    ]
    Engine(store, fixed(ScriptedProvider({})), worker_id="w").run_until_idle()
    assert {store.runs.get(r).status for r in run_ids} == {RunStatus.WAITING_FOR_EVENT}

    v2_docs = _compiled(tmp_path / "v2", "Hold a request, then.", MIGRATE % v1.digest[:12])
    filed = gov.deploy(store, v2_docs, "user:alice")  # type: ignore[arg-type]
    assert filed.proposal is not None
    gov.review(store, filed.proposal.id, "user:bob", "approve")
    gov.decide(store, filed.proposal.id, "user:carol", "approve")

    faults = tmp_path / "faults"
    faults.mkdir()
    env = {
        **store_env(backend),
        POINT_ENV: MIGRATION_POINT,
        DIR_ENV: str(faults),
        SKIP_ENV: str(HALF),
    }
    command = [
        sys.executable, "-c", LAUNCH, "proposals", "activate", filed.proposal.id,
        "--actor", "user:carol", "--home", str(backend.home),
    ]  # fmt: skip
    activating = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        reached = faults / f"{MIGRATION_POINT}.reached"
        eventually(lambda: reached.exists() or activating.poll() is not None, timeout=300)
        assert reached.exists(), activating.stderr.read() if activating.stderr else ""
        activating.send_signal(signal.SIGKILL)  # the 251st run's move written, not committed
    finally:
        activating.wait(timeout=300)
        if activating.stderr:
            activating.stderr.close()
    in_flight = reached.read_text(encoding="utf-8")

    v2 = store.definitions.active_version("hold")
    assert v2 is not None and v2.digest != v1.digest  # the activation had committed
    moves = _moves(store, run_ids)
    assert set(moves.values()) <= {0, 1}
    moved = {r for r in run_ids if moves[r] == 1}
    assert len(moved) == HALF
    assert moves[in_flight] == 0
    for run_id in run_ids:  # on the new version exactly when its one event says so
        assert (store.runs.get(run_id).workflow_digest == v2.digest) == (run_id in moved)

    plan = [
        sys.executable, "-c", LAUNCH, "runs", "migrate", "--proposal", filed.proposal.id,
        "--dry-run", "--home", str(backend.home),
    ]  # fmt: skip
    planned = subprocess.run(plan, env=store_env(backend), capture_output=True, timeout=300)
    assert planned.returncode == 0, planned.stderr.decode()
    text = planned.stdout.decode()
    assert f"{RUNS - HALF} would_move (would move)" in text
    rows = [line for line in text.splitlines() if line.split()[-1:] == ["would_move"]]
    assert len(rows) == RUNS - HALF, text  # one row per run still to move

    finish = [
        sys.executable, "-c", LAUNCH, "runs", "migrate", "--proposal", filed.proposal.id,
        "--actor", "user:carol", "--home", str(backend.home), "--output", "json",
    ]  # fmt: skip
    done = subprocess.run(finish, env=store_env(backend), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert answer["counts"] == {"migrated": RUNS - HALF}
    assert _moves(store, run_ids) == Counter(dict.fromkeys(run_ids, 1))
    assert {store.runs.get(r).workflow_digest for r in run_ids} == {v2.digest}
    assert {store.runs.get(r).status for r in run_ids} == {RunStatus.WAITING_FOR_EVENT}
