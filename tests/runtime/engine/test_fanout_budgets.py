"""Budgets under fan-out: branches and items share the run's budgets on SQLite and PostgreSQL.

Every unit of a ``for_each`` or ``parallel`` state reserves its model call under the run's
lock before calling, so the last call of a budget goes to exactly one unit, and every call
that was made is recorded and counted before the run stops.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ModelRequest, ModelResponse, Usage, fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine_support import compile_files, event_types, register
from tests.runtime.gateway_support import activities

FAN_OUT = """
model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Price items. Answer with JSON only."
}

workflow "each" {
  owner = agent.clerk
  start = state.price

  input "items" {
    type = list(string)
  }

  budget {
    turns       = 10
    model_calls = MODEL_CALLS
    tokens      = TOKENS
  }

  state "price" {
    for_each {
      items       = input.items
      concurrency = 6
      do {
        turn {
          agent  = agent.clerk
          goal   = "Price ${item}"
          output = object({ price = number })
        }
      }
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "six" {
  owner = agent.clerk
  start = state.price

  budget {
    turns       = 10
    model_calls = MODEL_CALLS
    tokens      = TOKENS
  }

  state "price" {
    parallel {
BRANCHES
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
"""
BRANCH = """      branch "b{n}" {{
        turn {{
          agent  = agent.clerk
          goal   = "Price item {n}"
          output = object({{ price = number }})
        }}
      }}"""
ITEMS = ["a", "b", "c", "d", "e", "f"]
#: tokens each model call reports
TOKENS_PER_CALL = 15


class Crowd:
    """A model that answers every call, after waiting (at most ``patience`` seconds) for six
    calls to be in flight at once: without a reservation every unit passes the budget check
    before any call is recorded."""

    def __init__(self, patience: float = 2.0) -> None:
        self.calls: list[ModelRequest] = []
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(6, timeout=patience)

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.calls.append(request)
        with contextlib.suppress(threading.BrokenBarrierError):
            self._barrier.wait()
        return ModelResponse(output={"price": 1}, usage=Usage(10, TOKENS_PER_CALL - 10))


def deploy(store: Store, tmp: Path, *, model_calls: int, tokens: int) -> None:
    text = FAN_OUT.replace("MODEL_CALLS", str(model_calls)).replace("TOKENS", str(tokens))
    text = text.replace("BRANCHES", "\n".join(BRANCH.format(n=n) for n in range(6)))
    folder = tmp / f"fan_{model_calls}_{tokens}"
    folder.mkdir()
    (folder / "fan.hcl").write_text(text, encoding="utf-8")
    register(store, compile_files(folder / "fan.hcl"))


def start(store: Store, workflow: str) -> str:
    inputs = {"items": ITEMS} if workflow == "each" else {}
    return service.create_objective(
        store, service.StartObjective(workflow, inputs), service.CLI
    ).run.id


def model_activities(store: Store, run_id: str) -> list[str]:
    return sorted(a for a in activities(store, run_id) if ":model:" in a)


@pytest.mark.parametrize("workflow", ["each", "six"])
def test_six_units_with_one_model_call_left_make_exactly_one_call(
    store: Store, tmp_path: Path, workflow: str
) -> None:
    deploy(store, tmp_path, model_calls=1, tokens=10_000)
    run_id = start(store, workflow)
    crowd = Crowd()
    Engine(store, fixed(crowd), worker_id="w").run_until_idle()

    assert len(crowd.calls) == 1  # the other five were refused before calling
    assert len(model_activities(store, run_id)) == 1
    run = store.runs.get(run_id)
    assert run.budget_used == {"turns": 1, "model_calls": 1, "tokens": TOKENS_PER_CALL}
    assert run.status == RunStatus.NEEDS_ATTENTION
    assert run.waiting is not None
    assert run.waiting["reason"] == "budget exhausted: model_calls would reach 2 of 1"
    assert event_types(store, run_id).count("run.budget_exhausted") == 1


@pytest.mark.parametrize("workflow", ["each", "six"])
def test_every_call_made_in_a_fan_out_is_recorded_and_counted_before_the_run_stops(
    store: Store, tmp_path: Path, workflow: str
) -> None:
    """The tokens budget is only known to be spent after a call: the first answer overspends
    it while five more calls are in flight. Those five are recorded and counted too."""
    deploy(store, tmp_path, model_calls=20, tokens=10)
    run_id = start(store, workflow)
    crowd = Crowd()
    Engine(store, fixed(crowd), worker_id="w").run_until_idle()

    made = len(crowd.calls)
    assert made == 6
    assert len(model_activities(store, run_id)) == made
    run = store.runs.get(run_id)
    assert run.budget_used == {"turns": 1, "model_calls": made, "tokens": made * TOKENS_PER_CALL}
    assert run.status == RunStatus.NEEDS_ATTENTION
    assert run.waiting is not None
    assert run.waiting["reason"].startswith("budget exhausted: tokens used")


def test_a_fan_out_within_budget_completes_and_leaves_no_reservation(
    store: Store, tmp_path: Path
) -> None:
    deploy(store, tmp_path, model_calls=6, tokens=10_000)
    run_id = start(store, "each")
    crowd = Crowd()
    Engine(store, fixed(crowd), worker_id="w").run_until_idle()

    run = store.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.context["states"]["price"] == [{"price": 1}] * 6
    assert run.budget_used == {"turns": 1, "model_calls": 6, "tokens": 6 * TOKENS_PER_CALL}
    types = event_types(store, run_id)
    assert types.count("budget.reserved") == types.count("budget.spent") == 6
