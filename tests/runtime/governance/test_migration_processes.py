"""A migrated run finished by a real ``openseal worker`` process, on SQLite and PostgreSQL: the
run waiting for approval moves to version 2 (its approval kept, or withdrawn and asked again
under a tighter constraint), is approved, and the worker submits exactly one order for the
hash that was approved, under the run's new version."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    TOKEN,
    TOKEN_ENV,
    context_file,
    definitions,
    flow,
    simulator_fixture,
)
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.migration_support import approve_and_activate, compiled, version_two
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("constraint", [None, "args.total <= 12000"], ids=["kept", "asked_again"])
def test_a_migrated_run_is_finished_by_a_worker_process_on_its_new_version(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, constraint: str | None
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    v1 = store.runs.get(run.id).workflow_digest
    [first] = service.list_approvals(store, run_id=run.id)
    folder = version_two(definitions(tmp_path), tmp_path, v1, constraint=constraint)
    approve_and_activate(store, compiled(folder))
    moved = store.runs.get(run.id)
    assert moved.workflow_digest != v1 and moved.status == RunStatus.WAITING_FOR_APPROVAL
    [pending] = [
        a
        for a in service.list_approvals(store, run_id=run.id)
        if a.status == ApprovalStatus.PENDING
    ]
    assert (pending.id == first.id) == (constraint is None)
    decision = service.ApprovalDecision(pending.id, "approve", pending.proposal_hash)
    service.decide_approval(store, LOCAL, decision, service.CLI)

    env = {TOKEN_ENV: TOKEN, "OPENSEAL_CONTEXT": str(context_file(tmp_path, simulator))}
    worker = spawn(backend, tmp_path, "--worker-id", "after-migration", env=env)
    try:
        eventually(lambda: store.runs.get(run.id).status == RunStatus.COMPLETED, timeout=300)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=300)
    [order] = simulator.orders()
    sent = [
        a for a in service.list_actions(store, run_id=run.id) if a.status == ActionStatus.SUCCEEDED
    ]
    assert [a.proposal_hash for a in sent] == [pending.proposal_hash]
    assert order["idempotency_key"] == sent[0].key
    finished = store.runs.get(run.id)
    assert finished.workflow_digest == moved.workflow_digest
    assert finished.context["outputs"] == {"order_id": order["order_id"]}
