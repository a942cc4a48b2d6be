"""Every adapter is bounded by its skill's timeout: an action past it is ``unknown`` and
reconciled, never ``failed``; a reply that comes later is still its outcome (invariant 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine_support import compile_files, register
from tests.runtime.slow_skill import LEDGER_ENV, _entries
from tests.runtime.support import eventually

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

DEFINITIONS = """
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "clerk" {
  model        = model.m
  instructions = "Record."
  max_risk     = "write"
}

skill "slow_record" {
  description = "Write a ledger entry, slowly."
  effect      = "write"
  input       = object({ ref = string, seconds = number })
  output      = object({ ref = string, entry = string })
  timeout     = "1s"

  adapter "python" {
    entry_point = "tests.runtime.slow_skill:submit"
  }

  idempotency {
    lookup "python" {
      entry_point = "tests.runtime.slow_skill:lookup"
    }
  }
}

binding "clerk_records" {
  skill = skill.slow_record
  to    = agent.clerk
}

workflow "slow" {
  owner = agent.clerk
  start = state.write

  input "seconds" {
    type = number
  }

  state "write" {
    action {
      skill = skill.slow_record
      args  = { ref = "r-1", seconds = input.seconds }
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
"""


def test_a_python_action_past_its_timeout_is_unknown_then_its_late_reply_settles_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "ledger.json"))
    source = tmp_path / "slow.hcl"
    source.write_text(DEFINITIONS, encoding="utf-8")
    register(store, compile_files(source))
    run = service.create_objective(
        store, service.StartObjective("slow", {"seconds": 6}), service.CLI
    ).run
    worker = Engine(store, fixed(ScriptedProvider({})), worker_id="w")

    worker.run_until_idle()  # returns at the bound (1 s + grace), not when the skill does
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status in (ActionStatus.UNKNOWN, ActionStatus.NEEDS_ATTENTION)
    assert ActionStatus.FAILED not in [h["to"] for h in action.history]
    assert "within 1s" in str(action.history)

    def completed() -> bool:
        worker.run_until_idle()
        return store.runs.get(run.id).status == RunStatus.COMPLETED

    eventually(completed, timeout=120)
    [entry] = _entries()  # called once
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result == entry
