"""Every adapter is bounded by its skill's timeout: an action past it is ``unknown`` and
reconciled, never ``failed`` — and nothing is sent again while an earlier attempt may still be
in flight (invariant 14). A python skill's attempt is killed at the timeout, so reconciling
starts at once; an HTTP attempt is cut at the timeout and may still be worked on at the
destination, so a same-key retry waits for the attempt's deadline.

The skills here are real and slow: python entry points that sleep (tests/runtime/slow_skill.py
notes every call that starts, and whether another was still running then) and an HTTP server
whose first reply trickles in for a minute."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from openseal.errors import RuntimeFailure
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.engine_support import compile_files, register, write_script
from tests.runtime.slow_skill import LEDGER_ENV, _entries, lock_held, starts
from tests.runtime.support import Backend, eventually
from tests.skills.server import serve

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

WORKFLOW = """
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "clerk" {
  model        = model.m
  instructions = "Record."
  max_risk     = "write"
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

PYTHON_SKILL = """
skill "slow_record" {
  description = "Write a ledger entry, slowly."
  effect      = "write"
  input       = object({ ref = string, seconds = number })
  output      = object({ ref = string, entry = string })
  timeout     = "TIMEOUT"

  adapter "python" {
    entry_point = "tests.runtime.slow_skill:ENTRY"
  }

  idempotency {
    RETRY
    lookup "python" {
      entry_point = "tests.runtime.slow_skill:lookup"
    }
  }
}
"""

HTTP_SKILL = """
skill "slow_record" {
  description = "Write an entry; the destination's first reply trickles in."
  effect      = "write"
  input       = object({ ref = string, seconds = number })
  output      = object({ id = string })
  timeout     = "1s"

  adapter "http" {
    method = "POST"
    url    = "URL/drip-once?seconds=60"
  }

  idempotency {
    key_header     = "Idempotency-Key"
    same_key_retry = true
  }
}
"""


def deploy(store: Store, tmp: Path, skill: str) -> None:
    source = tmp / "slow.hcl"
    source.write_text(WORKFLOW + skill, encoding="utf-8")
    register(store, compile_files(source))


def python_skill(entry: str, *, retry: bool, timeout: str = "1s") -> str:
    """The python skill with entry point ``entry`` (``submit`` sleeps on every call,
    ``submit_slow_once`` on the first), with or without same-key retry."""
    text = PYTHON_SKILL.replace("ENTRY", entry).replace("TIMEOUT", timeout)
    return text.replace("RETRY", "same_key_retry = true" if retry else "")


def start(store: Store, seconds: float) -> str:
    return service.create_objective(
        store, service.StartObjective("slow", {"seconds": seconds}), service.CLI
    ).run.id


def moves(store: Store, action_id: str) -> list[tuple[str, object]]:
    """The action's status moves, each with the attempt it marked over (if any)."""
    history = service.show_action(store, action_id).action.history
    return [(h["to"], h.get("ended")) for h in history if "to" in h]


@pytest.fixture(autouse=True)
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ledger.json"
    monkeypatch.setenv(LEDGER_ENV, str(path))
    return path


def test_a_python_action_past_its_timeout_is_stopped_then_sent_again_once_it_ended(
    store: Store, tmp_path: Path
) -> None:
    """The first call would take ten minutes: it is killed at the 1 s timeout, the action is
    ``unknown``, the lookup finds nothing, and the same-key retry — which starts only after the
    first call ended — writes the one entry."""
    deploy(store, tmp_path, python_skill("submit_slow_once", retry=True))
    run_id = start(store, 600)
    Engine(store, fixed(ScriptedProvider({})), worker_id="w").run_until_idle()

    assert store.runs.get(run_id).status == RunStatus.COMPLETED
    [first, second] = starts()
    assert not first["overlapped"] and not second["overlapped"]
    [entry] = _entries()
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result == entry
    assert moves(store, action.id)[1:] == [
        ("dispatched", None), ("unknown", 1), ("dispatched", None), ("succeeded", None),
    ]  # fmt: skip
    assert "within 1s; its process was stopped" in str(action.history)


@pytest.mark.parametrize(("retry", "calls"), [(False, 1), (True, 3)])
def test_a_python_action_that_never_answers_needs_an_operator_who_can_resolve_it_at_once(
    store: Store, tmp_path: Path, retry: bool, calls: int
) -> None:
    """Every call would take ten minutes. With a lookup only, the action needs an operator after
    the first is stopped; with same-key retry too, after three calls one after the other, never
    two at a time. Nothing is left running, and the operator's resolve is taken at once."""
    deploy(store, tmp_path, python_skill("submit", retry=retry))
    run_id = start(store, 600)
    Engine(store, fixed(ScriptedProvider({})), worker_id="w").run_until_idle()

    assert store.runs.get(run_id).status == RunStatus.NEEDS_ATTENTION
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.NEEDS_ATTENTION
    assert [s["overlapped"] for s in starts()] == [False] * calls
    assert [m for m in moves(store, action.id) if m[0] == "unknown"] == [
        ("unknown", n + 1) for n in range(calls)
    ]
    assert not lock_held(tmp_path / "ledger.lock")  # no call of the skill is running
    assert _entries() == []

    entry = {"ref": "r-1", "entry": "E-by-hand"}
    evidence = "wrote the entry by hand"
    service.resolve_action(
        store, service.Resolution(action.id, "succeeded", evidence, entry), service.CLI
    )
    Engine(store, fixed(ScriptedProvider({})), worker_id="w").run_until_idle()
    assert store.runs.get(run_id).status == RunStatus.COMPLETED


@pytest.mark.slow
def test_an_http_action_is_cut_at_its_timeout_and_sent_again_only_after_its_deadline(
    store: Store, tmp_path: Path
) -> None:
    """The first reply would trickle in for a minute, a byte well within each read's timeout.
    The exchange is cut at the 1 s timeout; the same-key retry comes after the attempt's
    deadline, when the first request is no longer being answered."""
    with serve() as server:
        deploy(store, tmp_path, HTTP_SKILL.replace("URL", server.url))
        run_id = start(store, 0)
        worker = Engine(store, fixed(ScriptedProvider({})), worker_id="w")

        def completed() -> bool:
            worker.run_until_idle()
            return store.runs.get(run_id).status == RunStatus.COMPLETED

        eventually(completed, timeout=120)
        assert server.drips == ["cut"]
        assert server.overlapped == []
        first, second = server.requests
        assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result == {"id": "O-1"}
    assert [m[0] for m in moves(store, action.id)][-4:] == [
        "dispatched", "unknown", "dispatched", "succeeded",
    ]  # fmt: skip


@pytest.mark.slow
def test_a_call_outlives_no_deadline_when_its_worker_is_killed(
    backend: Backend, tmp_path: Path, ledger: Path
) -> None:
    """A real worker process is killed (SIGKILL) while the skill's first call sleeps: the call's
    process stops itself at the 5 s timeout, so when another worker reconciles after the
    attempt's deadline, its same-key retry runs alone and writes the one entry."""
    store = backend.open()
    deploy(store, tmp_path, python_skill("submit_slow_once", retry=True, timeout="5s"))
    write_script(tmp_path / "responses.yaml", {})
    run_id = start(store, 600)
    doomed = spawn(
        backend, tmp_path, "--lease-seconds", "1", "--worker-id", "doomed",
        env={LEDGER_ENV: str(ledger)},
    )  # fmt: skip
    try:
        eventually(lambda: starts(ledger), timeout=60)
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.DISPATCHED

    rescuer = Engine(store, fixed(ScriptedProvider({})), worker_id="rescuer", lease_seconds=1)

    def rescued() -> bool:
        rescuer.run_until_idle()
        return store.runs.get(run_id).status == RunStatus.COMPLETED

    eventually(rescued, timeout=120)
    [first, second] = starts(ledger)
    assert (first["overlapped"], second["overlapped"]) == (False, False)
    [entry] = _entries()
    [action] = service.list_actions(store, run_id=run_id)
    assert (action.status, action.result) == (ActionStatus.SUCCEEDED, entry)


@pytest.mark.slow
def test_the_operator_is_refused_while_a_call_runs_and_heard_as_soon_as_it_ended(
    store: Store, tmp_path: Path
) -> None:
    """While the call runs, the action is being sent: ``resolve`` is refused with
    ``action_in_flight``. The call would take ten minutes; at its 5 s timeout it is stopped,
    the worker lets go of the run, and the same ``resolve`` is taken."""
    deploy(store, tmp_path, python_skill("submit", retry=False, timeout="5s"))
    run_id = start(store, 600)
    worker = Engine(store, fixed(ScriptedProvider({})), worker_id="w")
    working = threading.Thread(target=worker.run_until_idle)
    working.start()
    try:
        eventually(starts, timeout=60)
        [action] = service.list_actions(store, run_id=run_id)
        resolution = service.Resolution(
            action.id, "succeeded", "wrote the entry by hand", {"ref": "r-1", "entry": "E-1"}
        )
        with pytest.raises(RuntimeFailure) as refused:
            service.resolve_action(store, resolution, service.CLI)
        assert refused.value.code == "action_in_flight"
    finally:
        working.join(timeout=120)
    assert not working.is_alive()
    assert not lock_held(tmp_path / "ledger.lock")

    assert service.resolve_action(store, resolution, service.CLI).status == ActionStatus.SUCCEEDED
    worker.run_until_idle()
    assert store.runs.get(run_id).status == RunStatus.COMPLETED
