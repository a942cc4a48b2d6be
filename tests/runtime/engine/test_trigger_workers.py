"""Schedule triggers fired by real ``openseal worker`` processes: two workers racing for the
same occurrences, and a worker killed while firing one, then another worker starting.

The trigger is activated with the test store's clock set back (its schedule counts from the
activation), so its occurrences are already due when the workers start: nothing waits for
the wall clock to reach a time.
"""

from __future__ import annotations

import signal
from datetime import timedelta
from pathlib import Path

import pytest

from openseal.runtime.clock import utcnow
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, TriggerFiring
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.support import Backend, eventually
from tests.runtime.trigger_support import deploy_triggers, objectives, trigger_project

pytestmark = pytest.mark.slow

#: a workflow that parks in a wait at once (no model call), and a trigger for it every hour
PARKED = """
workflow "parked" {
  owner = agent.clerk
  start = state.hold
  input "n" {
    type = number
  }
  state "hold" {
    wait {
      event = "never"
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

trigger "hourly" {
  workflow       = workflow.parked
  schedule { every = "1h" }
  input          = { n = 1 }
  overlap        = "allow"
  catch_up       = "all"
  catch_up_limit = 5
}
"""


def activated_in_the_past(backend: Backend, tmp: Path, hours_ago: float) -> Store:
    """The trigger activated ``hours_ago`` (its occurrences: every whole hour since)."""
    store = backend.open()
    store.clock = lambda: utcnow() - timedelta(hours=hours_ago)
    deploy_triggers(store, trigger_project(tmp, PARKED))
    store.clock = utcnow
    return store


def firings(store: Store) -> list[TriggerFiring]:
    return store.triggers.firings("hourly")[::-1]


def test_two_workers_fire_each_occurrence_once(backend: Backend, tmp_path: Path) -> None:
    store = activated_in_the_past(backend, tmp_path, 2.5)  # due: 1h and 2h after activation
    workers = [
        spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log=f"w{i}")
        for i in range(2)
    ]
    assert [finish(w) for w in workers] == [0, 0]
    found = firings(store)
    assert [f.outcome for f in found] == ["started", "started"]
    assert len({f.occurrence_key for f in found}) == 2
    started = objectives(store)
    assert sorted(o.id for o in started) == sorted(str(f.objective_id) for f in found)
    for objective in started:
        [run] = store.runs.query(objective_id=objective.id)
        assert run.status == RunStatus.WAITING_FOR_EVENT  # the runs went on, once each


def test_a_worker_killed_while_firing_leaves_the_occurrence_to_the_next(
    backend: Backend, tmp_path: Path
) -> None:
    store = activated_in_the_past(backend, tmp_path, 1.5)  # due: 1h after activation
    fault = {POINT_ENV: "trigger.before_commit", DIR_ENV: str(tmp_path)}
    doomed = spawn(backend, tmp_path, "--poll-interval", "0.05", env=fault, log="doomed")
    try:
        eventually(lambda: (tmp_path / "trigger.before_commit.reached").exists(), timeout=60)
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    assert firings(store) == [] and objectives(store) == []  # nothing committed
    rescuer = spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log="rescuer")
    assert finish(rescuer) == 0
    [firing] = firings(store)
    assert firing.outcome == "started"
    assert (tmp_path / "trigger.before_commit.reached").read_text() == firing.occurrence_key
    [objective] = objectives(store)
    assert objective.id == firing.objective_id
    # a third worker finds the occurrence recorded and starts nothing more
    again = spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05", log="again")
    assert finish(again) == 0
    assert len(firings(store)) == 1 and len(objectives(store)) == 1
