"""A database fault reaches the operator as one clear line: no traceback, no SQL text."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from tests.runtime.engine.test_worker_process import LAUNCH, store_env
from tests.runtime.support import Backend, new_run


def test_a_lock_timeout_in_a_run_command_is_one_line_and_changes_nothing(
    backend: Backend,
) -> None:
    if backend.name != "postgresql":
        pytest.skip("the row lock held here is PostgreSQL's; SQLite's busy timeout is 10 s")
    store = backend.open()
    run = new_run(store)
    env = store_env(backend)
    options = quote(f"-csearch_path={backend.pg_schema} -clock_timeout=200")
    env["OPENSEAL_DATABASE_URL"] = f"{backend.url}?options={options}"
    with store.engine.connect() as blocker, blocker.begin():
        blocker.execute(sa.text("SELECT id FROM runs WHERE id = :id FOR UPDATE"), {"id": run.id})
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, "runs", "cancel", run.id, "--reason", "test"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: the database is busy or unreachable (LockNotAvailable")
    assert "SELECT" not in done.stderr and "UPDATE" not in done.stderr
    assert store.runs.get(run.id).status == "queued"
