"""PostgreSQL loses its primary mid-run and the synchronous standby is promoted.

Real ``openseal worker`` processes and ``openseal serve`` reach the database through one URL
naming both servers (``target_session_attrs=read-write``). Runs are in flight, some orders
held at the procurement simulator, when the primary's postmaster is SIGKILLed. ``/readyz``
says not ready while no server takes writes; the standby is promoted; everything committed
before the kill is on it (synchronous replication), the workers and the server carry on by
themselves, every run completes and the simulator holds exactly one order per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from openseal.runtime import service
from openseal.runtime.providers import CALLS_ENV, RESPONSES_ENV
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Store, open_store
from openseal.runtime.store.tables import migrations
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (
    REQUEST,
    TOKEN,
    TOKEN_ENV,
    context_file,
    simulator_fixture,  # noqa: F401
)
from tests.runtime.engine.test_worker_process import LAUNCH
from tests.runtime.engine_support import PROCUREMENT, compile_files, register
from tests.runtime.pg_cluster import PgPair, pg_pair
from tests.runtime.quickstart_support import SCRIPT
from tests.runtime.serve_process import serve_process
from tests.runtime.support import eventually

pytestmark = pytest.mark.slow

#: bound on anything that must happen after the failover (a loaded machine)
GUARD = 180.0
#: short deadlines, so a connection to the dead primary is given up quickly
DEADLINES = "&connect_timeout=3&openseal_reply_timeout=10"
RUNS_BEFORE, RUNS_AFTER = 6, 2


@dataclass
class Deployment:
    """Workers and a server over the pair, the store the test reads it through, the API."""

    pair: PgPair
    store: Store
    env: dict[str, str]
    tmp: Path
    api: str = ""
    secret: str = ""

    def spawn(self, *args: str, log: str) -> subprocess.Popen[bytes]:
        stderr = (self.tmp / f"{log}.log").open("ab")
        return subprocess.Popen([sys.executable, "-c", LAUNCH, *args], env=self.env,
                                stdout=subprocess.PIPE, stderr=stderr)  # fmt: skip

    def post(self, path: str, body: dict[str, Any], key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.secret}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return httpx.post(f"{self.api}{path}", json=body, headers=headers, timeout=GUARD)

    def logs(self) -> str:
        return "".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                       for p in sorted(self.tmp.glob("*.log")))  # fmt: skip


def approve_through_the_api(d: Deployment) -> int:
    """Approve every pending approval through ``serve``; how many it took (a request that
    fails while the database is away is tried again at the next poll)."""
    approved = 0
    for approval in service.list_approvals(d.store, status="pending"):
        body = {"decision": "approve", "hash": approval.proposal_hash}
        try:
            answer = d.post(f"/approvals/{approval.id}/decision", body)
        except httpx.TransportError:
            continue
        approved += answer.status_code == 200
        if answer.status_code != 200:  # shown with the logs if the test fails
            with (d.tmp / "decisions.log").open("a", encoding="utf-8") as log:
                log.write(f"{answer.status_code} {answer.text}\n")
    return approved


def ready(d: Deployment) -> int:
    return httpx.get(f"{d.api.removesuffix('/api/v1')}/readyz", timeout=GUARD).status_code


def events_of(store: Store, run_ids: list[str]) -> dict[str, list[tuple[int, str]]]:
    return {
        run_id: [(e.seq, e.type) for e in store.runs.events(run_id, limit=10_000)]
        for run_id in run_ids
    }


def test_workers_and_the_server_carry_on_after_the_primary_dies_and_the_standby_is_promoted(
    simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    with pg_pair() as pair:
        url = pair.url() + DEADLINES
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
        env.update({
            "OPENSEAL_DATABASE_URL": url, TOKEN_ENV: TOKEN, RESPONSES_ENV: str(SCRIPT),
            CALLS_ENV: str(tmp_path / "calls.jsonl"),
            "OPENSEAL_CONTEXT": str(context_file(tmp_path, simulator)),
        })  # fmt: skip
        # The schema is migrated through the URL naming both servers.
        upgraded = subprocess.run(
            [sys.executable, "-c", LAUNCH, "db", "upgrade", "-o", "json"],
            env=env, capture_output=True, text=True, timeout=GUARD, check=False,
        )  # fmt: skip
        assert upgraded.returncode == 0, upgraded.stderr
        assert json.loads(upgraded.stdout) == {"revision": migrations.head_revision()}
        home = tmp_path / "home"
        home.mkdir()
        (home / "approvals.yaml").write_text("local_operator: true\n", encoding="utf-8")
        store = open_store(url, home=home)
        try:
            d = Deployment(pair, store, env, tmp_path)
            register(store, compile_files(*sorted(PROCUREMENT.glob("*.hcl"))))
            with serve_process(d.spawn, home, d.logs) as served:
                d.api, d.secret = served.api, served.secret
                _ride_out_the_failover(d, served.process, simulator)
        finally:
            store.close()


def _ride_out_the_failover(
    d: Deployment, server: subprocess.Popen[bytes], simulator: ProcurementSimulator
) -> None:
    options = ["--concurrency", "3", "--lease-seconds", "2", "--poll-interval", "0.05"]
    home = str(d.tmp / "home")
    workers = [
        d.spawn("worker", "--home", home, "--worker-id", f"w{i}", *options, log=f"w{i}")
        for i in range(2)
    ]
    try:
        runs = [_start(d.store) for _ in range(RUNS_BEFORE)]

        def all_waiting() -> bool:
            return all(d.store.runs.get(r).status == RunStatus.WAITING_FOR_APPROVAL for r in runs)

        eventually(all_waiting, timeout=GUARD)
        # Orders are held at the simulator, so some are in flight when the primary dies.
        simulator.set_fault(hold_create_seconds=3)

        def all_approved() -> bool:
            approve_through_the_api(d)
            return not service.list_approvals(d.store, status="pending")

        eventually(all_approved, timeout=GUARD)
        eventually(lambda: simulator.stats()["in_flight"], timeout=GUARD)
        before = events_of(d.store, runs)
        decided = {a.id: a.status for a in service.list_approvals(d.store, limit=1000)}
        actions = {a.id: a.key for a in service.list_actions(d.store, limit=1000)}
        assert decided and actions

        d.pair.kill_primary()
        # No server takes writes: the server says so.
        eventually(lambda: ready(d) == 503, timeout=GUARD)
        d.pair.promote()
        eventually(lambda: ready(d) == 200, timeout=GUARD)
        simulator.set_fault(hold_create_seconds=0)

        # The server accepts new work on the new primary (retried with one key until it does).
        for _ in range(RUNS_AFTER):
            key = uuid.uuid4().hex
            runs.append(eventually(partial(_created, d, key), timeout=GUARD))

        def all_completed() -> bool:
            approve_through_the_api(d)
            return all(d.store.runs.get(r).status == RunStatus.COMPLETED for r in runs)

        try:
            eventually(all_completed, timeout=GUARD)
        except AssertionError:
            states = {r: d.store.runs.get(r).status for r in runs}
            raise AssertionError(f"runs not completed: {states}\n{d.logs()}") from None

        # Everything committed before the kill is there, unchanged.
        after = events_of(d.store, runs[:RUNS_BEFORE])
        for run_id, events in before.items():
            assert after[run_id][: len(events)] == events, run_id
        now = {a.id: a for a in service.list_approvals(d.store, limit=1000)}
        for approval_id, status in decided.items():
            assert status == ApprovalStatus.PENDING or now[approval_id].status == status
        settled = {a.id: a for a in service.list_actions(d.store, limit=1000)}
        for action_id, key in actions.items():
            assert settled[action_id].key == key
        assert len(settled) == len(runs)
        assert all(a.status == ActionStatus.SUCCEEDED for a in settled.values())
        # No effect twice: one order per run, each under its action's key.
        orders = simulator.orders()
        assert len(orders) == len(runs)
        assert {o["idempotency_key"] for o in orders} == {a.key for a in settled.values()}
        # The processes carried on by themselves.
        assert all(w.poll() is None for w in workers), d.logs()
        assert server.poll() is None, d.logs()
    finally:
        for w in workers:
            w.kill()
            w.wait(timeout=GUARD)


def _start(store: Store) -> str:
    request = service.StartObjective("procure_laptops", REQUEST)
    run = service.create_objective(store, request, service.CLI).run
    assert run is not None
    return run.id


def _created(d: Deployment, key: str) -> str | None:
    body = {"workflow": "procure_laptops", "inputs": REQUEST}
    try:
        answer = d.post("/objectives", body, key=key)
    except httpx.TransportError:
        return None
    if answer.status_code not in (200, 201):  # shown with the logs if the test fails
        with (d.tmp / "objectives.log").open("a", encoding="utf-8") as log:
            log.write(f"{answer.status_code} {answer.text}\n")
        return None
    return str(answer.json()["run"]["id"])
