"""``openseal worker`` and ``openseal serve`` stopped by SIGTERM leave ``openseal.db`` alone a
complete copy of the embedded store: the WAL is copied into it and emptied, even while other
processes keep the file open (then closing is not what checkpoints it)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, open_store
from tests.runtime.engine.test_worker_process import LAUNCH, finish
from tests.runtime.engine_support import PICK_7, register, small_workflow, write_script
from tests.runtime.support import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path, tmp_path: Path) -> Iterator[Store]:
    """The test's own store on the file: open all along, as another process's would be."""
    opened = open_store(home=home)
    register(opened, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", PICK_7)
    yield opened
    opened.close()


def _start(home: Path, tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {"OPENSEAL_SCRIPTED_RESPONSES": str(tmp_path / "responses.yaml")}
    out = (tmp_path / "out.log").open("wb")
    err = (tmp_path / "err.log").open("wb")
    command = [sys.executable, "-c", LAUNCH, *args, "--home", str(home)]
    env.update((k, v) for k, v in os.environ.items() if not k.startswith("OPENSEAL_"))
    return subprocess.Popen(command, env=env, stdout=out, stderr=err)


def _alone(home: Path, tmp_path: Path) -> dict[str, str]:
    """The runs' statuses as ``openseal.db`` alone holds them (copied without its WAL)."""
    wal = home / "openseal.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # nothing left outside openseal.db
    copy = tmp_path / "copy.db"
    copy.write_bytes((home / "openseal.db").read_bytes())
    with sqlite3.connect(copy) as connection:
        return dict(connection.execute("SELECT id, status FROM runs").fetchall())


def _create(store: Store, n: int) -> str:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": n}), service.CLI
    ).run
    assert run is not None
    return run.id


def test_a_worker_stopped_by_sigterm_leaves_openseal_db_alone_complete(
    store: Store, home: Path, tmp_path: Path
) -> None:
    worker = _start(home, tmp_path, "worker", "--poll-interval", "0.05")
    try:
        runs = [_create(store, n) for n in range(5)]
        waiting = RunStatus.WAITING_FOR_EVENT
        eventually(lambda: all(store.runs.get(r).status == waiting for r in runs), timeout=60)
        worker.send_signal(signal.SIGTERM)
        assert finish(worker) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    found = _alone(home, tmp_path)
    assert {run: found.get(run) for run in runs} == {run: "waiting_for_event" for run in runs}


def test_serve_stopped_by_sigterm_leaves_openseal_db_alone_complete(
    store: Store, home: Path, tmp_path: Path
) -> None:
    runs = [_create(store, n) for n in range(5)]  # in the WAL: the test's store keeps it open
    assert (home / "openseal.db-wal").stat().st_size > 0
    server = _start(home, tmp_path, "serve", "--port", "0")
    try:
        eventually(lambda: "http://" in (tmp_path / "err.log").read_text(), timeout=60)
        server.send_signal(signal.SIGTERM)
        # uvicorn ends the process by the signal it caught once it has shut down
        assert finish(server) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
    found = _alone(home, tmp_path)
    assert {run: found.get(run) for run in runs} == {run: "queued" for run in runs}
