"""Quotas per scope on both backends: runs over a daily quota wait in ``waiting_for_capacity``
with the quota named and start when the store's clock reaches the next day; tokens and tool
calls are counted in the transactions that reserve and settle them, and a scope whose tokens
are used up holds its next runs; usage added by many stores and threads at once is exact; only
an admin widens a quota."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.errors import InvalidInput
from openseal.runtime import service
from openseal.runtime.access import Forbidden, Grant
from openseal.runtime.engine import quotas
from openseal.runtime.engine.capacity import CapacityPoll
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import NotFound, Run, Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine_support import DEFS, compile_files, engine, event_types, register
from tests.runtime.engine_support import scripted as scripted_provider
from tests.runtime.support import Backend

LATE = datetime(2026, 12, 7, 23, 30, tzinfo=UTC)
NEXT_DAY = datetime(2026, 12, 8, 0, 0, 1, tzinfo=UTC)
DONE = {"output": {"done": True}, "usage": {"input_tokens": 100, "output_tokens": 20}}


@pytest.fixture
def flows(store: Store) -> Store:
    register(store, compile_files(DEFS / "capacity.hcl"))
    store.clock = lambda: LATE
    return store


def start(store: Store, workflow: str = "free", scope: str | None = None) -> Run:
    request = service.StartObjective(workflow, {}, scope=scope)
    created = service.create_objective(store, request, service.CLI)
    assert created.run is not None
    return created.run


def worker(store: Store, tmp_path: Path) -> Engine:
    return engine(store, scripted_provider(tmp_path, {"work": [DONE] * 50})[0])


def usage(store: Store) -> dict[tuple[str, str], int]:
    table = schema.quota_usage
    with store.read() as conn:
        rows = conn.execute(sa.select(table)).all()
    return {(row.key, row.window): int(row.used) for row in rows}


def statuses(store: Store, runs: list[Run]) -> list[RunStatus]:
    return [store.runs.get(run.id).status for run in runs]


def test_runs_over_a_daily_quota_wait_then_start_the_next_day(flows: Store, tmp_path: Path) -> None:
    service.set_scope_quota(flows, "default", "runs", "day", 2)
    runs = [start(flows) for _ in range(3)]  # created: the policy is to wait
    w = worker(flows, tmp_path)
    w.run_until_idle()
    assert statuses(flows, runs) == [RunStatus.COMPLETED] * 2 + [RunStatus.WAITING_FOR_CAPACITY]
    waiting = flows.runs.get(runs[2].id)
    assert waiting.lease_owner is None
    assert waiting.waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "quota", "limit": "quota:default:runs:day", "max": 2, "used": 2,
                      "resets_at": "2026-12-08T00:00:00+00:00"},
    }  # fmt: skip
    assert "capacity.waiting" in event_types(flows, runs[2])
    assert service.waiting_reason(waiting) == (
        "capacity: quota:default:runs:day (quota, 2 of 2 used; resets at 2026-12-08T00:00:00+00:00)"
    )
    # the same day, a look for waiters finds no room: the run stays, nothing is counted
    assert CapacityPoll(flows, w.executor.admission).poll() == 0
    w.run_until_idle()
    assert statuses(flows, runs)[2] == RunStatus.WAITING_FOR_CAPACITY
    assert usage(flows) == {("quota:default:runs:day", "2026-12-07"): 2}

    flows.clock = lambda: NEXT_DAY  # the window rolls over by the store's clock
    assert CapacityPoll(flows, w.executor.admission).poll() == 1
    assert statuses(flows, runs)[2] == RunStatus.QUEUED
    w.run_until_idle()
    assert statuses(flows, runs) == [RunStatus.COMPLETED] * 3
    assert usage(flows) == {
        ("quota:default:runs:day", "2026-12-07"): 2,
        ("quota:default:runs:day", "2026-12-08"): 1,
    }
    [shown] = service.scope_quotas(flows)
    assert (shown.scope, shown.measure, shown.per, shown.max, shown.used) == (
        "default", "runs", "day", 2, 1,
    )  # fmt: skip
    assert shown.resets_at == datetime(2026, 12, 9, tzinfo=UTC)


def test_a_quota_raised_wakes_its_waiters_and_other_scopes_go_on(
    flows: Store, tmp_path: Path
) -> None:
    service.set_scope_quota(flows, "acme", "runs", "month", 1)
    mine = [start(flows, scope="acme") for _ in range(3)]
    other = [start(flows, scope="globex") for _ in range(3)]
    w = worker(flows, tmp_path)
    w.run_until_idle()
    assert statuses(flows, other) == [RunStatus.COMPLETED] * 3  # another scope: no quota
    assert statuses(flows, mine).count(RunStatus.WAITING_FOR_CAPACITY) == 2
    waits_for = flows.runs.get(mine[1].id).waiting["waits_for"]
    assert waits_for["resets_at"] == "2027-01-01T00:00:00+00:00"
    service.set_scope_quota(flows, "acme", "runs", "month", 2)  # the admin raises it: one more
    assert statuses(flows, mine).count(RunStatus.QUEUED) == 1
    w.run_until_idle()
    assert statuses(flows, mine).count(RunStatus.COMPLETED) == 2
    service.set_scope_quota(flows, "acme", "runs", "month", None)  # removed: all go
    w.run_until_idle()
    assert statuses(flows, mine) == [RunStatus.COMPLETED] * 3


def test_tokens_and_tool_calls_are_counted_where_they_are_spent(
    flows: Store, tmp_path: Path
) -> None:
    service.set_scope_quota(flows, "default", "tokens", "day", 250)
    service.set_scope_quota(flows, "default", "tool_calls", "month", 1000)
    runs = [start(flows) for _ in range(4)]
    w = worker(flows, tmp_path)
    w.run_until_idle()
    # each run's one model call reports 120 tokens: the third run finds 240 of 250, under
    # the quota, and starts; the fourth finds 360 and waits (a run under way is not stopped)
    assert statuses(flows, runs) == [RunStatus.COMPLETED] * 3 + [RunStatus.WAITING_FOR_CAPACITY]
    spent = sum(int(flows.runs.get(r.id).budget_used.get("tokens", 0)) for r in runs)
    assert spent == 360
    assert usage(flows)[("quota:default:tokens:day", "2026-12-07")] == spent
    waits_for = flows.runs.get(runs[3].id).waiting["waits_for"]
    assert (waits_for["limit"], waits_for["used"]) == ("quota:default:tokens:day", 360)
    flows.clock = lambda: NEXT_DAY
    CapacityPoll(flows, w.executor.admission).poll()
    w.run_until_idle()
    assert statuses(flows, runs)[3] == RunStatus.COMPLETED
    assert usage(flows)[("quota:default:tokens:day", "2026-12-08")] == 120


def test_usage_added_by_many_stores_at_once_is_exact(backend: Backend) -> None:
    stores = [backend.open() for _ in range(3)]
    threads_each, adds_each = 4, 50
    errors: list[BaseException] = []

    def add(store: Store) -> None:
        try:
            for _ in range(adds_each):
                with store.write() as conn:
                    store.quotas.add(conn, "quota:acme:runs:day", "2026-12-07", 1)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=add, args=(store,)) for store in stores for _ in range(threads_each)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    total = len(stores) * threads_each * adds_each
    assert usage(stores[0]) == {("quota:acme:runs:day", "2026-12-07"): total}


def test_only_an_admin_widens_a_quota(store: Store) -> None:
    operator = service.Caller("user:olga", False, Grant.of(["operator"], ["acme"]))
    admin = service.Caller("user:ada", False, Grant.of(["admin"], ["*"]))
    set_to = service.set_scope_quota(store, "acme", "money.USD", "month", 25.5, "refuse", operator)
    assert set_to is not None and (set_to.max, set_to.when_over) == (25.5, "refuse")
    lowered = service.set_scope_quota(store, "acme", "money.USD", "month", 20, None, operator)
    assert lowered is not None and (lowered.max, lowered.when_over) == (20, "refuse")
    for widening in (30, None):
        with pytest.raises(Forbidden):
            service.set_scope_quota(store, "acme", "money.USD", "month", widening, None, operator)
    with pytest.raises(NotFound):  # a scope the operator does not reach
        service.set_scope_quota(store, "globex", "runs", "day", 1, None, operator)
    assert service.set_scope_quota(store, "acme", "money.USD", "month", None, None, admin) is None
    assert service.scope_quotas(store) == []
    for bad in [("bananas", "day", 1.0), ("runs", "week", 1.0), ("runs", "day", 1.5)]:
        with pytest.raises(InvalidInput):
            service.set_scope_quota(store, "acme", *bad)


def test_windows_and_their_resets() -> None:
    moment = datetime(2026, 12, 31, 23, 59, 30, tzinfo=UTC)
    assert quotas.window("day", moment) == ("2026-12-31", datetime(2027, 1, 1, tzinfo=UTC))
    assert quotas.window("month", moment) == ("2026-12", datetime(2027, 1, 1, tzinfo=UTC))
    assert quotas.window("month", datetime(2026, 2, 3, tzinfo=UTC))[1] == datetime(
        2026, 3, 1, tzinfo=UTC
    )
    assert quotas.retry_after("day", moment) == 30
    assert quotas.retry_after("day", moment + timedelta(seconds=29, microseconds=999)) == 1
    assert quotas.parse_key(quotas.key_of("a:b", "money.EUR", "month")) == (
        "a:b", "money.EUR", "month",
    )  # fmt: skip
