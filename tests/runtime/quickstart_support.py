"""The quickstart's flow driven by real worker processes: the example definitions as they are,
the scripted model's responses file, the procurement simulator requiring a token."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.providers import CALLS_ENV, RESPONSES_ENV, read_calls
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import REQUEST, TOKEN, TOKEN_ENV, context_file
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import PROCUREMENT, REPO, compile_files, register
from tests.runtime.support import Backend, eventually

SCRIPT = REPO / "definitions" / "procurement" / "scripts" / "procurement.json"
LOCAL = ApprovalAuthority(local_operator=True)


@dataclass
class Procurement:
    """One store with the example deployed, the simulator, and how to start workers on them."""

    backend: Backend
    store: Store
    sim: ProcurementSimulator
    tmp: Path

    @property
    def calls_file(self) -> Path:
        return self.tmp / "calls.jsonl"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            TOKEN_ENV: TOKEN,
            "OPENSEAL_CONTEXT": str(context_file(self.tmp, self.sim)),
            RESPONSES_ENV: str(SCRIPT),
            CALLS_ENV: str(self.calls_file),
            **extra,
        }

    def worker(self, name: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
        return spawn(
            self.backend, self.tmp, "--worker-id", name, "--poll-interval", "0.05", *args,
            env=self.env(**env), log=name,
        )  # fmt: skip

    def start(self) -> Run:
        return service.create_objective(
            self.store, service.StartObjective("procure_laptops", REQUEST), service.CLI
        ).run

    def status(self, run: Run) -> RunStatus:
        return self.store.runs.get(run.id).status

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(encoding="utf-8", errors="replace")


def procurement(backend: Backend, sim: ProcurementSimulator, tmp: Path) -> Procurement:
    store = backend.open()
    register(store, compile_files(*sorted(PROCUREMENT.glob("*.hcl"))))
    return Procurement(backend, store, sim, tmp)


def approve_pending(store: Store, run_id: str) -> int:
    """Approve, as the local operator on loopback, what the run waits for; how many."""
    pending = service.list_approvals(store, status="pending", run_id=run_id)
    for approval in pending:
        service.decide_approval(
            store,
            LOCAL,
            service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
            service.CLI,
        )
    return len(pending)


def stop(process: subprocess.Popen[bytes]) -> int:
    """Drain a worker with SIGTERM and wait for it."""
    process.send_signal(signal.SIGTERM)
    return finish(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def until(f: Procurement, run: Run, status: RunStatus, *, approve: bool = False) -> None:
    """Poll until the run has ``status``, approving pending approvals on the way if asked."""

    def reached() -> bool:
        if approve and f.status(run) == RunStatus.WAITING_FOR_APPROVAL:
            approve_pending(f.store, run.id)
        return f.status(run) == status

    try:
        eventually(reached, timeout=90)
    except AssertionError:
        current = f.store.runs.get(run.id)
        reason = service.waiting_reason(current)
        logs = "".join(p.read_text(errors="replace")[-2000:] for p in f.tmp.glob("*.log"))
        raise AssertionError(
            f"run is {current.status} ({reason}), not {status}; worker logs:\n{logs}"
        ) from None


def model_activities(store: Store, run_id: str) -> list[str]:
    table = schema.activities
    with store.read() as conn:
        rows = conn.execute(
            sa.select(table.c.activity_id).where(table.c.run_id == run_id, table.c.kind == "model")
        )
        return sorted(rows.scalars())


def model_calls(f: Procurement) -> list[str]:
    """The scripted model's calls, named like the activities that record them."""
    return [f"{c['state']}:{c['visit']}:model:{c['call']}" for c in read_calls(f.calls_file)]
