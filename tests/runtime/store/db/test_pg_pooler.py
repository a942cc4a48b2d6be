"""PostgreSQL behind PgBouncer in transaction mode (docs/operations.md, docs/scaling.md).

A PgBouncer of the test's own (tests/runtime/pgbouncer.py) pools a fresh database of the test
server with a few server connections, so every transaction of every process may land on another
server session. Real ``openseal serve`` and ``openseal worker`` processes run procurement runs
through it to the end, approved through the API, with one order per run at the simulator:

* everything through the pooler, ``LISTEN`` included: the wake-ups are lost and idle workers
  find work by polling;
* the split the docs advise: transactions through the pooler, the workers' ``LISTEN`` session
  straight to the server (``OPENSEAL_DATABASE_LISTEN_URL``); with a poll interval and leases
  longer than the test may take, runs only move because notifications sent at the commits
  that went through the pooler reach the listener.

psycopg's prepared statements meet each other's names through a pooler that does not track
them (PgBouncer before 1.21), so the URL turns them off with ``prepare_threshold=none``; without
it the clash is shown too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime import service
from openseal.runtime.providers import CALLS_ENV, RESPONSES_ENV
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import open_store
from openseal.runtime.store.db.errors import POOLED_PREPARED_HINT, describe_fault
from openseal.runtime.store.db.poolers import LISTEN_URL_ENV
from openseal.runtime.store.tables import migrations
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (
    REQUEST,
    TOKEN,
    TOKEN_ENV,
    context_file,
    simulator_fixture,  # noqa: F401
)
from tests.runtime.conftest import postgres_url
from tests.runtime.engine.test_worker_process import LAUNCH
from tests.runtime.engine_support import PROCUREMENT, compile_files, register
from tests.runtime.pgbouncer import Pooler, pgbouncer
from tests.runtime.quickstart_support import SCRIPT
from tests.runtime.serve_process import serve_process
from tests.runtime.support import eventually

#: bound on anything the processes must get done (a loaded machine)
GUARD = 180.0
#: what the URL through the pooler carries: no prepared statements
NO_PREPARED = "prepare_threshold=none"
POOL_SIZE = 4
RUNS = 6


@pytest.fixture
def database(pg_admin: sa.Engine) -> Iterator[str]:
    """A fresh database on the test server (the pooler serves whole databases), dropped
    afterwards with whatever is still connected to it."""
    name = f"openseal_pool_{uuid.uuid4().hex[:12]}"
    admin = pg_admin.execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def pooler(pg_admin: sa.Engine) -> Iterator[Pooler]:
    with pgbouncer(postgres_url(), pool_size=POOL_SIZE) as started:
        yield started


def direct_url(database: str) -> str:
    return sa.make_url(postgres_url()).set(database=database).render_as_string(False)


class Deployment:
    """``serve`` and workers with the environment ``env``, their logs under ``tmp``."""

    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.env, self.tmp = env, tmp
        self.home = tmp / "home"
        self.api = self.secret = ""

    def spawn(
        self, *args: str, log: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        stderr = (self.tmp / f"{log}.log").open("ab")
        return subprocess.Popen([sys.executable, "-c", LAUNCH, *args], env=env or self.env,
                                stdout=subprocess.PIPE, stderr=stderr)  # fmt: skip

    def openseal(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", LAUNCH, *args]
        return subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=GUARD, check=False
        )

    def post(self, path: str, body: dict[str, object], key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.secret}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return httpx.post(f"{self.api}{path}", json=body, headers=headers, timeout=GUARD)

    def logs(self) -> str:
        return "".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                       for p in sorted(self.tmp.glob("*.log")))  # fmt: skip


def _deployment(url: str, tmp: Path, simulator: ProcurementSimulator) -> Deployment:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    env.update({
        "OPENSEAL_DATABASE_URL": url, TOKEN_ENV: TOKEN, RESPONSES_ENV: str(SCRIPT),
        CALLS_ENV: str(tmp / "calls.jsonl"),
        "OPENSEAL_CONTEXT": str(context_file(tmp, simulator)),
    })  # fmt: skip
    d = Deployment(env, tmp)
    d.home.mkdir()
    (d.home / "approvals.yaml").write_text("local_operator: true\n", encoding="utf-8")
    # The schema is migrated through the pooler (indexes built CONCURRENTLY included).
    upgraded = d.openseal("db", "upgrade", "-o", "json")
    assert upgraded.returncode == 0, upgraded.stderr
    assert json.loads(upgraded.stdout) == {"revision": migrations.head_revision()}
    return d


def _run_procurements(d: Deployment, url: str, simulator: ProcurementSimulator) -> None:
    """Start :data:`RUNS` runs through the API, approve each through it, and check every run
    completed with one order at the simulator under its action's key."""
    store = open_store(url, home=d.home)
    try:
        register(store, compile_files(*sorted(PROCUREMENT.glob("*.hcl"))))
        runs = []
        for _ in range(RUNS):
            body = {"workflow": "procure_laptops", "inputs": REQUEST}
            answer = d.post("/objectives", body, key=uuid.uuid4().hex)
            assert answer.status_code in (200, 201), answer.text
            runs.append(str(answer.json()["run"]["id"]))

        def approved_all() -> bool:
            for approval in service.list_approvals(store, status="pending"):
                body = {"decision": "approve", "hash": approval.proposal_hash}
                answer = d.post(f"/approvals/{approval.id}/decision", body)
                assert answer.status_code == 200, answer.text
            return all(store.runs.get(r).status == RunStatus.COMPLETED for r in runs)

        try:
            eventually(approved_all, timeout=GUARD)
        except AssertionError:
            states = {r: store.runs.get(r).status for r in runs}
            raise AssertionError(f"runs not completed: {states}\n{d.logs()}") from None
        actions = service.list_actions(store, limit=1000)
        assert len(actions) == RUNS
        assert all(a.status == ActionStatus.SUCCEEDED for a in actions)
        orders = simulator.orders()
        assert len(orders) == RUNS
        assert {o["idempotency_key"] for o in orders} == {a.key for a in actions}
    finally:
        store.close()


def _server_sessions(pg_admin: sa.Engine, database: str) -> int:
    with pg_admin.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = :db"
        return int(conn.execute(sa.text(query), {"db": database}).scalar_one())


def _stop(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        process.kill()
        process.wait(timeout=GUARD)


@pytest.mark.slow
def test_serve_and_workers_run_procurements_to_the_end_through_a_transaction_pooler(
    simulator: ProcurementSimulator,
    pooler: Pooler,
    database: str,
    pg_admin: sa.Engine,
    tmp_path: Path,
) -> None:
    url = f"{pooler.url(database)}?{NO_PREPARED}"
    d = _deployment(url, tmp_path, simulator)
    # Wake-ups through the pooler are lost: the workers poll, briefly, to find work.
    options = ["--concurrency", "3", "--poll-interval", "0.2", "--home", str(d.home)]
    workers = [d.spawn("worker", "--worker-id", f"w{i}", *options, log=f"w{i}")
               for i in range(2)]  # fmt: skip
    try:
        with serve_process(d.spawn, d.home, d.logs) as served:
            d.api, d.secret = served.api, served.secret
            _run_procurements(d, url, simulator)
            # Three processes with pools of their own shared the pooler's few server sessions.
            assert _server_sessions(pg_admin, database) <= POOL_SIZE
            assert served.process.poll() is None, d.logs()
        assert all(w.poll() is None for w in workers), d.logs()
    finally:
        _stop(*workers)


@pytest.mark.slow
def test_workers_listen_on_the_server_itself_while_their_transactions_go_through_the_pooler(
    simulator: ProcurementSimulator,
    pooler: Pooler,
    database: str,
    pg_admin: sa.Engine,
    tmp_path: Path,
) -> None:
    url = f"{pooler.url(database)}?{NO_PREPARED}"
    d = _deployment(url, tmp_path, simulator)
    # Polling and lease expiry would find work only after the test's bound: every step of
    # the runs is found by a notification.
    options = ["--concurrency", "3", "--poll-interval", "3600", "--lease-seconds", "3600",
               "--home", str(d.home)]  # fmt: skip
    listening = {**d.env, LISTEN_URL_ENV: direct_url(database)}
    workers = [d.spawn("worker", "--worker-id", f"w{i}", *options, log=f"w{i}", env=listening)
               for i in range(2)]  # fmt: skip
    try:
        with serve_process(d.spawn, d.home, d.logs) as served:
            d.api, d.secret = served.api, served.secret
            _run_procurements(d, url, simulator)
            # The pooler's sessions, and one LISTEN session of each worker beside them.
            assert _server_sessions(pg_admin, database) <= POOL_SIZE + len(workers)
            with pg_admin.connect() as conn:
                query = sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
                    "AND application_name LIKE 'openseal\\_runs\\_%'"
                )
                listens = conn.execute(query, {"db": database}).scalar_one()
            assert listens == len(workers)
        assert all(w.poll() is None for w in workers), d.logs()
    finally:
        _stop(*workers)


def test_prepared_statements_clash_through_the_pooler_unless_turned_off(
    pooler: Pooler, database: str, tmp_path: Path
) -> None:
    direct = open_store(direct_url(database), home=tmp_path, auto_migrate=True)
    direct.close()

    def hammer(url: str) -> list[str]:
        """Threads each reading many times through the pooler: what failed."""
        store = open_store(url, home=tmp_path)
        failures: list[str] = []

        def read() -> None:
            for _ in range(20):
                try:
                    store.runs.queued("w", up_to=5)
                    store.recoveries.active()
                except (StoreError, sa.exc.DBAPIError) as exc:
                    failures.append(describe_fault(exc))

        threads = [threading.Thread(target=read) for _ in range(8)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(GUARD)
        finally:
            store.close()
        return failures

    clashed = hammer(pooler.url(database))
    # each failure, as a worker logs it, says what to do
    odd = [f for f in clashed if POOLED_PREPARED_HINT not in f]
    assert clashed and not odd, set(odd)
    assert hammer(f"{pooler.url(database)}?{NO_PREPARED}") == []


def test_the_listen_url_must_name_postgresql_under_a_postgresql_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    monkeypatch.setenv(LISTEN_URL_ENV, "postgresql+psycopg://postgres@127.0.0.1/test")
    with pytest.raises(StoreError, match=f"{LISTEN_URL_ENV} is for a PostgreSQL store"):
        open_store(home=tmp_path)
    monkeypatch.setenv("OPENSEAL_DATABASE_URL", postgres_url())
    monkeypatch.setenv(LISTEN_URL_ENV, f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(StoreError, match="must name the PostgreSQL server itself"):
        open_store(home=tmp_path)
    with pytest.raises(StoreError, match="prepare_threshold must be a count of runs or none"):
        open_store(f"{postgres_url()}?prepare_threshold=sometimes", home=tmp_path)


def test_a_pooled_connection_drops_notifications_meant_for_another_session(
    pg_admin: sa.Engine, tmp_path: Path
) -> None:
    # What a transaction pooler does: a server session that listened serves a pooled connection.
    store = open_store(postgres_url(), home=tmp_path, auto_migrate=True)
    raw = store.engine.raw_connection()
    try:
        conn = raw.driver_connection
        assert conn is not None
        conn.execute("LISTEN stray")
        with pg_admin.begin() as sender:
            sender.execute(sa.text("NOTIFY stray, 'a run'"))
        conn.execute("SELECT 1")  # the notification arrives with this reply
        with warnings.catch_warnings():  # notifies() beside a handler: what it finds is all
            warnings.simplefilter("ignore", RuntimeWarning)
            kept = list(conn.notifies(timeout=0))
        assert kept == []
        conn.execute("UNLISTEN stray")
    finally:
        raw.close()
        store.close()
