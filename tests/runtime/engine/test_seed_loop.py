"""The seed's evaluation loop, end to end, across a runtime restart (both backends).

An allowed read (the research search) happens; the order that needs review waits; the worker
process is stopped while the approval is pending and nothing holds the run; the approval is
given through the service; a new worker process finishes. The saved state and the procurement
service agree: one order, recorded with the id the service confirmed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import simulator_fixture  # noqa: F401
from tests.runtime.engine.test_worker_process import finish
from tests.runtime.engine_support import assert_gap_free
from tests.runtime.quickstart_support import (
    approve_pending,
    model_activities,
    model_calls,
    procurement,
    stop,
    until,
)
from tests.runtime.support import Backend

pytestmark = pytest.mark.slow


def test_read_then_review_then_restart_then_approve_then_one_order(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = procurement(backend, simulator, tmp_path)
    run = f.start()

    first = f.worker("first")
    try:
        until(f, run, RunStatus.WAITING_FOR_APPROVAL)
    finally:
        assert stop(first) == 0
    assert "SIGTERM: draining" in f.log("first")

    # the read happened through the gateway, against the service, and was recorded
    assert simulator.stats()["requests"] == {"GET /vendors": 1}
    waiting = f.store.runs.get(run.id)
    assert waiting.status == RunStatus.WAITING_FOR_APPROVAL
    assert waiting.lease_owner is None  # waiting is free: nothing holds the run
    [action] = service.list_actions(f.store, run_id=run.id)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL
    assert simulator.order_count() == 0

    assert approve_pending(f.store, run.id) == 1

    second = f.worker("second", "--until-idle")
    assert finish(second) == 0

    done = f.store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    [order] = simulator.orders()
    [action] = service.list_actions(f.store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"] == done.context["outputs"]["order_id"]
    assert order["idempotency_key"] == action.key == f"{run.id}:{action.proposal_hash}"
    assert (order["vendor"], order["quantity"], order["total"]) == ("northwind", 10, 11490)
    [approval] = service.list_approvals(f.store, run_id=run.id)
    assert approval.status == ApprovalStatus.APPROVED
    assert approval.decided_hash == approval.proposal_hash == action.proposal_hash
    assert approval.decided_by == "user:local"
    assert action.approval_id == approval.id

    # the second process replayed the research turn's record; the model was asked once per call
    assert model_calls(f) == model_activities(f.store, run.id)
    assert_gap_free(f.store, run.id)
