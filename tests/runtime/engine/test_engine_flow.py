"""The engine end to end on SQLite and PostgreSQL, with the scripted provider."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.providers import read_calls
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine_support import (
    PICK_7,
    PROCUREMENT,
    assert_conforms,
    assert_gap_free,
    compile_files,
    engine,
    event_types,
    register,
    scripted,
    small_workflow,
)

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql


def activity_ids(store: Store, run_id: str) -> list[str]:
    table = schema.activities
    with store.read() as conn:
        rows = conn.execute(
            sa.select(table.c.activity_id)
            .where(table.c.run_id == run_id)
            .order_by(table.c.created_at)
        )
        return list(rows.scalars())


def test_small_workflow_runs_to_the_wait_and_completes_on_the_event(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path))
    provider, calls = scripted(tmp_path, PICK_7)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = engine(store, provider)

    worker.run_until_idle()
    waiting = assert_conforms(store.runs.get(run.id))
    assert waiting.status == RunStatus.WAITING_FOR_EVENT
    assert waiting.current_state == "await_ok"
    assert waiting.lease_owner is None  # waiting holds no lease
    assert waiting.context["states"]["sum"] == {"total": 12}
    assert waiting.budget_used == {"turns": 4, "model_calls": 1, "tokens": 12}

    delivered = store.inbound_events.deliver("ok", {"n": 5}, {"by": "tester"})
    assert delivered.consumed_by_run_id == run.id
    assert_conforms(store.runs.get(run.id))  # the wait, with its delivery
    worker.run_until_idle()
    done = assert_conforms(store.runs.get(run.id))
    assert done.status == RunStatus.COMPLETED
    assert done.context["outputs"] == {"total": 12}
    assert done.context["states"]["await_ok"] == {"by": "tester"}
    assert len(read_calls(calls)) == 1
    assert activity_ids(store, run.id) == ["ask:1:model:1"]
    assert_gap_free(store, run.id)
    view = service.show_run(store, run.id)
    assert (view.previous, view.current, view.next) == ("await_ok", "done", ())


def test_the_decision_takes_the_first_guard_that_holds(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, {"ask": [{"output": {"pick": 1}}]})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    failed = store.runs.get(run.id)
    assert failed.status == RunStatus.FAILED
    assert failed.current_state == "too_small"
    assert "state.advanced" in event_types(store, run)


def test_an_event_sent_before_the_wait_still_wakes_the_run(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    other = store.inbound_events.deliver("ok", {"n": 99}, {"early": False})
    early = store.inbound_events.deliver("ok", {"n": 5}, {"early": True})
    assert early.consumed_by_run_id is None  # nobody waits yet

    engine(store, provider).run_until_idle()
    done = store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED
    assert done.context["states"]["await_ok"] == {"early": True}
    assert store.inbound_events.get(early.id).consumed_by_run_id == run.id  # type: ignore[union-attr]
    assert store.inbound_events.get(other.id).consumed_by_run_id is None  # type: ignore[union-attr]


def test_invalid_output_is_repaired_then_accepted(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    responses = {"ask": [{"output": {"pick": "seven"}}, {"output": {"pick": 7}}]}
    provider, calls = scripted(tmp_path, responses)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    assert [c["call"] for c in read_calls(calls)] == [1, 2]
    assert activity_ids(store, run.id) == ["ask:1:model:1", "ask:1:model:2"]


def test_output_still_invalid_after_repairs_needs_attention(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, calls = scripted(tmp_path, {"ask": [{"output": {"nope": 1}}] * 3})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider, max_repairs=2).run_until_idle()
    stuck = store.runs.get(run.id)
    assert stuck.status == RunStatus.NEEDS_ATTENTION
    assert "still invalid after 2 repair attempts" in (stuck.waiting or {})["reason"]
    assert len(read_calls(calls)) == 3


def test_model_call_budget_exhausted_needs_attention_with_reason(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path, model_calls=1))
    provider, calls = scripted(
        tmp_path, {"ask": [{"output": {"pick": "x"}}, {"output": {"pick": 7}}]}
    )
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    stuck = store.runs.get(run.id)
    assert stuck.status == RunStatus.NEEDS_ATTENTION
    assert stuck.waiting == {
        "kind": "attention",
        "reason": "budget exhausted: model_calls would reach 2 of 1",
        "state": "ask",
    }
    assert len(read_calls(calls)) == 1  # the second call was never made
    assert "run.budget_exhausted" in event_types(store, run)


def test_budget_exhausted_fails_the_run_when_the_workflow_says_so(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path, model_calls=1, on_exhausted="failed"))
    provider, calls = scripted(tmp_path, {"ask": [{"output": {"pick": "x"}}]})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    failed = store.runs.get(run.id)
    assert failed.status == RunStatus.FAILED
    assert "model_calls" in (failed.waiting or {})["reason"]
    assert len(read_calls(calls)) == 1
    assert store.objectives.get(failed.objective_id).status == "failed"


def test_version_pinning_old_runs_finish_on_their_version(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path, factor=1))
    provider, _ = scripted(tmp_path, PICK_7)
    worker = engine(store, provider)
    old = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker.run_until_idle()

    register(store, small_workflow(tmp_path, factor=10))
    new = service.create_objective(
        store, service.StartObjective("small", {"n": 6}), service.CLI
    ).run
    assert new.workflow_digest != old.workflow_digest
    store.inbound_events.deliver("ok", {"n": 5}, None)
    store.inbound_events.deliver("ok", {"n": 6}, None)
    worker.run_until_idle()
    assert store.runs.get(old.id).context["outputs"] == {"total": 12}  # (7 + 5) * 1
    assert store.runs.get(new.id).context["outputs"] == {"total": 130}  # (7 + 6) * 10
    assert store.runs.get(old.id).workflow_digest == old.workflow_digest


def test_procurement_flow_runs_up_to_the_approval(store: Store, tmp_path: Path) -> None:
    register(store, compile_files(PROCUREMENT))
    offer = {"vendor": "Acme", "unit_price": 900, "currency": "EUR"}
    responses = {
        "research": [
            {
                "tool_calls": [
                    {"name": "search_vendors", "arguments": {"item": "laptop", "quantity": 10}}
                ]
            },
            {"output": offer},
        ]
    }
    provider, calls = scripted(tmp_path, responses)
    request = {"item": "laptop", "quantity": 10, "budget": 10000}
    run = service.create_objective(
        store, service.StartObjective("procure_laptops", {"request": request}), service.CLI
    ).run
    engine(store, provider).run_until_idle()

    stuck = assert_conforms(store.runs.get(run.id))
    # The order is drafted and the run waits, leaseless, for the requester's decision.
    assert stuck.status == RunStatus.WAITING_FOR_APPROVAL
    assert stuck.current_state == "review"
    assert stuck.waiting is not None
    assert stuck.waiting["kind"] == "approval"
    assert stuck.waiting["hash"] == stuck.context["states"]["draft"]["order"]["hash"]
    assert stuck.context["states"]["research"] == offer
    assert stuck.budget_used["tool_calls"] == 1
    assert activity_ids(store, run.id) == [
        "research:1:model:1",
        "research:1:tool:1:0",
        "research:1:model:2",
    ]
    [tool] = [a for a in store_activities(store, run.id) if a["kind"] == "tool"]
    # No runtime context here, so the read skill's URL (config.procurement_url) cannot be built.
    assert tool["result"]["error"]["code"] == "skill_failed"
    assert "procurement_url" in tool["result"]["error"]["message"]
    second = [c for c in read_calls(calls) if c["call"] == 2]
    assert len(second) == 1


def test_procurement_over_budget_ends_failed(store: Store, tmp_path: Path) -> None:
    register(store, compile_files(PROCUREMENT))
    offer = {"vendor": "Acme", "unit_price": 2000, "currency": "EUR"}
    provider, _ = scripted(tmp_path, {"research": [{"output": offer}]})
    request = {"item": "laptop", "quantity": 10, "budget": 10000}
    run = service.create_objective(
        store, service.StartObjective("procure_laptops", {"request": request}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.FAILED
    assert store.runs.get(run.id).current_state == "over_budget"


def store_activities(store: Store, run_id: str) -> list[dict[str, object]]:
    table = schema.activities
    with store.read() as conn:
        rows = conn.execute(sa.select(table).where(table.c.run_id == run_id)).mappings()
        return [dict(row) for row in rows]


def test_the_objective_records_how_its_run_ended(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    done = service.create_objective(store, service.StartObjective("small", {"n": 5}), service.CLI)
    canceled = service.create_objective(
        store, service.StartObjective("small", {"n": 6}), service.CLI
    )
    worker = engine(store, provider)
    worker.run_until_idle()
    assert store.objectives.get(done.objective.id).status == "active"  # still waiting
    store.inbound_events.deliver("ok", {"n": 5}, {"by": "tester"})
    worker.run_until_idle()
    service.cancel_run(store, service.RunCommand(canceled.run.id, "not needed"), service.CLI)
    assert store.runs.get(done.run.id).status == RunStatus.COMPLETED
    assert store.objectives.get(done.objective.id).status == "satisfied"
    assert store.objectives.get(canceled.objective.id).status == "retired"
