"""Evidence is never discarded (invariant 14): a confirmation settles an action whenever it
arrives, a 409 to a same-key request is not proof of no effect, and nothing is re-sent while
an earlier attempt may still be in flight.

The destination is slow on purpose: the procurement simulator keeps a new order's key in
flight for a while before it creates the order, answering 409 to a same-key request meanwhile.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    PICK,
    TOKEN,
    TOKEN_ENV,
    Flow,
    context_file,
    definitions,
    simulator_fixture,
)
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.engine_support import compile_files, register
from tests.runtime.support import Backend, eventually

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

#: the order skill's timeout here: an attempt may be in flight for this long (plus a grace)
TIMEOUT = "4s"
#: how long the simulator holds a new order's key in flight before creating it
HOLD = 2.0


def _approved_flow(store: Store, sim: ProcurementSimulator, tmp: Path) -> tuple[Flow, Any]:
    folder = definitions(tmp, "lookup", timeout=TIMEOUT)
    register(store, compile_files(*sorted(folder.glob("*.hcl"))))
    f = Flow(store, sim, tmp, [PICK])
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    return f, run


def _order_in_flight(sim: ProcurementSimulator) -> bool:
    return sim.stats()["in_flight"] == 1  # the destination holds the key, no order yet


def _sending(f: Flow, sim: ProcurementSimulator) -> tuple[Engine, threading.Thread]:
    """A worker sending the order on its own thread, once the destination holds it in flight."""
    sim.set_fault(hold_create_seconds=HOLD)
    worker = f.engine(worker_id="first", lease_seconds=30)
    sender = threading.Thread(target=worker.run_until_idle)
    sender.start()
    eventually(lambda: _order_in_flight(sim), timeout=60)
    return worker, sender


def _assert_settled_once(store: Store, sim: ProcurementSimulator, run_id: str) -> None:
    [order] = sim.orders()
    [action] = service.list_actions(store, run_id=run_id)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"]
    view = service.show_action(store, action.id)
    assert [s["status"] for s in view.spend] and {s["status"] for s in view.spend} == {"committed"}


@pytest.mark.slow
def test_a_stalled_worker_s_confirmation_is_kept_and_nothing_is_resent_meanwhile(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f, run = _approved_flow(store, simulator, tmp_path)
    simulator.set_fault(hold_create_seconds=HOLD)
    env = {TOKEN_ENV: TOKEN, "OPENSEAL_CONTEXT": str(context_file(tmp_path, simulator))}
    stalled = spawn(backend, tmp_path, "--lease-seconds", "1", "--worker-id", "stalled", env=env)
    try:
        eventually(lambda: _order_in_flight(simulator), timeout=60)
        stalled.send_signal(signal.SIGSTOP)  # its request is at the destination, in flight
        rescuer = f.engine(worker_id="rescuer", lease_seconds=1)

        def rescuer_waits() -> bool:
            rescuer.run_until_idle()
            current = store.runs.get(run.id)
            return (
                current.status == RunStatus.SLEEPING
                and (current.waiting or {}).get("kind") == "reconcile"
            )

        eventually(rescuer_waits, timeout=60)
        # The rescuer looked the order up, found nothing yet, and did not re-send with the key
        # while the first attempt could still be in flight.
        assert simulator.stats()["requests"]["POST /orders"] == 1  # type: ignore[index]
        stalled.send_signal(signal.SIGCONT)

        def completed() -> bool:
            rescuer.run_until_idle()
            return store.runs.get(run.id).status == RunStatus.COMPLETED

        eventually(completed, timeout=60)
    finally:
        stalled.send_signal(signal.SIGCONT)
        stalled.send_signal(signal.SIGKILL)
        stalled.wait(timeout=60)
    _assert_settled_once(store, simulator, run.id)
    assert "in_flight" not in simulator.stats()["outcomes"]  # type: ignore[operator]


def test_a_paused_run_s_reconcile_does_not_resend_while_the_first_attempt_is_in_flight(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f, run = _approved_flow(store, simulator, tmp_path)
    worker, sender = _sending(f, simulator)
    try:
        store.runs.pause(run.id, "user:op", "looking into it")  # releases the lease
        [action] = service.list_actions(store, run_id=run.id)
        settled, pending = service.reconcile_action(
            store, service.Reconciliation(action.id), service.CLI, context=worker.context
        )
        assert pending is not None and "in flight" in pending
        assert settled.status == ActionStatus.UNKNOWN
    finally:
        sender.join(timeout=120)
    assert not sender.is_alive()
    # The first attempt's confirmation arrived after the pause: it is the action's outcome.
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED
    store.runs.resume(run.id, "user:op")
    eventually(lambda: f.run_until_idle() or f.status(run) == RunStatus.COMPLETED, timeout=60)
    _assert_settled_once(store, simulator, run.id)


def test_a_late_confirmation_overrides_a_failure_and_commits_the_spend(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f, run = _approved_flow(store, simulator, tmp_path)
    _, sender = _sending(f, simulator)
    try:
        store.runs.pause(run.id, "user:op", "looking into it")
        [action] = service.list_actions(store, run_id=run.id)
        failed = service.resolve_action(
            store,
            service.Resolution(action.id, "failed", "no order in the vendor portal yet"),
            service.CLI,
        )
        assert failed.status == ActionStatus.FAILED
        assert {s["status"] for s in service.show_action(store, action.id).spend} == {"released"}
    finally:
        sender.join(timeout=120)
    [action] = service.list_actions(store, run_id=run.id)
    assert action.status == ActionStatus.SUCCEEDED  # the destination's word wins
    assert [h["to"] for h in action.history][-2:] == ["failed", "succeeded"]
    _assert_settled_once(store, simulator, run.id)
    succeeded = [e for e in store.runs.events(run.id, 0, 10_000) if e.type == "action.succeeded"]
    assert succeeded and succeeded[-1].payload["attempt"] == 1


def test_a_409_to_a_same_key_retry_is_not_proof_of_no_effect(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store = backend.open()
    f, run = _approved_flow(store, simulator, tmp_path)
    # The destination holds the key longer than the skill waits: the first attempt times out,
    # and a same-key retry after its deadline may still meet the key in flight.
    simulator.set_fault(hold_create_seconds=8.0)
    worker = f.engine(worker_id="w", lease_seconds=30)

    def completed() -> bool:
        worker.run_until_idle()
        return f.status(run) == RunStatus.COMPLETED

    eventually(completed, timeout=120)
    _assert_settled_once(store, simulator, run.id)
    [action] = service.list_actions(store, run_id=run.id)
    assert ActionStatus.FAILED not in [h["to"] for h in action.history]
