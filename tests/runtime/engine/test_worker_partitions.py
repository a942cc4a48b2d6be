"""``openseal worker`` processes and a PostgreSQL that goes silent (invariant 13).

Real worker processes reach PostgreSQL through the fault proxy; its blackhole keeps every
connection open and forwards nothing, mid-stream on busy connections and on new ones. After the
partition, runs created later must be claimed; SIGTERM must end a worker within its drain bound
even when the database never answers; a worker started while the database is unreachable
waits for it instead of exiting.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.providers import RESPONSES_ENV
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Run, Store, open_store
from tests.faultproxy import TcpProxy
from tests.runtime.conftest import postgres_url
from tests.runtime.engine.test_worker_process import LAUNCH
from tests.runtime.engine_support import PICK_7, register, small_workflow, write_script
from tests.runtime.support import eventually

pytestmark = pytest.mark.slow

#: generous bound on what must happen after a deadline of a few seconds (a loaded machine)
GUARD = 120.0
#: the deadlines the workers' URL sets (the others keep their defaults)
DEADLINES = "openseal_reply_timeout=2&connect_timeout=2"


@dataclass
class Cluster:
    """Worker processes whose database is behind a proxy, and a store that reaches it
    directly."""

    direct: Store
    proxy: TcpProxy
    url: str
    home: Path
    tmp: Path

    def spawn(self, *args: str, log: str, query: str = DEADLINES) -> subprocess.Popen[bytes]:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")},
            "OPENSEAL_DATABASE_URL": f"{self.url}&{query}",
            RESPONSES_ENV: str(self.tmp / "responses.yaml"),
        }
        command = [sys.executable, "-c", LAUNCH, "worker", "--home", str(self.home), *args]
        stderr = (self.tmp / f"{log}.log").open("wb")
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def create(self, n: int) -> Run:
        request = service.StartObjective("small", {"n": n})
        run = service.create_objective(self.direct, request, service.CLI).run
        assert run is not None
        return run

    def all_waiting(self, runs: list[Run]) -> bool:
        return all(
            self.direct.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT for run in runs
        )


@pytest.fixture
def cluster(pg_admin: sa.Engine, tmp_path: Path) -> Iterator[Cluster]:
    schema_name = f"t_{uuid.uuid4().hex[:16]}"
    with pg_admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema_name}"'))
    search_path = quote(f"-csearch_path={schema_name}")
    home = tmp_path / "home"
    direct = open_store(f"{postgres_url()}?options={search_path}", home=home, auto_migrate=True)
    register(direct, small_workflow(tmp_path))
    write_script(tmp_path / "responses.yaml", PICK_7)
    proxy, through = TcpProxy.for_url(postgres_url())
    try:
        yield Cluster(direct, proxy, f"{through}?options={search_path}", home, tmp_path)
    finally:
        proxy.close()
        direct.close()
        with pg_admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema_name}" CASCADE'))


def stop(worker: subprocess.Popen[bytes]) -> int:
    """SIGTERM, and the exit code (the worker must exit within the guard)."""
    worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(timeout=GUARD)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_busy_workers_recover_from_a_silent_partition_and_claim_the_runs_created_after_it(
    cluster: Cluster,
) -> None:
    args = ("--concurrency", "4", "--lease-seconds", "6", "--poll-interval", "0.2")
    workers = [cluster.spawn(*args, log=f"w{i}") for i in range(2)]
    started = time.monotonic()
    try:
        before = [cluster.create(n) for n in range(3)]
        eventually(lambda: cluster.all_waiting(before), timeout=GUARD)
        # busy: runs are being claimed, batched and committed when the partition begins
        during = [cluster.create(n) for n in range(-8, 0)]
        cluster.proxy.blackhole()
        felt = "no reply from the database server"  # both felt it: a wait ran out
        eventually(lambda: all(felt in cluster.log(name) for name in ("w0", "w1")), timeout=GUARD)
        cluster.proxy.blackhole(False)
        after = [cluster.create(n) for n in range(3, 6)]
        eventually(lambda: cluster.all_waiting(before + during + after), timeout=GUARD)
        assert [stop(worker) for worker in workers] == [0, 0]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    lived = time.monotonic() - started
    for name in ("w0", "w1"):
        log = cluster.log(name)
        assert "Traceback" not in log
        assert "the database answers again" in log
        assert log.rstrip().endswith("stopped")
        # one line per beat (a third of the lease) while the database is away, not one per
        # thread, per held run or per retry
        faults = [line for line in log.splitlines() if "database" in line or "heartbeat" in line]
        assert len(faults) <= lived / 2 + 4, faults


def test_sigterm_ends_a_worker_within_its_drain_bound_while_the_database_never_answers(
    cluster: Cluster,
) -> None:
    # no reply deadline at all: only the drain bound can end the threads' waits
    worker = cluster.spawn(
        "--concurrency", "2", "--poll-interval", "0.2", "--drain-seconds", "2",
        log="w", query="openseal_reply_timeout=0&connect_timeout=2",
    )  # fmt: skip
    try:
        run = cluster.create(5)
        eventually(lambda: cluster.all_waiting([run]), timeout=GUARD)
        cluster.proxy.blackhole()
        cluster.create(6)
        # a worker's next statement (its poll) has gone into the blackhole: it now waits for
        # a reply that never comes, and only the drain bound can end that wait
        eventually(lambda: cluster.proxy.dropped_up > 0, timeout=GUARD)
        assert stop(worker) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    log = cluster.log("w")
    assert "SIGTERM: draining" in log
    assert "the drain did not end within 2s" in log
    assert "Traceback" not in log


def test_a_worker_started_while_the_database_is_unreachable_waits_for_it(
    cluster: Cluster,
) -> None:
    cluster.proxy.refuse()
    waiting = cluster.spawn("--poll-interval", "0.2", log="waiting")
    stopped = cluster.spawn("--poll-interval", "0.2", log="stopped")
    try:
        retried = ("waiting", "stopped")  # retried, not exited
        eventually(
            lambda: all(cluster.log(name).count("retrying in") >= 2 for name in retried),
            timeout=GUARD,
        )
        assert waiting.poll() is None and stopped.poll() is None
        assert stop(stopped) == 0  # SIGTERM while it waits for the database
        cluster.proxy.refuse(False)
        run = cluster.create(5)
        eventually(lambda: cluster.all_waiting([run]), timeout=GUARD)
        assert stop(waiting) == 0
    finally:
        for worker in (waiting, stopped):
            if worker.poll() is None:
                worker.kill()
    assert "cannot open database" in cluster.log("waiting")
    assert "Traceback" not in cluster.log("waiting") + cluster.log("stopped")
    assert cluster.log("stopped").rstrip().endswith("stopped")
