"""Operators and CI acting at the same moment, on separate connections (threads, each with its
own store), and the events every action status change leaves behind. Both backends."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalError, Decided
from openseal.runtime.governance.flow import deploy as file_deploy
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import LOCAL, definitions, flow, simulator_fixture  # noqa: F401
from tests.runtime.engine_support import assert_gap_free, compile_files
from tests.runtime.support import Backend

T = TypeVar("T")
THREADS = 6


def at_once(calls: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run ``calls`` in threads released together; each one's result or exception."""
    start = threading.Barrier(len(calls))
    results: list[T | BaseException] = [RuntimeError("did not finish")] * len(calls)

    def run(index: int) -> None:
        start.wait(timeout=30)
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # collected for the assertions
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a call hung"
    return results


def assert_every_action_change_has_its_event(store: Store, run_id: str) -> None:
    """Each action's history (every status it moved to) matches its ``action.*`` events."""
    events = [e for e in store.runs.events(run_id, 0, 10_000) if e.type.startswith("action.")]
    for action in service.list_actions(store, run_id=run_id):
        moved = [f"action.{entry['to']}" for entry in action.history]
        seen = [e.type for e in events if e.payload["action_id"] == action.id]
        assert seen == moved, (action.key, seen, moved)
        assert (moved[-1] if moved else "action.proposed") == f"action.{action.status}"
    assert_gap_free(store, run_id)


def _waiting(backend: Backend, sim: ProcurementSimulator, tmp: Path) -> tuple[Any, str, str, str]:
    store = backend.open()
    f = flow(store, sim, tmp)
    run = f.start()
    f.run_until_idle()
    assert f.status(run) == RunStatus.WAITING_FOR_APPROVAL
    [approval] = service.list_approvals(store, run_id=run.id)
    return f, run.id, approval.id, approval.proposal_hash


def test_concurrent_identical_approvals_are_one_decision(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run_id, approval_id, digest = _waiting(backend, simulator, tmp_path)
    stores = [backend.open() for _ in range(THREADS)]

    def approve(store: Store) -> Callable[[], Decided]:
        return lambda: service.decide_approval(
            store, LOCAL, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
        )

    results = at_once([approve(s) for s in stores])
    assert all(isinstance(r, Decided) for r in results), results
    decided = [r for r in results if isinstance(r, Decided)]
    assert sorted(d.changed for d in decided) == [False] * (THREADS - 1) + [True]
    assert {d.approval.status for d in decided} == {ApprovalStatus.APPROVED}
    events = [e.type for e in f.store.runs.events(run_id)]
    assert events.count("approval.decided") == 1
    f.run_until_idle()
    assert f.status(f.store.runs.get(run_id)) == RunStatus.COMPLETED
    assert simulator.order_count() == 1
    assert_every_action_change_has_its_event(f.store, run_id)


def test_concurrent_conflicting_decisions_let_exactly_one_stand(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f, run_id, approval_id, digest = _waiting(backend, simulator, tmp_path)
    stores = [backend.open() for _ in range(THREADS)]

    def decide(store: Store, index: int) -> Callable[[], Decided]:
        decision = "approve" if index % 2 else "reject"
        return lambda: service.decide_approval(
            store, LOCAL, service.ApprovalDecision(approval_id, decision, digest, "no"), service.CLI
        )

    results = at_once([decide(s, i) for i, s in enumerate(stores)])
    stood = service.show_approval(f.store, approval_id).approval.status
    for result in results:
        if isinstance(result, Decided):
            assert result.approval.status == stood
        else:
            assert isinstance(result, ApprovalError), result
            assert result.code == "already_decided"
    assert sum(isinstance(r, Decided) and r.changed for r in results) == 1
    assert sum(isinstance(r, ApprovalError) for r in results) == THREADS // 2
    assert_every_action_change_has_its_event(f.store, run_id)


def test_every_action_status_change_has_its_event(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    # approved and sent; rejected; expired: the action follows its approval with events
    f, approved_run, approval_id, digest = _waiting(backend, simulator, tmp_path)
    store = f.store
    [action] = service.list_actions(store, run_id=approved_run)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL
    assert_every_action_change_has_its_event(store, approved_run)
    service.decide_approval(
        store, LOCAL, service.ApprovalDecision(approval_id, "approve", digest), service.CLI
    )
    f.run_until_idle()
    assert_every_action_change_has_its_event(store, approved_run)

    rejected_run = f.start().id
    f.run_until_idle()
    [pending] = service.list_approvals(store, run_id=rejected_run)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(pending.id, "reject", pending.proposal_hash, "too dear"),
        service.CLI,
    )
    [denied] = service.list_actions(store, run_id=rejected_run)
    assert denied.status == ActionStatus.DENIED
    types = [e.type for e in store.runs.events(rejected_run)]
    assert types.index("approval.decided") < types.index("action.denied")
    assert_every_action_change_has_its_event(store, rejected_run)

    expired_run = f.start().id
    f.run_until_idle()
    later = store.now() + timedelta(hours=73)
    store.clock = lambda: later
    f.run_until_idle()
    [expired] = service.list_actions(store, run_id=expired_run)
    assert expired.status == ActionStatus.DENIED
    assert_every_action_change_has_its_event(store, expired_run)
    assert simulator.order_count() == 1


def test_concurrent_first_stores_of_one_version_all_succeed(
    backend: Backend, tmp_path: Path
) -> None:
    # Two CI jobs deploying one commit: every version is new to the database.
    documents = compile_files(*sorted(definitions(tmp_path).glob("*.hcl")))
    compiled = {f"{d.kind}.{d.name}": d for d in documents}
    stores = [backend.open() for _ in range(THREADS)]
    results = at_once([lambda s=s: file_deploy(s, compiled, "user:ci") for s in stores])
    assert not [r for r in results if isinstance(r, BaseException)], results
    filed = {r.proposal.id for r in results if not isinstance(r, BaseException) and r.proposal}
    assert len(filed) == 1
    assert sum(1 for r in results if not isinstance(r, BaseException) and r.created) == 1

    workflow = compiled["workflow.procure_laptops"]
    digest = "1" * 64
    again = at_once(
        [
            lambda s=s: s.definitions.put(digest, "workflow", workflow.name, workflow.document)
            for s in stores
        ]
    )
    assert not [r for r in again if isinstance(r, BaseException)], again
    assert {(v.digest, v.created_at) for v in again if not isinstance(v, BaseException)} == {
        (digest, stores[0].definitions.get(digest).created_at)
    }
