"""The seed's test of invariant 18, with real backups, restores and worker processes.

A run waits for its purchase order's approval; the store is backed up (SQLite: ``openseal db
backup`` while the store is open; PostgreSQL: ``pg_dump``); the order is then approved, sent
and confirmed at the procurement simulator. The old backup is restored (``openseal db
restore``; ``pg_restore`` into a fresh database and ``openseal db recovery start``) and worker
processes are started: they claim nothing while ``openseal db recovery reconcile`` finds the
order by its key; once recovery is finished and the approval asked again is given, the run
completes with that order, which is never sent again: exactly one order exists at the
simulator, and it received exactly one ``POST /orders``. Also with the reply to that order
lost, and with the simulator down while recovery looks (recovery waits; nothing is sent).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store, open_store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    TOKEN,
    TOKEN_ENV,
    context_file,
    flow,
    simulator_fixture,
)
from tests.runtime.engine.test_worker_process import LAUNCH, spawn, store_env
from tests.runtime.lifecycle.recovery_support import approve, posts, waiting_for_approval
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

#: a hang guard only
WAIT = 300.0


@dataclass
class Restored:
    """The restored store: where a process finds it (environment, ``--home``)."""

    env: dict[str, str]
    home: Path

    def openseal(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, *args, "--home", str(self.home)],
            env=self.env, capture_output=True, text=True, timeout=WAIT,
        )  # fmt: skip
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def open(self) -> Store:
        url = self.env.get("OPENSEAL_DATABASE_URL")
        return open_store(url, home=self.home) if url else open_store(home=self.home)


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def fresh_database(backend: Backend) -> Iterator[str | None]:
    """A new PostgreSQL database for ``pg_restore`` to fill (dropped afterwards); None on
    SQLite."""
    if backend.url is None:
        yield None
        return
    name = f"restored_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(backend.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield name
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _backup(backend: Backend, store: Store, tmp: Path) -> Path:
    if backend.url is None:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, "db", "backup", str(tmp / "backup"),
             "--home", str(backend.home)],
            env=store_env(backend), capture_output=True, text=True, timeout=WAIT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return tmp / "backup"
    dump = tmp / "backup.dump"
    subprocess.run(
        ["pg_dump", "-Fc", "-n", str(backend.pg_schema), "-f", str(dump), _libpq(backend.url)],
        check=True, timeout=WAIT,
    )  # fmt: skip
    return dump


def _restore(backend: Backend, backup: Path, database: str | None, tmp: Path) -> Restored:
    if backend.url is None or database is None:
        restored = Restored(store_env(backend), backend.home)
        done = restored.openseal("db", "restore", str(backup), "--replace")
        assert "in recovery mode" in done.stdout
        return restored
    target = backend.url.rsplit("/", 1)[0] + f"/{database}"
    subprocess.run(
        ["pg_restore", "--no-owner", "-d", _libpq(target), str(backup)], check=True, timeout=WAIT
    )
    env = store_env(backend)
    options = quote(f"-csearch_path={backend.pg_schema}")
    env["OPENSEAL_DATABASE_URL"] = f"{target}?options={options}"
    restored = Restored(env, tmp / "restored-home")
    check = restored.openseal("db", "backup", "--check", check=False)
    assert check.returncode == 1 and "not in recovery mode" in check.stderr
    restored.openseal("db", "recovery", "start")
    assert "consistent" in restored.openseal("db", "backup", "--check").stdout
    return restored


def _log(tmp: Path, name: str) -> str:
    path = tmp / f"{name}.log"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


@pytest.mark.parametrize("fault", ["none", "reply_lost", "destination_down"])
def test_a_restored_store_finds_the_confirmed_order_and_never_sends_it_again(
    backend: Backend,
    simulator: ProcurementSimulator,
    fresh_database: str | None,
    tmp_path: Path,
    fault: str,
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, action = waiting_for_approval(f)
    backup = _backup(backend, store, tmp_path)

    # After the backup point: approved, sent, confirmed (its reply lost: found by lookup).
    approve(store, run)
    if fault == "reply_lost":
        simulator.set_fault(drop_response_after_create=1)
    eventually(lambda: f.run_until_idle() or f.status(run) == RunStatus.COMPLETED, timeout=WAIT)
    [order] = simulator.orders()
    assert order["idempotency_key"] == action.key
    assert posts(simulator) == 1
    backend.close_all()

    restored = _restore(backend, backup, fresh_database, tmp_path)
    env = {
        **restored.env,
        TOKEN_ENV: TOKEN,
        "OPENSEAL_CONTEXT": str(context_file(tmp_path, simulator)),
    }
    restored.env = env
    if fault == "destination_down":
        simulator.set_fault(fail_with_status=503, fail_scope="all")
    workers = [
        spawn(Backend(backend.name, None, restored.home, None), tmp_path,
              "--poll-interval", "0.2", "--lease-seconds", "2", env=env, log=f"w{i}")
        for i in range(2)
    ]  # fmt: skip
    try:
        for i in range(2):
            eventually(lambda i=i: "recovery mode" in _log(tmp_path, f"w{i}"), timeout=WAIT)
        if fault == "destination_down":
            pending = json.loads(
                restored.openseal("db", "recovery", "reconcile", "-o", "json").stdout
            )
            assert pending["report"]["pending"] == 1
            refused = restored.openseal("db", "recovery", "finish", check=False)
            assert refused.returncode == 1 and "still pending" in refused.stderr
            assert posts(simulator) == 1
            simulator.set_fault(fail_with_status=None)
        found = json.loads(restored.openseal("db", "recovery", "reconcile", "-o", "json").stdout)
        [finding] = found["report"]["actions"]
        assert finding["outcome"] == "found" and finding["after"] == "succeeded"
        assert finding["result"]["order_id"] == order["order_id"]
        [asked] = found["report"]["approvals"]
        assert asked["run_id"] == run.id
        report = restored.openseal("db", "recovery", "report").stdout
        assert order["order_id"] in report and "is asked again" in report
        restored.openseal("db", "recovery", "finish")

        again = restored.open()
        try:
            approve(again, run)  # the decision after the backup point is gone: asked again
            eventually(lambda: again.runs.get(run.id).status == RunStatus.COMPLETED, timeout=WAIT)
            outputs: dict[str, Any] = again.runs.get(run.id).context["outputs"]
            [recorded] = service.list_actions(again, run_id=run.id)
        finally:
            again.close()
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(timeout=WAIT)
    assert outputs == {"order_id": order["order_id"]}
    assert recorded.result["order_id"] == order["order_id"]
    assert [o["order_id"] for o in simulator.orders()] == [order["order_id"]]
    assert posts(simulator) == 1  # the order was never sent again
    for i in range(2):
        log = _log(tmp_path, f"w{i}")
        assert log.count("in recovery mode after a restore") == 1, log
    shutil.rmtree(tmp_path / "backup", ignore_errors=True)
