"""An archive killed (SIGKILL, a real process) after a batch is written and after its rows
are deleted loses nothing: every run is live, or in a verified batch, or both; the next
archive into the same directory finishes the batch, and every run ends up archived once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.runtime import service
from openseal.runtime.faults import ARCHIVE_POINTS, DIR_ENV, POINT_ENV
from openseal.runtime.lifecycle import archive_format as fmt
from openseal.runtime.lifecycle.restore import restore_archive
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.support import Backend, eventually, new_run

pytestmark = pytest.mark.slow

LAUNCH = "import sys; from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"
RUNS = 12


def archive_process(backend: Backend, to: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        full["OPENSEAL_DATABASE_URL"] = f"{backend.url}?options={options}"
    command = [
        sys.executable, "-c", LAUNCH, "db", "archive", "--home", str(backend.home),
        "--to", str(to), "--batch-size", "4", "--keep-ended-runs", "0s",
    ]  # fmt: skip
    return subprocess.Popen(
        command, env={**full, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def live(store: Store, run_ids: list[str]) -> set[str]:
    return {run.id for run in service.list_runs(store, limit=1000)} & set(run_ids)


@pytest.mark.parametrize("point", ARCHIVE_POINTS)
def test_a_killed_archive_loses_no_run_and_the_next_one_finishes_it(
    backend: Backend, tmp_path: Path, point: str
) -> None:
    store = backend.open()
    runs = [new_run(store).id for _ in range(RUNS)]
    for run_id in runs:
        service.cancel_run(store, service.RunCommand(run_id, reason="ended"), service.CLI)
    to, faults = tmp_path / "archive", tmp_path / "faults"
    faults.mkdir()
    process = archive_process(backend, to, {POINT_ENV: point, DIR_ENV: str(faults)})
    try:
        batch = eventually(
            lambda: (
                (faults / f"{point}.reached").exists() and (faults / f"{point}.reached").read_text()
            ),
            timeout=300,
        )
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    [written] = [b for b in fmt.batches(to) if not b.committed]
    assert written.name == batch and len(written.runs) == 4
    fmt.read_batch(written)  # whole and verified
    still = live(store, runs)
    if point == "archive.written":
        assert set(written.runs) <= still  # in both places
    else:
        assert not set(written.runs) & still  # archived, deleted, not yet marked
    archived = {run for b in fmt.batches(to) for run in b.runs}
    assert archived | still == set(runs)  # nothing in neither

    again = archive_process(backend, to, {})
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    assert live(store, runs) == set()
    every = list(fmt.batches(to))
    assert all(b.committed for b in every)
    assert sorted(run for b in every for run in b.runs) == sorted(runs)  # each once
    assert sorted(restore_archive(store, to).runs) == sorted(runs)
    assert {store.runs.get(run).status for run in runs} == {RunStatus.CANCELED}


def test_a_worker_archives_on_its_schedule_while_it_works(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    runs = [new_run(store).id for _ in range(5)]
    for run_id in runs:
        service.cancel_run(store, service.RunCommand(run_id, reason="ended"), service.CLI)
    to = tmp_path / "archive"
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        full["OPENSEAL_DATABASE_URL"] = f"{backend.url}?options={options}"
    command = [
        sys.executable, "-c", LAUNCH, "worker", "--home", str(backend.home), "--archive-every",
        "1h", "--archive-to", str(to), "--keep-ended-runs", "0s", "--poll-interval", "0.2",
    ]  # fmt: skip
    log = tmp_path / "worker.log"
    with log.open("wb") as err:
        process = subprocess.Popen(command, env=full, stdout=subprocess.DEVNULL, stderr=err)
    try:
        eventually(lambda: "archive: 5 run(s) in 1 batch(es)" in log.read_text(), timeout=300)
        assert live(store, runs) == set()
        assert sorted(r for b in fmt.batches(to) for r in b.runs) == sorted(runs)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_a_server_archives_on_its_schedule(backend: Backend, tmp_path: Path) -> None:
    store = backend.open()
    runs = [new_run(store).id for _ in range(3)]
    for run_id in runs:
        service.cancel_run(store, service.RunCommand(run_id, reason="ended"), service.CLI)
    to = tmp_path / "archive"
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        full["OPENSEAL_DATABASE_URL"] = f"{backend.url}?options={options}"
    command = [
        sys.executable, "-c", LAUNCH, "serve", "--home", str(backend.home), "--port", "0",
        "--archive-every", "1h", "--archive-to", str(to), "--keep-ended-runs", "0s",
    ]  # fmt: skip
    log, out = tmp_path / "serve.log", tmp_path / "serve.out"
    with log.open("wb") as err, out.open("wb") as printed:
        process = subprocess.Popen(command, env=full, stdout=printed, stderr=err)
    try:
        eventually(lambda: "archive: 3 run(s) in 1 batch(es)" in log.read_text(), timeout=300)
        eventually(lambda: "openseal API on" in log.read_text(), timeout=300)  # serving
        assert live(store, runs) == set()
        assert sorted(r for b in fmt.batches(to) for r in b.runs) == sorted(runs)
        process.send_signal(signal.SIGTERM)
        # it stops (the server's library ends by the signal it stopped for)
        assert process.wait(timeout=120) in (0, -signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
