"""A worker process SIGKILLed between its model call's rate-limit place and the call (both
backends, real worker processes, a local chat-completions server that counts what it receives).

At ``model.placed`` the call's budget is reserved and its place in the profile's shared limit
taken, both committed, and nothing is sent. The worker is killed there. The place stays spent
(the limit errs towards sending less), a second worker takes the run over once the lease has
expired, counts the dead worker's call as spent (``activity.lost``), takes a new place and
sends the call once; the hour's two places are then used up, and the next run sleeps instead of
sending a third call. A worker batching commits (``--batch-size 2``) takes its place in a
transaction of its own on PostgreSQL; one that does not takes it with the reservation.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, MODEL_POINT, POINT_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.engine_support import compile_files, register
from tests.runtime.flow.test_rate_limit_workers import DEFINITIONS
from tests.runtime.providers.chat_server import ChatServer, Reply, completion
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

KEY = "model:limited"
#: two calls an hour, both at once: a place is 30 minutes of the limit's clock
PLACE = 1800.0


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        running.reply(Reply.ok(completion('{"pick": 7}')))
        yield running


def _deploy(store: Store, tmp: Path, server: ChatServer) -> None:
    folder = tmp / "defs"
    folder.mkdir()
    text = DEFINITIONS.replace("BASE_URL", server.base_url).replace('per      = "1m"', 'per = "1h"')
    text = text.replace("requests = 60", "requests = 2").replace("burst    = 1", "burst = 2")
    (folder / "limited.hcl").write_text(text, encoding="utf-8")
    register(store, compile_files(folder / "limited.hcl"))


def _start(store: Store, n: int) -> str:
    request = service.StartObjective("one_call", {"n": n})
    run = service.create_objective(store, request, service.CLI).run
    assert run is not None
    return run.id


def _worker(
    backend: Backend, tmp: Path, name: str, batch: str, **env: str
) -> subprocess.Popen[bytes]:
    options = ("--lease-seconds", "1", "--poll-interval", "0.05", "--batch-size", batch)
    return spawn(backend, tmp, *options, "--worker-id", name, env=env, log=name)


def _end(worker: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if worker.poll() is None:
        worker.send_signal(sig)
    try:
        worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.parametrize("batch", ["1", "2"])
def test_a_worker_killed_after_its_place_is_taken_has_spent_it_and_the_call_goes_once(
    backend: Backend, tmp_path: Path, server: ChatServer, batch: str
) -> None:
    store = backend.open()
    _deploy(store, tmp_path, server)
    first = _start(store, 1)
    reached = tmp_path / f"{MODEL_POINT}.reached"
    env = {POINT_ENV: MODEL_POINT, DIR_ENV: str(tmp_path)}
    doomed = _worker(backend, tmp_path, "doomed", batch, **env)
    try:
        eventually(reached.exists, timeout=60)
    finally:
        _end(doomed, signal.SIGKILL)
    assert reached.read_text(encoding="utf-8") == first
    assert server.requests == []
    # the place is spent with the committed reservation, though nothing was sent
    assert PLACE - 60 < store.rate_limits.due_in(KEY) <= PLACE
    assert store.runs.get(first).budget_used["model_calls"] == 1

    rescuer = _worker(backend, tmp_path, "rescuer", batch)
    try:
        eventually(lambda: store.runs.get(first).status == RunStatus.COMPLETED, timeout=60)
        # the call went once, from the rescuer; the dead worker's attempt is not hidden: its
        # reservation is closed as spent, with an event
        assert len(server.requests) == 1
        events = store.runs.events(first, 0, 10_000)
        lost = [e.payload for e in events if e.type == "activity.lost"]
        assert [p["spent"]["model_calls"] for p in lost] == [1]
        assert store.runs.get(first).budget_used["model_calls"] == 2
        # two places taken: the hour's burst is used up
        assert 2 * PLACE - 60 < store.rate_limits.due_in(KEY) <= 2 * PLACE

        # had the dead worker's place been given back, this run's call would go now
        second = _start(store, 2)

        def asleep() -> bool:
            run = store.runs.get(second)
            return run.status == RunStatus.SLEEPING and run.waiting is not None

        eventually(asleep, timeout=60)
    finally:
        _end(rescuer, signal.SIGTERM)
    waiting = store.runs.get(second).waiting
    assert waiting is not None and waiting["code"] == "over_rate_limit"
    assert len(server.requests) == 1
    assert store.runs.get(second).budget_used.get("model_calls", 0) == 0
