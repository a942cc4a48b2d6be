"""A model profile's shared rate limit held by real worker processes (both backends).

Four ``openseal worker`` processes run one-turn runs whose model profile allows 60 requests a
minute, one at a time (``burst = 1``), against a local chat-completions server that counts
what it receives and when. Every window of a minute holds 60 calls, within 5 %. Then the
endpoint answers a storm of ``429`` with ``Retry-After``: one worker receives each, and every
worker holds back until the wait is over.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.engine_support import compile_files, register
from tests.runtime.providers.chat_server import ChatServer, Reply, completion
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

WORKERS = 4
PER_MINUTE = 60

DEFINITIONS = """
model "limited" {
  provider   = "openai"
  base_url   = "BASE_URL"
  model      = "counted"
  parameters = { timeout = 30, max_retries = 0 }
  rate_limit {
    requests = 60
    per      = "1m"
    burst    = 1
  }
}

agent "clerk" {
  model        = model.limited
  instructions = "Answer with JSON only."
}

workflow "one_call" {
  owner = agent.clerk
  start = state.ask

  input "n" {
    type = number
  }

  budget {
    turns       = 50
    model_calls = 5
  }

  state "ask" {
    turn {
      agent  = agent.clerk
      goal   = "Pick a number larger than ${input.n}"
      output = object({ pick = number })
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
"""


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        running.reply(Reply.ok(completion('{"pick": 7}')))
        yield running


def _deploy(
    store: Store, tmp: Path, server: ChatServer, runs: int, per_minute: int = PER_MINUTE
) -> list[str]:
    folder = tmp / "defs"
    folder.mkdir()
    text = DEFINITIONS.replace("BASE_URL", server.base_url)
    text = text.replace("requests = 60", f"requests = {per_minute}")
    (folder / "limited.hcl").write_text(text, encoding="utf-8")
    register(store, compile_files(folder / "limited.hcl"))
    return [
        service.create_objective(
            store, service.StartObjective("one_call", {"n": n}), service.CLI
        ).run.id
        for n in range(runs)
    ]


def _workers(backend: Backend, tmp: Path) -> list[subprocess.Popen[bytes]]:
    return [
        spawn(backend, tmp, "--poll-interval", "0.05", "--worker-id", f"w{i}", log=f"w{i}")
        for i in range(WORKERS)
    ]


def _stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=120)
        finally:
            if worker.poll() is None:
                worker.kill()


def _most_in_a_minute(times: list[float]) -> int:
    """The most calls any window of 60 seconds (from one call on) holds."""
    return max(sum(1 for t in times if start <= t < start + 60) for start in times)


def test_sixty_calls_a_minute_across_four_worker_processes(
    backend: Backend, tmp_path: Path, server: ChatServer
) -> None:
    store = backend.open()
    runs = _deploy(store, tmp_path, server, 75)
    workers = _workers(backend, tmp_path)

    def completed() -> int:
        return [store.runs.get(r).status for r in runs].count(RunStatus.COMPLETED)

    try:
        eventually(lambda: len(server.requests) >= 70 and completed() >= 70, timeout=300)
    finally:
        _stop(workers)
    times = sorted(r.at for r in server.requests)
    first_minute = sum(1 for t in times if t < times[0] + 60)
    # 60 a minute, one at a time: 60 in the minute from the first call (the first itself
    # and one a second), within 5 %, and no minute holds more
    assert abs(first_minute - PER_MINUTE) <= 0.05 * PER_MINUTE, first_minute
    assert _most_in_a_minute(times) <= PER_MINUTE * 1.05
    bodies = [json.dumps(r.body, sort_keys=True) for r in server.requests]
    assert len(bodies) == len(set(bodies))  # each run's call was sent once
    workers_used = {
        w for w in (f"w{i}" for i in range(WORKERS)) if "state=ask" in _log(tmp_path, w)
    }
    assert len(workers_used) >= 2, workers_used  # the limit held across processes


def test_a_429_storm_holds_back_every_worker(
    backend: Backend, tmp_path: Path, server: ChatServer
) -> None:
    store = backend.open()
    limited = Reply.status(429, "slow down", headers={"Retry-After": "5"})
    server.reply(limited, limited, limited, Reply.ok(completion('{"pick": 7}')))
    # one call every 2 s: a worker that took its place before a 429 looks again before it goes
    runs = _deploy(store, tmp_path, server, 8, per_minute=30)
    workers = _workers(backend, tmp_path)
    try:
        eventually(
            lambda: all(store.runs.get(r).status == RunStatus.COMPLETED for r in runs),
            timeout=300,
        )
    finally:
        _stop(workers)
    times = [r.at for r in server.requests]
    # Each 429 held back every worker for its 5 seconds: no worker's call came sooner, so the
    # storm cost one request per Retry-After, not one per worker; after it, one each 2 s.
    for when, after in itertools.pairwise(times[:4]):
        assert after - when >= 5.0, [round(t - times[0], 3) for t in times]
    assert len(server.requests) == 3 + len(runs)
    spent = [store.runs.get(r).budget_used.get("model_calls") for r in runs]
    assert spent == [1] * len(runs)  # a refused call costs no model call


def _log(tmp: Path, name: str) -> str:
    return (tmp / f"{name}.log").read_text(encoding="utf-8", errors="replace")
