"""The crash-boundary matrix (DESIGN §8): SIGKILL a worker process at every named commit point
the procurement flow passes, then let a fresh worker with a short lease take over.

For each point of :data:`openseal.runtime.faults.POINTS` a worker process runs the flow with
``OPENSEAL_FAULT_POINT`` set (the test approves the order through the service when the run
waits for it); on reaching the point the worker blocks there and is killed with SIGKILL while
holding the run's lease. A fresh worker process with a 1 s lease takes the run over and
finishes it. Whatever the point: the run completes, the procurement service saw exactly one
order, the scripted model was never asked again for a call that had been recorded, and the
run's events are gap-free.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV, POINTS
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import simulator_fixture  # noqa: F401
from tests.runtime.engine_support import assert_gap_free
from tests.runtime.quickstart_support import (
    Procurement,
    approve_pending,
    kill,
    model_activities,
    model_calls,
    procurement,
    stop,
    until,
)
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

#: where the flow passes each point first: before the approval (the research turn) or after it
BEFORE_APPROVAL = {"turn.started", "activity.recorded", "turn.before_advance"}


def crash_at(f: Procurement, point: str) -> None:
    """Run the flow in a worker process until it reaches ``point``, then SIGKILL it there."""
    run_id = f.store.runs.query(limit=1)[0].id
    reached = f.tmp / f"{point}.reached"
    doomed = f.worker("doomed", "--lease-seconds", "1", **{POINT_ENV: point, DIR_ENV: str(f.tmp)})
    try:

        def at_point() -> bool:
            # the flow needs the order approved before it reaches the action's points
            if f.store.runs.get(run_id).status == RunStatus.WAITING_FOR_APPROVAL:
                approve_pending(f.store, run_id)
            return reached.exists()

        eventually(at_point, timeout=90)
    finally:
        kill(doomed)
    assert reached.read_text(encoding="utf-8") == run_id


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_at_each_commit_point_then_a_fresh_worker_finishes_with_one_order(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, point: str
) -> None:
    f = procurement(backend, simulator, tmp_path)
    run = f.start()
    crash_at(f, point)

    crashed = f.store.runs.get(run.id)
    assert (crashed.status, crashed.lease_owner) == (RunStatus.RUNNING, "doomed")
    if point in BEFORE_APPROVAL:
        assert service.list_approvals(f.store, run_id=run.id) == []
    assert simulator.order_count() <= 1

    rescuer = f.worker("rescuer", "--lease-seconds", "1")
    try:
        until(f, run, RunStatus.COMPLETED, approve=True)
    finally:
        assert stop(rescuer) == 0

    [order] = simulator.orders()
    [action] = service.list_actions(f.store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"]
    assert order["idempotency_key"] == action.key
    assert f.store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}

    # the rescuer took the run over from the killed worker, mid-turn
    claims = [e for e in f.store.runs.events(run.id, 0, 10_000) if e.type == "lease.claimed"]
    assert any(
        e.payload.get("previous_owner") == "doomed" and e.payload["worker"] == "rescuer"
        for e in claims
    )
    # every model call was recorded, and none was made twice
    calls = model_calls(f)
    assert sorted(calls) == model_activities(f.store, run.id)
    assert len(calls) == len(set(calls))
    assert_gap_free(f.store, run.id)
