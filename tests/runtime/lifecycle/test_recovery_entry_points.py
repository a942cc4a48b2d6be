"""Every entry point that works on runs honours recovery mode, on both backends: ``step``,
``run_until_idle`` and ``submit`` are refused with nothing claimed or created, and a worker
busy when recovery begins sends nothing (its action is looked up by recovery, then sent once).
A server's workers wait and its operator's reconcile only looks up; ``run_forever`` is in
``test_recovery.py``, ``/readyz`` in ``tests/api/test_recovery_readiness.py``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from openseal.errors import RuntimeFailure
from openseal.runtime import service
from openseal.runtime.lifecycle import recovery
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Claim, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import REQUEST, flow, simulator_fixture  # noqa: F401
from tests.runtime.lifecycle.recovery_support import approve, posts, waiting_for_approval
from tests.runtime.support import Backend, eventually

ACTOR = "user:test"


def _refused(call: object) -> RuntimeFailure:
    with pytest.raises(RuntimeFailure) as refused:
        call()  # type: ignore[operator]
    assert refused.value.code == "recovery_mode"
    return refused.value


def test_step_and_run_until_idle_claim_nothing_in_recovery_mode(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    run = f.start()
    recovery.start(store, reason="operator", actor=ACTOR)
    engine = f.engine()

    assert "recovery mode" in str(_refused(engine.step))
    _refused(lambda: engine.step(run.id))
    _refused(engine.run_until_idle)
    assert [e.type for e in store.runs.events(run.id)] == ["run.created"]

    recovery.reconcile(store, None, ACTOR)
    recovery.finish(store, ACTOR)
    engine.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_APPROVAL


def test_submit_creates_nothing_in_recovery_mode(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path)
    recovery.start(store, reason="operator", actor=ACTOR)
    request = service.StartObjective("procure_laptops", REQUEST)

    _refused(lambda: f.engine().submit(request, service.CLI))
    assert not service.list_runs(store)

    recovery.reconcile(store, None, ACTOR)
    recovery.finish(store, ACTOR)
    created, report = f.engine().submit(request, service.CLI)
    assert created.run is not None and report is not None
    assert report.run_id == created.run.id


@pytest.mark.parametrize("batch_size", [1, 4], ids=["alone", "group-commit"])
def test_a_worker_busy_when_recovery_begins_sends_nothing_it_marks_after(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, batch_size: int
) -> None:
    """A worker that is busy does not look at recovery mode between claims: the transaction
    that claims the next run and marks its action dispatched reads the marker in a statement
    it sends anyway, and the action is not sent."""
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path, team_spend=50000)  # room for both orders
    first, _ = waiting_for_approval(f)
    second, _ = waiting_for_approval(f)
    approve(store, first)
    approve(store, second)
    began: list[str] = []

    def restore_now(point: str, claim: Claim) -> None:
        # the moment a restore lands under a running worker: one run's order is sent, the
        # other run is not claimed yet
        if point == "action.before_record" and not began:
            began.append(claim.run_id)
            recovery.start(store, reason="operator", actor=ACTOR)

    engine = f.engine(hook=restore_now, batch_size=batch_size)
    engine.run_forever(poll_interval=0.05, idle_exit=True)  # busy: claims the next run at once
    assert posts(simulator) == 1  # sent before recovery began
    [sent_run] = began
    held_run = second if sent_run == first.id else first
    assert store.runs.get(held_run.id).status == RunStatus.QUEUED  # given back, not held
    [held] = service.list_actions(store, run_id=held_run.id)
    held = service.show_action(store, held.id).action
    assert held.status == ActionStatus.DISPATCHED
    assert held.history[-1]["reply"] == "not_sent"  # its attempt is over: nothing in flight
    engine.run_forever(poll_interval=0.05, idle_exit=True)  # waits: claims nothing
    assert posts(simulator) == 1

    found = recovery.reconcile(store, f.engine().context, ACTOR).report
    assert found is not None
    looked_up = [(a["action_id"], a["before"], a["after"]) for a in found["actions"]]
    assert looked_up == [(held.id, "dispatched", "unknown")]
    recovery.finish(store, ACTOR)
    f.run_until_idle()
    assert store.runs.get(held_run.id).status == RunStatus.COMPLETED
    assert (simulator.order_count(), posts(simulator)) == (2, 2)


@pytest.mark.parametrize("batch_size", [1, 4], ids=["alone", "group-commit"])
def test_a_retry_marked_once_recovery_has_begun_is_not_sent(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, batch_size: int
) -> None:
    """An action sent again by a transaction of its own (a retry of an open outcome) reads the
    marker with the fence of that transaction: recovery begun after the claim, before the
    retry, sends nothing."""
    store: Store = backend.open()
    f = flow(store, simulator, tmp_path, "retry_only")
    run, action = waiting_for_approval(f)
    approve(store, run)
    with store.write() as conn:  # an action whose outcome is open, that a retry would send
        store.runs.load(conn, run.id, lock=True)
        current = store.actions.get(conn, action.id)
        store.actions.move(
            conn, current, ActionStatus.UNKNOWN, now=store.now(), actor=ACTOR, note="test"
        )

    def restore_now(point: str, _claim: Claim) -> None:
        if point == "turn.started":  # claimed and its turn saved; the retry is not marked yet
            recovery.start(store, reason="operator", actor=ACTOR)

    engine = f.engine(hook=restore_now, batch_size=batch_size)
    [report] = engine.run_until_idle()
    assert report.ending == "recovery"
    assert posts(simulator) == 0
    assert store.runs.get(run.id).status == RunStatus.QUEUED
    held = service.show_action(store, action.id).action
    assert held.status == ActionStatus.DISPATCHED
    assert held.history[-1]["reply"] == "not_sent"


def test_a_server_in_recovery_mode_sends_nothing_from_its_workers_or_its_api(
    backend: Backend,
    simulator: ProcurementSimulator,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from openseal.skills.credentials import RuntimeContext
    from tests.api.support import operated, serving
    from tests.runtime.action_support import context_file

    store: Store = backend.open()
    f = flow(store, simulator, tmp_path, "retry_only")
    run, action = waiting_for_approval(f)
    approve(store, run)
    with store.write() as conn:  # an action whose outcome is open, that a retry would send
        store.runs.load(conn, run.id, lock=True)
        current = store.actions.get(conn, action.id)
        store.actions.move(
            conn, current, ActionStatus.UNKNOWN, now=store.now(), actor=ACTOR, note="test"
        )
    recovery.start(store, reason="operator", actor=ACTOR)
    caplog.set_level(logging.WARNING, logger="openseal.engine")
    context = RuntimeContext.load(context_file(tmp_path, simulator))
    settings = operated(tmp_path / "serve", workers=2, context=context)
    with serving(settings, store) as server, server.client() as api:
        answer = api.post(f"/actions/{action.id}/reconcile")
        assert answer.status_code == 200, answer.text
        assert answer.json()["action"]["status"] == "unknown"
        assert "not allowed" in answer.json()["pending"]
        said = "in recovery mode after a restore"
        eventually(lambda: said in caplog.text, timeout=300)  # the workers looked, and wait
    assert posts(simulator) == 0
    assert store.runs.get(run.id).lease_owner is None  # the server's workers claimed nothing
