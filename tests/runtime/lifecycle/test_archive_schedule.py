"""A worker started with ``--until-idle`` and ``--archive-every`` archives once when it is
idle, before it exits, on SQLite and PostgreSQL (its scheduled passes come first only after a
period); in recovery mode that pass is skipped and says so."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.cli.main import main
from openseal.runtime.lifecycle import archive_format as fmt
from tests.runtime.engine_support import PICK_7, register, small_workflow, write_script
from tests.runtime.lifecycle.archive_support import ended_runs, live
from tests.runtime.lifecycle.recovery_support import begin
from tests.runtime.support import Backend


def until_idle(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:  # fmt: skip
    """``openseal worker --until-idle --archive-every 1h`` on ``backend``, archiving into
    ``tmp_path/archive``; what it logged."""
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        monkeypatch.setenv("OPENSEAL_DATABASE_URL", f"{backend.url}?options={options}")
    script = write_script(tmp_path / "responses.json", {"ask": PICK_7["ask"] * 3})
    capsys.readouterr()
    command = ["worker", "--home", str(backend.home), "--until-idle", "--archive-every", "1h",
               "--archive-to", str(tmp_path / "archive"), "--keep-ended-runs", "0s",
               "--poll-interval", "0.05", "--scripted-responses", str(script)]  # fmt: skip
    assert main(command) == 0
    return capsys.readouterr().err


def test_a_worker_until_idle_archives_the_runs_it_ended_before_it_exits(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    store = backend.open()
    register(store, small_workflow(tmp_path))
    canceled = ended_runs(store, 1)
    worked = [  # picking 7 for 9 fails: the worker ends them
        store.objectives.create("acme", "small", {"n": 9}, actor="user:test").run.id
        for _ in range(2)
    ]
    logged = until_idle(backend, tmp_path, capsys, monkeypatch)
    assert logged.count("archive: ") == 1, logged
    assert "archive: 3 run(s) in 1 batch(es)" in logged
    assert logged.index("archive: ") < logged.index(": stopped")
    assert live(store, canceled + worked) == set()
    archived = [r for b in fmt.batches(tmp_path / "archive") for r in b.runs]
    assert sorted(archived) == sorted(canceled + worked)


def test_in_recovery_mode_its_pass_is_skipped_and_says_so(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    store = backend.open()
    runs = ended_runs(store, 2)
    begin(store)
    logged = until_idle(backend, tmp_path, capsys, monkeypatch)
    assert (
        "archive: skipped: the store is in recovery mode after a restore; nothing is archived "
        "until `openseal db recovery finish` (not trying again: the worker exits)"
    ) in logged
    assert live(store, runs) == set(runs)
