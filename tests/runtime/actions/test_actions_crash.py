"""SIGKILL a worker process around a dispatch; the replacement reconciles, never re-sends blindly.

At ``action.dispatched`` the action is persisted as dispatched and the request is not sent
yet; at ``action.before_record`` the order exists at the destination but its outcome is not
recorded. Either way the replacement finds the action ``dispatched``, treats it as ``unknown``,
looks it up by its key, and the procurement service ends with exactly one order.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    TOKEN,
    TOKEN_ENV,
    context_file,
    flow,
    simulator_fixture,
)
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("point", "orders_at_crash"), [("action.dispatched", 0), ("action.before_record", 1)]
)
def test_sigkill_around_a_dispatch_then_reconciliation_makes_exactly_one_order(
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
    point: str,
    orders_at_crash: int,
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )

    env = {
        POINT_ENV: point,
        DIR_ENV: str(tmp_path),
        TOKEN_ENV: TOKEN,
        "OPENSEAL_CONTEXT": str(context_file(tmp_path, simulator)),
    }
    doomed = spawn(backend, tmp_path, "--lease-seconds", "1", "--worker-id", "doomed", env=env)
    try:
        eventually(lambda: (tmp_path / f"{point}.reached").exists(), timeout=60)
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=60)
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.DISPATCHED
    assert simulator.order_count() == orders_at_crash

    rescuer = f.engine(worker_id="rescuer", lease_seconds=1)

    def rescued() -> bool:
        rescuer.run_until_idle()
        return store.runs.get(run.id).status == RunStatus.COMPLETED

    eventually(rescued, timeout=60)
    [order] = simulator.orders()
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"]  # recorded from the reply
    assert action.result["status"] == "confirmed"
    moved = [entry["to"] for entry in action.history]
    assert moved[:4] == ["waiting_for_approval", "admitted", "dispatched", "unknown"]
    assert order["idempotency_key"] == action.key
    assert store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
