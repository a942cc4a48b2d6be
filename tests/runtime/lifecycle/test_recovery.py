"""Recovery mode on both backends: no claim, lookups by key, nothing ever re-sent.

The store is put in recovery mode as a restore leaves it; what a newer timeline did at the
destination (an order placed after the backup point) is done to the simulator directly, with
the action's key and payload, so each case is exact. The seed test with real backups, restores
and worker processes is ``test_backup_restore.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from openseal.errors import RuntimeFailure
from openseal.runtime import service
from openseal.runtime.lifecycle import recovery
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import flow, simulator_fixture  # noqa: F401
from tests.runtime.lifecycle.recovery_support import (
    ACTOR,
    approve,
    approved,
    begin,
    place_order,
    posts,
    reconcile,
    waiting_for_approval,
)
from tests.runtime.support import Backend


def test_a_store_in_recovery_mode_claims_nothing_until_it_is_finished(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run = f.start()
    begin(store)
    engine = f.engine()
    said: list[str] = []
    engine.notice = said.append
    engine.run_forever(poll_interval=0.05, idle_exit=True)
    assert store.runs.get(run.id).status == RunStatus.QUEUED
    assert [e.type for e in store.runs.events(run.id)] == ["run.created"]
    assert len(said) == 1 and "recovery mode" in said[0]

    with pytest.raises(RuntimeFailure) as refused:
        recovery.finish(store, ACTOR)  # nothing reconciled yet
    assert refused.value.code == "recovery_mode"
    listed = reconcile(f).report
    assert listed is not None
    assert listed["runs"] == [{"run_id": run.id, "status": "queued"}]  # no action to look up
    recovery.finish(store, ACTOR)
    engine.run_forever(poll_interval=0.05, idle_exit=True)
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_APPROVAL


def test_an_order_placed_after_the_backup_is_found_and_its_approval_asked_again(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, action = waiting_for_approval(f)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL
    order = place_order(store, simulator, action)  # approved and sent in the lost timeline
    begin(store)

    done = reconcile(f)
    assert done.report is not None
    [finding] = done.report["actions"]
    assert (finding["before"], finding["after"], finding["outcome"]) == (
        "waiting_for_approval", "succeeded", "found",
    )  # fmt: skip
    assert finding["result"]["order_id"] == order["order_id"]
    [asked] = done.report["approvals"]
    assert (asked["run_id"], asked["action"]) == (run.id, "found")
    recovered = service.show_action(store, action.id).action
    assert recovered.status == ActionStatus.SUCCEEDED
    assert recovered.history[-1]["from"] == "waiting_for_approval"
    recovery.finish(store, ACTOR)

    approve(store, run)  # asked again
    f.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
    assert store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
    assert simulator.order_count() == 1
    assert posts(simulator) == 1  # the one placed before the restore: never sent again


def test_an_approved_action_found_at_the_destination_is_never_sent(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, action = approved(f)  # before the backup; the worker admitted and sent it after
    order = place_order(store, simulator, action)
    begin(store)
    reconcile(f)
    recovery.finish(store, ACTOR)

    f.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
    assert store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
    assert posts(simulator) == 1


def test_a_destination_that_does_not_answer_keeps_recovery_waiting(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run, action = approved(f)
    begin(store)
    simulator.set_fault(fail_with_status=503, fail_scope="all")
    events = len(store.runs.events(run.id))

    waiting = reconcile(f)
    assert waiting.report is not None and waiting.report["pending"] == 1
    with pytest.raises(RuntimeFailure) as refused:
        recovery.finish(store, ACTOR)
    assert refused.value.code == "recovery_mode"
    f.engine().run_forever(poll_interval=0.05, idle_exit=True)
    assert service.show_action(store, action.id).action.status == ActionStatus.WAITING_FOR_APPROVAL
    assert len(store.runs.events(run.id)) == events  # never claimed
    assert posts(simulator) == 0

    simulator.set_fault(fail_with_status=None)
    again = reconcile(f)
    assert again.report is not None
    assert [a["outcome"] for a in again.report["actions"]] == ["not_found"]
    recovery.finish(store, ACTOR)
    f.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
    assert (simulator.order_count(), posts(simulator)) == (1, 1)


def test_without_a_lookup_an_admitted_action_waits_for_an_operator(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path, "no_lookup")
    run, _action = approved(f)
    begin(store)
    done = reconcile(f)
    assert done.report is not None
    [finding] = done.report["actions"]
    assert (finding["outcome"], finding["after"]) == ("no_lookup", "needs_attention")
    recovery.finish(store, ACTOR)
    f.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.NEEDS_ATTENTION
    assert posts(simulator) == 0


def test_an_operators_reconcile_never_sends_in_recovery_mode(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path, "retry_only")
    run, action = approved(f)
    with store.write() as conn:
        store.runs.load(conn, run.id, lock=True)
        current = store.actions.get(conn, action.id)
        store.actions.move(
            conn, current, ActionStatus.UNKNOWN, now=store.now(), actor=ACTOR, note="test"
        )
    begin(store)
    request = service.Reconciliation(action.id)
    settled, pending = service.reconcile_action(store, request, service.CLI, context=f.context())
    assert settled.status == ActionStatus.UNKNOWN
    assert pending is not None and "not allowed" in pending
    assert posts(simulator) == 0


def test_a_pass_reads_every_page_of_actions_and_approvals(
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(recovery, "PAGE", 1)
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    first, _ = waiting_for_approval(f)
    second, action = waiting_for_approval(f)
    order = place_order(store, simulator, action)
    begin(store)
    done = reconcile(f)
    assert done.report is not None
    found = {a["run_id"]: (a["outcome"], a["result"]) for a in done.report["actions"]}
    assert found[first.id] == ("not_found", None)
    assert found[second.id][0] == "found"
    assert found[second.id][1]["order_id"] == order["order_id"]
    assert [a["run_id"] for a in done.report["approvals"]] == [first.id, second.id]


def test_a_worker_woken_in_recovery_mode_claims_nothing_and_says_so_once(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    # The thread waits for work when recovery begins; the run started then wakes it, and the
    # claim that answers the wake-up reads the marker itself (no look of its own before it).
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    engine = f.engine()
    said: list[str] = []
    engine.notice = said.append
    worker = threading.Thread(target=engine.run_forever, kwargs={"poll_interval": 30})
    worker.start()
    try:
        deadline = time.monotonic() + 60  # a hang guard
        while store.work_signal.waiting == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.work_signal.waiting == 1
        begin(store)
        run = f.start()  # committed with a wake-up for it
        while not said and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(said) == 1 and "recovery mode" in said[0]
        assert store.runs.get(run.id).status == RunStatus.QUEUED
        assert [e.type for e in store.runs.events(run.id)] == ["run.created"]
    finally:
        engine.stop()
        worker.join(60)
    assert not worker.is_alive()
