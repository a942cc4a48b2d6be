"""A rolling upgrade on PostgreSQL: the current release's workers and server keep working while
a newer release migrates the database under them.

The newer release is this package copied with one more migration of the kind an online
upgrade allows (migrations/online.py): a nullable column on ``runs``, filled for the existing
rows in small batches, and an index on it built concurrently. While it runs, runs keep being
created and worked on by the older processes; afterwards they still work on the newer schema,
the older server stays ready, an older worker started anew refuses the newer schema, and a
worker of the newer release takes over.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa

import openseal
from openseal.runtime import service
from openseal.runtime.providers import RESPONSES_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, open_store
from openseal.runtime.store.tables import migrations
from tests.runtime.conftest import postgres_url
from tests.runtime.engine.test_worker_process import LAUNCH
from tests.runtime.engine_support import PICK_7, register, small_workflow, write_script
from tests.runtime.serve_process import serve_process
from tests.runtime.support import eventually

pytestmark = pytest.mark.slow

GUARD = 180.0
#: the newer release's migration; {revision} and {down} filled in
PROBE_MIGRATION = '''"""Runs get a note (a rolling-upgrade test's migration).

Revision ID: {revision}
Revises: {down}
"""

import sqlalchemy as sa
from alembic import op

from openseal.runtime.store.tables.migrations import online

revision = "{revision}"
down_revision = "{down}"
branch_labels = None
depends_on = None

SUMMARY = "add runs.note, fill it in batches and index it concurrently"
LOCKS = "brief"


def upgrade() -> None:
    op.add_column("runs", sa.Column("note", sa.String(length=40), nullable=True))
    online.update_in_batches("runs", "note = 'before'", "note IS NULL", batch_rows=3)
    online.create_index("ix_runs_note", "runs", ["note"])


def downgrade() -> None:
    online.drop_index("ix_runs_note", "runs")
    op.drop_column("runs", "note")
'''


@dataclass
class Release:
    """Processes of one openseal release (``pythonpath``: where its package is). They run in
    the test's folder: ``python -c`` imports from its working directory first."""

    pythonpath: str
    env: dict[str, str]
    tmp: Path
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(self, *args: str, log: str) -> subprocess.Popen[bytes]:
        stderr = (self.tmp / f"{log}.log").open("ab")
        env = {**self.env, "PYTHONPATH": self.pythonpath}
        command = [sys.executable, "-c", LAUNCH, *args]
        process = subprocess.Popen(command, env=env, cwd=self.tmp, stdout=subprocess.PIPE,
                                   stderr=stderr)  # fmt: skip
        self.started.append(process)
        return process

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "PYTHONPATH": self.pythonpath}
        command = [sys.executable, "-c", LAUNCH, *args]
        return subprocess.run(command, env=env, text=True, cwd=self.tmp, capture_output=True,
                              timeout=GUARD, check=False)  # fmt: skip


def newer_release(tmp: Path) -> tuple[str, str]:
    """This package copied with one more migration; where it is and its head revision."""
    root = tmp / "newer"
    package = Path(openseal.__file__).resolve().parent
    shutil.copytree(package, root / "openseal", ignore=shutil.ignore_patterns("__pycache__"))
    head = migrations.head_revision()
    revision = f"{int(head) + 1:04d}"
    versions = root / "openseal/runtime/store/tables/migrations/versions"
    text = PROBE_MIGRATION.format(revision=revision, down=head)
    (versions / f"{revision}_run_notes.py").write_text(text, encoding="utf-8")
    return str(root), revision


@pytest.fixture
def schema_url(pg_admin: sa.Engine) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    with pg_admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
    try:
        yield f"{postgres_url()}?options={quote(f'-csearch_path={name}')}"
    finally:
        with pg_admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{name}" CASCADE'))


def test_the_current_release_keeps_working_while_a_newer_one_migrates(
    schema_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    store = open_store(schema_url, home=home, auto_migrate=True)
    register(store, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", PICK_7)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    env.update(
        {"OPENSEAL_DATABASE_URL": schema_url, RESPONSES_ENV: str(tmp_path / "responses.yaml")}
    )
    current = Release(str(Path(openseal.__file__).resolve().parents[1]), env, tmp_path)
    newer_path, newer_head = newer_release(tmp_path)
    newer = Release(newer_path, env, tmp_path)
    try:
        _roll(store, current, newer, newer_head, home)
    finally:
        for process in current.started + newer.started:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=GUARD)
        store.close()


def _roll(store: Store, current: Release, newer: Release, newer_head: str, home: Path) -> None:
    options = ["--home", str(home), "--concurrency", "2", "--poll-interval", "0.05"]
    workers = [current.spawn("worker", *options, log=f"current{i}") for i in range(2)]
    logs = lambda: "".join(p.read_text(errors="replace") for p in current.tmp.glob("*.log"))  # noqa: E731
    with serve_process(current.spawn, home, logs) as served:
        server, api = served.process, served.root
        runs = [_create(store) for _ in range(12)]
        eventually(lambda: _all_worked(store, runs), timeout=GUARD)

        # Runs keep coming while the newer release migrates.
        stop = threading.Event()
        during: list[str] = []

        def keep_creating() -> None:
            while not stop.wait(0.05):
                during.append(_create(store))

        creator = threading.Thread(target=keep_creating)
        creator.start()
        try:
            upgraded = newer.run("db", "upgrade", "-o", "json")
        finally:
            stop.set()
            creator.join(timeout=GUARD)
        assert upgraded.returncode == 0, upgraded.stderr
        assert f'"revision": "{newer_head}"' in upgraded.stdout
        assert during, "no run was created while the migration ran"

        # The current release goes on, on the newer schema, and its server stays ready.
        after = [_create(store) for _ in range(6)]
        eventually(lambda: _all_worked(store, runs + during + after), timeout=GUARD)
        assert httpx.get(f"{api}/readyz", timeout=GUARD).status_code == 200
        assert all(w.poll() is None for w in workers)
        assert server.poll() is None
        with store.engine.connect() as conn:
            missed = conn.execute(
                sa.text("SELECT count(*) FROM runs WHERE note IS NULL AND id IN :ids").bindparams(
                    sa.bindparam("ids", expanding=True)
                ),
                {"ids": runs},
            ).scalar()
        assert missed == 0  # every run stored before the migration was filled

    # An older worker started now refuses the newer schema; the newer release takes over.
    refused = current.run("worker", *options, "--until-idle")
    assert refused.returncode == 1
    assert f"database schema {newer_head} is newer than this openseal" in refused.stderr
    newer.spawn("worker", *options, log="newer")
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=GUARD) == 0
    last = [_create(store) for _ in range(4)]
    eventually(lambda: _all_worked(store, last), timeout=GUARD)
    for name in ("current0", "current1", "newer"):
        log = (current.tmp / f"{name}.log").read_text(errors="replace")
        assert "Traceback" not in log, log


def _create(store: Store) -> str:
    created = service.create_objective(
        store, service.StartObjective("small", {"n": 3}), service.CLI
    )
    assert created.run is not None
    return created.run.id


def _all_worked(store: Store, runs: list[str]) -> bool:
    return all(store.runs.get(r).status == RunStatus.WAITING_FOR_EVENT for r in runs)
