"""Actions: admission, one dispatch with a stable key, unknown outcomes, cancellation
(invariants 7–9), against the procurement simulator over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Action, Store
from openseal.runtime.store.tables.records import Claim, Run
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    Flow,
    context_file,
    flow,
    simulator_fixture,
)
from tests.runtime.engine_support import assert_conforms, assert_gap_free, event_types
from tests.runtime.support import eventually


def approved(f: Flow) -> Run:
    """A run whose order proposal was approved; no worker has admitted it yet."""
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    service.decide_approval(
        f.store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    return run


def the_action(store: Store, run: Run) -> Action:
    [action] = service.list_actions(store, run_id=run.id)
    return action


def history(action: Action) -> list[str]:
    return [entry["to"] for entry in action.history]


def test_an_approved_order_is_submitted_once_with_the_stable_key(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    action = the_action(store, run)
    [order] = simulator.orders()
    assert order["idempotency_key"] == action.key == f"{run.id}:{action.proposal_hash}"
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"]  # recorded from the reply
    assert action.result["status"] == "confirmed"
    assert history(action) == ["waiting_for_approval", "admitted", "dispatched", "succeeded"]
    assert store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
    spend = service.show_action(store, action.id).spend
    assert {(s["scope"], s["status"]) for s in spend} == {("team.procurement", "committed")}
    types = event_types(store, run)
    assert types.index("action.admitted") < types.index("action.dispatched")
    assert types.index("action.dispatched") < types.index("action.succeeded")
    assert_gap_free(store, run.id)
    # Admitted and marked dispatched by one UPDATE, the action reads as after two moves.
    assert [e["from"] for e in action.history[1:]] == history(action)[:-1]
    assert action.revision == 1 + len(action.history)
    moves = {
        e.type: e.payload
        for e in store.runs.events(run.id, 0, 10_000)
        if e.type in ("action.admitted", "action.dispatched")
    }
    assert moves["action.admitted"]["from"] == "waiting_for_approval"
    assert (moves["action.dispatched"]["from"], moves["action.dispatched"]["attempt"]) == (
        "admitted",
        1,
    )
    assert action.attempts == 1 and action.admitted_at == action.dispatched_at


def test_an_approval_decided_in_time_admits_however_late_the_worker_comes(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)  # decided at once; the approval expires 72h after it was opened
    later = store.now() + timedelta(hours=73)
    store.clock = lambda: later  # the worker only gets there after the expiry
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    assert the_action(store, run).status == ActionStatus.SUCCEEDED
    assert simulator.order_count() == 1


def test_an_approval_recorded_as_decided_after_its_expiry_cannot_admit(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    from openseal.runtime.store.tables.schema import approvals

    f = flow(store, simulator, tmp_path)
    run = approved(f)
    [approval] = service.list_approvals(store, run_id=run.id)
    assert approval.expires_at is not None
    with store.engine.begin() as conn:  # a decision the store would never accept
        conn.execute(
            sa.update(approvals)
            .where(approvals.c.id == approval.id)
            .values(decided_at=approval.expires_at + timedelta(seconds=1))
        )
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    assert "after it expired" in str((current.waiting or {}).get("reason"))
    assert the_action(store, run).status == ActionStatus.DENIED
    assert simulator.order_count() == 0


def test_spend_over_the_team_budget_is_refused(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path, team_spend=10000)
    run = approved(f)
    f.run_until_idle()
    current = store.runs.get(run.id)
    assert current.status == RunStatus.NEEDS_ATTENTION
    reason = str((current.waiting or {}).get("reason"))
    assert "spend budget exceeded: team.procurement would reach 11490.00 of 10000.00 EUR" in reason
    assert the_action(store, run).status == ActionStatus.DENIED
    assert simulator.order_count() == 0


def test_the_team_budget_counts_across_runs(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)  # 20000 EUR for the team; each order is 11490
    first = approved(f)
    f.run_until_idle()
    assert f.status(first) == RunStatus.COMPLETED
    second = approved(f)
    f.run_until_idle()
    assert f.status(second) == RunStatus.NEEDS_ATTENTION
    assert "would reach 22980.00 of 20000.00" in str(store.runs.get(second.id).waiting)
    assert simulator.order_count() == 1


def test_team_spend_outside_the_budget_period_no_longer_counts(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    import sqlalchemy as sa

    from openseal.runtime.store.tables.schema import spend_reservations

    f = flow(store, simulator, tmp_path)  # 20000 EUR per 30 days for the team
    first = approved(f)
    f.run_until_idle()
    assert f.status(first) == RunStatus.COMPLETED
    # The first order was placed 31 days ago: it has left the team's rolling window.
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(spend_reservations)
            .where(spend_reservations.c.scope == "team.procurement")
            .values(created_at=datetime.now(UTC) - timedelta(days=31))
        )
    second = approved(f)
    f.run_until_idle()
    assert f.status(second) == RunStatus.COMPLETED
    assert simulator.order_count() == 2


def test_a_definitive_failure_releases_the_reservation(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    simulator.set_fault(fail_with_status=422, fail_times=1)
    f.run_until_idle()
    action = the_action(store, run)
    assert action.status == ActionStatus.FAILED
    assert "422" in str(action.error)
    spend = service.show_action(store, action.id).spend
    assert [s["status"] for s in spend] == ["released"]
    # The example declares no `failed` transition out of submit: an operator decides.
    assert f.status(run) == RunStatus.NEEDS_ATTENTION
    assert simulator.order_count() == 0


def test_a_lost_response_is_reconciled_by_lookup(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    simulator.set_fault(drop_response_after_create=1)
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    [order] = simulator.orders()
    action = the_action(store, run)
    assert history(action) == [
        "waiting_for_approval",
        "admitted",
        "dispatched",
        "unknown",
        "succeeded",
    ]
    assert action.result["order_id"] == order["order_id"]  # recorded from the reply
    assert action.result["status"] == "confirmed"
    assert action.attempts == 1
    succeeded = [e for e in store.runs.events(run.id, 0, 1000) if e.type == "action.succeeded"]
    assert succeeded[0].payload["source"] == "lookup"
    assert simulator.stats()["requests"]["POST /orders"] == 1  # type: ignore[index]


def test_without_lookup_or_same_key_retry_an_unknown_outcome_needs_an_operator(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path, "no_lookup")
    run = approved(f)
    simulator.set_fault(drop_response_after_create=1)
    f.run_until_idle()
    assert f.status(run) == RunStatus.NEEDS_ATTENTION
    action = the_action(store, run)
    assert action.status == ActionStatus.NEEDS_ATTENTION
    assert action.result is None  # no purchase-order id without confirmation
    assert "neither a lookup nor same-key retry" in str(action.error)
    f.run_until_idle()  # nothing re-sends it
    [order] = simulator.orders()
    # The operator checks the destination and resolves it with the evidence.
    resolved = service.resolve_action(
        store,
        service.Resolution(
            action.id,
            "succeeded",
            f"found {order['order_id']} in the portal",
            result={"order_id": order["order_id"], "status": "confirmed"},
        ),
        service.CLI,
    )
    assert resolved.resolution is not None and resolved.resolution["actor"] == "user:local"
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    assert store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
    assert simulator.order_count() == 1


def test_same_key_retry_settles_an_unknown_outcome(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    # A lost response may still be in flight: the same-key retry waits for the attempt's
    # deadline (the skill's timeout plus a grace), sleeping meanwhile.
    f = flow(store, simulator, tmp_path, "retry_only", timeout="1s")
    run = approved(f)
    simulator.set_fault(drop_response_after_create=1)
    f.run_until_idle()
    assert f.status(run) == RunStatus.SLEEPING
    assert assert_conforms(store.runs.get(run.id)).waiting["kind"] == "reconcile"  # type: ignore[index]
    eventually(lambda: f.run_until_idle() or f.status(run) == RunStatus.COMPLETED)
    [order] = simulator.orders()
    action = the_action(store, run)
    assert history(action) == [
        "waiting_for_approval",
        "admitted",
        "dispatched",
        "unknown",
        "dispatched",
        "succeeded",
    ]
    assert action.attempts == 2
    assert action.result["order_id"] == order["order_id"]  # recorded from the reply
    assert action.result["status"] == "confirmed"
    assert simulator.stats()["outcomes"] == {"dropped": 1, "replayed": 1}


def test_an_ambiguous_status_then_not_found_is_resent_with_the_same_key(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    simulator.set_fault(fail_with_status=503, fail_times=1)  # nothing created, outcome unclear
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    action = the_action(store, run)
    assert history(action) == [
        "waiting_for_approval",
        "admitted",
        "dispatched",
        "unknown",
        "dispatched",
        "succeeded",
    ]
    [order] = simulator.orders()
    assert order["idempotency_key"] == action.key


def test_an_operator_reconciles_after_an_inconclusive_lookup(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    simulator.set_fault(fail_with_status=503, fail_times=2, fail_scope="all")
    f.run_until_idle()
    # An inconclusive lookup is an ordinary fault: the run sleeps and looks again later.
    assert f.status(run) == RunStatus.SLEEPING
    action = the_action(store, run)
    assert action.status == ActionStatus.UNKNOWN
    assert "inconclusive" in str(store.runs.get(run.id).waiting)
    context = RuntimeContext.load(context_file(tmp_path, simulator))
    settled, pending = service.reconcile_action(
        store, service.Reconciliation(action.id), service.CLI, context=context
    )
    assert (settled.status, pending) == (ActionStatus.SUCCEEDED, None)
    # ... and an operator's reconcile meanwhile settles it and wakes the run at once.
    assert store.runs.get(run.id).wake_at is not None
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    assert simulator.order_count() == 1


def test_cancel_before_admission_prevents_the_action(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    service.cancel_run(store, service.RunCommand(run.id, "no longer needed"), service.CLI)
    f.run_until_idle()
    assert f.status(run) == RunStatus.CANCELED
    assert the_action(store, run).status == ActionStatus.CANCELED
    assert simulator.order_count() == 0
    canceled = next(e for e in store.runs.events(run.id, 0, 1000) if e.type == "run.canceled")
    [entry] = canceled.payload["actions"]
    assert (entry["status"], entry["sent"]) == ("canceled", False)


def test_cancel_while_waiting_cancels_the_approval(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    canceled = service.cancel_run(store, service.RunCommand(run.id), service.CLI).run
    assert canceled.status == RunStatus.CANCELED
    assert service.show_approval(store, approval.id).approval.status == "canceled"
    event = next(e for e in store.runs.events(run.id, 0, 1000) if e.type == "run.canceled")
    assert event.payload["canceled_approvals"] == [approval.id]


def test_cancel_after_dispatch_reports_the_boundary(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    f = flow(store, simulator, tmp_path)
    run = approved(f)

    def cancel_mid_dispatch(point: str, claim: Claim) -> None:
        if point == "action.dispatched":
            service.cancel_run(store, service.RunCommand(claim.run_id, "too late"), service.CLI)

    f.engine(hook=cancel_mid_dispatch).run_until_idle()
    assert f.status(run) == RunStatus.CANCELED
    canceled = next(e for e in store.runs.events(run.id, 0, 1000) if e.type == "run.canceled")
    [entry] = canceled.payload["actions"]
    assert (entry["status"], entry["sent"], entry["outcome"]) == ("dispatched", True, "unknown")
    assert entry["note"].startswith("dispatched at ") and entry["note"].endswith("outcome unknown")
    # The call was already on its way: it happened, and its outcome is still recorded honestly.
    [order] = simulator.orders()
    action = the_action(store, run)
    assert action.status == ActionStatus.SUCCEEDED
    assert action.result["order_id"] == order["order_id"]  # recorded from the reply
    assert action.result["status"] == "confirmed"
    types = event_types(store, run)
    assert types.index("run.canceled") < types.index("action.succeeded")


@pytest.mark.parametrize("outcome", ["failed", "bogus"])
def test_resolving_requires_an_open_outcome_and_evidence(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path, outcome: str
) -> None:
    from openseal.errors import OpenSealError

    f = flow(store, simulator, tmp_path)
    run = approved(f)
    f.run_until_idle()
    action = the_action(store, run)
    with pytest.raises(OpenSealError) as raised:
        service.resolve_action(
            store, service.Resolution(action.id, outcome, "checked"), service.CLI
        )
    expected = "usage_error" if outcome == "bogus" else "invalid_status"
    assert raised.value.code == expected


def test_a_confirmed_reply_is_narrowed_to_the_declared_output(tmp_path: Path) -> None:
    from openseal.runtime.actions.dispatch import confirmed, output_of
    from openseal.runtime.actions.skill_documents import skill_spec
    from openseal.skills.base import SkillResult
    from tests.runtime.action_support import definitions
    from tests.runtime.engine_support import compile_files

    folder = definitions(tmp_path)
    documents = {d.name: d for d in compile_files(*sorted(folder.glob("*.hcl")))}
    spec = skill_spec(documents["submit_purchase_order"].document)
    reply = {
        "order_id": "PO-000009", "status": "confirmed", "vendor": "northwind",
        "vendor_name": "Northwind Supplies", "quantity": 10, "total": 11490.0, "currency": "EUR",
        "destination": "O4", "idempotency_key": "r:h", "tracking": "extra field",
    }  # fmt: skip
    narrowed, problem = output_of(spec, reply)
    assert problem is None
    assert isinstance(narrowed, dict) and "tracking" not in narrowed
    assert narrowed["order_id"] == "PO-000009"
    _, problem = output_of(spec, {"status": "confirmed"})
    assert problem is not None and "order_id" in problem
    # A 2xx whose reply failed the adapter's type check still confirms the effect.
    assert confirmed(SkillResult("failed", reply, "does not fit", {"status": 201}))
    assert not confirmed(SkillResult("failed", None, "422", {"status": 422}))
    assert not confirmed(SkillResult("unknown", None, "timeout"))


def test_a_confirmed_reply_is_fitted_to_the_output_type_once(
    store: Store, simulator: ProcurementSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaving the action state and recording the reply share one fit of its output."""
    from openseal.runtime.actions import dispatch, reconcile
    from openseal.runtime.engine.states import action as action_state

    fitted: list[object] = []

    def counted(spec: object, output: object) -> dispatch.Fit:
        fitted.append(output)
        return dispatch.output_of(spec, output)  # type: ignore[arg-type]

    monkeypatch.setattr(reconcile, "output_of", counted)
    monkeypatch.setattr(action_state, "output_of", counted)
    f = flow(store, simulator, tmp_path)
    run = approved(f)
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    assert the_action(store, run).status == ActionStatus.SUCCEEDED
    assert len(fitted) == 1
