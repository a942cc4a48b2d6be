"""An action's spend counts against its scope's quotas of money, on both backends: counted in
the transaction that admits it, so two admissions never both take the last of a quota; an
order over the quota is not admitted and its run waits, the quota named, until the quota has
room for it; a definite failure or a cancel before sending gives the spend back, once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.engine import quotas
from openseal.runtime.engine.capacity import CapacityPoll
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Action, Store
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import (  # noqa: F401
    LOCAL,
    Flow,
    flow,
    simulator_fixture,
)
from tests.runtime.support import Backend

#: the example's order: ten laptops at 1149 EUR
ORDER = 11_490 * quotas.MICROS
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
MONTH = ("quota:default:money.EUR:month", "2026-12")


def approved(f: Flow) -> Run:
    """A run whose order proposal was approved; no worker has admitted it yet."""
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(f.store, run_id=run.id)
    decision = service.ApprovalDecision(approval.id, "approve", approval.proposal_hash)
    service.decide_approval(f.store, LOCAL, decision, service.CLI)
    return run


def the_action(store: Store, run: Run) -> Action:
    [action] = service.list_actions(store, run_id=run.id)
    return action


def usage(store: Store) -> dict[tuple[str, str], int]:
    table = schema.quota_usage
    with store.read() as conn:
        rows = conn.execute(sa.select(table)).all()
    return {(row.key, row.window): int(row.used) for row in rows}


def spend(store: Store, action: Action) -> set[tuple[str, str]]:
    return {(s["scope"], s["status"]) for s in service.show_action(store, action.id).spend}


@pytest.fixture
def clocked(store: Store) -> Store:
    store.clock = lambda: NOW
    return store


def test_an_orders_spend_is_counted_when_it_is_admitted(
    clocked: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    service.set_scope_quota(clocked, "default", "money.EUR", "month", 20_000)
    f = flow(clocked, simulator, tmp_path)
    run = approved(f)
    f.run_until_idle()
    assert f.status(run) == RunStatus.COMPLETED
    action = the_action(clocked, run)
    assert usage(clocked)[MONTH] == ORDER
    assert spend(clocked, action) == {
        ("team.procurement", "committed"),
        ("quota:default:money.EUR:month:2026-12", "committed"),
    }
    [shown] = service.scope_quotas(clocked)
    assert shown.used == 11_490


def test_an_order_over_the_quota_waits_named_and_goes_when_the_quota_is_raised(
    clocked: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    service.set_scope_quota(clocked, "default", "money.EUR", "month", 20_000)
    service.set_scope_quota(clocked, "default", "money.EUR", "day", 15_000)
    f = flow(clocked, simulator, tmp_path, team_spend=100_000)
    first = approved(f)
    f.run_until_idle()
    assert f.status(first) == RunStatus.COMPLETED
    second = approved(f)
    w = f.engine()
    w.run_until_idle()
    # 11,490 of 15,000 a day used: the next order's 11,490 does not fit; it is not admitted,
    # not denied, not sent, and nothing of it is counted
    waiting = clocked.runs.get(second.id)
    assert waiting.status == RunStatus.WAITING_FOR_CAPACITY, waiting.waiting
    assert waiting.lease_owner is None
    assert waiting.waiting == {
        "kind": "capacity",
        "waits_for": {
            "kind": "quota", "limit": "quota:default:money.EUR:day", "max": 15_000 * quotas.MICROS,
            "used": ORDER, "needs": ORDER, "resets_at": "2026-12-08T00:00:00+00:00",
        },
    }  # fmt: skip
    assert service.waiting_reason(waiting).startswith(
        "capacity: quota:default:money.EUR:day (quota, 11490000000 of 15000000000 used, "
        "11490000000 more needed; resets at"
    )
    action = the_action(clocked, second)
    assert action.status == ActionStatus.WAITING_FOR_APPROVAL and action.attempts == 0
    assert simulator.order_count() == 1
    assert usage(clocked)[MONTH] == ORDER
    assert spend(clocked, action) == set()
    # some of the quota is left, but not enough for the order: a look wakes nothing
    assert CapacityPoll(clocked, w.executor.admission).poll() == 0
    # raised by an admin, the day's quota fits it; the month's does not yet
    service.set_scope_quota(clocked, "default", "money.EUR", "day", 30_000)
    assert f.status(second) == RunStatus.QUEUED
    w.run_until_idle()
    waits_for = clocked.runs.get(second.id).waiting["waits_for"]
    assert waits_for["limit"] == "quota:default:money.EUR:month"
    assert usage(clocked)[("quota:default:money.EUR:day", "2026-12-07")] == ORDER
    service.set_scope_quota(clocked, "default", "money.EUR", "month", None)  # removed
    w.run_until_idle()
    assert f.status(second) == RunStatus.COMPLETED
    assert simulator.order_count() == 2
    assert usage(clocked)[("quota:default:money.EUR:day", "2026-12-07")] == 2 * ORDER


def test_a_definite_failure_gives_the_spend_back_once(
    clocked: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    service.set_scope_quota(clocked, "default", "money.EUR", "month", 20_000)
    f = flow(clocked, simulator, tmp_path)
    run = approved(f)
    simulator.set_fault(fail_with_status=422, fail_times=1)
    f.run_until_idle()
    action = the_action(clocked, run)
    assert action.status == ActionStatus.FAILED
    assert spend(clocked, action) == {
        ("team.procurement", "released"),
        ("quota:default:money.EUR:month:2026-12", "released"),
    }
    assert usage(clocked)[MONTH] == 0
    # settling it again (an operator, a late reply) changes nothing; a late confirmation
    # counts it again, once
    with clocked.write() as conn:
        from openseal.runtime.actions import spend as settling

        settling.settle(clocked, conn, action.id, "released", clocked.now())
        assert usage(clocked)[MONTH] == 0
        settling.settle(clocked, conn, action.id, "committed", clocked.now())
        settling.settle(clocked, conn, action.id, "committed", clocked.now())
    assert usage(clocked)[MONTH] == ORDER


def test_a_run_canceled_before_its_order_was_sent_gives_the_spend_back(
    clocked: Store, simulator: ProcurementSimulator, tmp_path: Path
) -> None:
    service.set_scope_quota(clocked, "default", "money.EUR", "month", 20_000)
    f = flow(clocked, simulator, tmp_path)
    run = approved(f)
    # admitted as a worker's action state admits it, and not sent yet
    from openseal.runtime.actions import admission
    from openseal.runtime.engine.catalog import WorkflowCatalog

    action = the_action(clocked, run)
    workflow = WorkflowCatalog(clocked).workflow(clocked.runs.get(run.id).workflow_digest)
    with clocked.write() as conn:
        proposal = clocked.proposals.get(conn, action.proposal_id)
        holds = quotas.take_spend(clocked, conn, "default", 11_490.0, "EUR", clocked.now())
        assert holds == ["quota:default:money.EUR:month:2026-12"]
        admitted = admission.admit(
            conn, clocked, workflow, proposal, action, state="submit", now=clocked.now(),
            actor="test",
        )  # fmt: skip
        assert isinstance(admitted, Action)
        clocked.actions.reserve(conn, admitted, holds[0], 11_490.0, "EUR", clocked.now())
    assert isinstance(admitted, Action) and admitted.status == ActionStatus.ADMITTED
    assert usage(clocked)[MONTH] == ORDER
    service.cancel_run(clocked, service.RunCommand(run.id, "no longer needed"), service.CLI)
    assert usage(clocked)[MONTH] == 0
    assert simulator.order_count() == 0


def test_admissions_racing_for_the_last_of_a_quota_take_it_exactly(backend: Backend) -> None:
    stores = [backend.open() for _ in range(3)]
    for store in stores:
        store.clock = lambda: NOW
    service.set_scope_quota(stores[0], "acme", "money.USD", "day", 1_000)
    threads_each, tries_each = 3, 12
    taken: list[int] = []
    errors: list[BaseException] = []

    def admit(store: Store) -> None:
        try:
            for _ in range(tries_each):
                with store.write() as conn:
                    got = quotas.take_spend(store, conn, "acme", 12.5, "USD", store.now())
                if not isinstance(got, quotas.Over):
                    taken.append(1)
        except BaseException as exc:
            errors.append(exc)

    for store in stores:
        quotas.of_scope(store, "acme", fresh=True)
    threads = [
        threading.Thread(target=admit, args=(s,)) for s in stores for _ in range(threads_each)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert len(taken) == 80  # 80 × 12.5 = 1,000 of 1,000 tries: exactly as many fit
    assert usage(stores[0]) == {("quota:acme:money.USD:day", "2026-12-07"): 1_000 * quotas.MICROS}
