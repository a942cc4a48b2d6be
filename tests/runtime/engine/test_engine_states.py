"""State kinds beyond the basic flow (timer, parallel, for_each) and operator commands;
delegation has its own tests (test_delegation.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.providers import read_calls
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import InvalidStatus
from tests.runtime.engine_support import (
    DEFS,
    PICK_7,
    assert_conforms,
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


@pytest.fixture
def kinds(store: Store) -> Store:
    register(store, compile_files(DEFS / "kinds.hcl"))
    return store


def test_timer_wait_sleeps_without_a_lease_and_wakes_when_due(kinds: Store, tmp_path: Path) -> None:
    provider, _ = scripted(tmp_path, {})
    run = service.create_objective(kinds, service.StartObjective("nap", {}), service.CLI).run
    worker = engine(kinds, provider)
    worker.run_until_idle()
    sleeping = assert_conforms(kinds.runs.get(run.id))
    assert sleeping.status == RunStatus.SLEEPING
    assert sleeping.lease_owner is None
    assert sleeping.wake_at is not None
    assert service.show_run(kinds, run.id).reason == f"timer until {sleeping.wake_at.isoformat()}"

    real_clock = kinds.clock
    kinds.clock = lambda: real_clock() + timedelta(hours=1, seconds=1)
    worker.run_until_idle()
    assert kinds.runs.get(run.id).status == RunStatus.COMPLETED


def test_parallel_and_for_each_record_per_branch_and_per_item(kinds: Store, tmp_path: Path) -> None:
    provider, calls = scripted(tmp_path, {"both": [{"output": {"side": "left"}}]})
    run = service.create_objective(
        kinds, service.StartObjective("fan", {"items": [1, 2, 3]}), service.CLI
    ).run
    engine(kinds, provider).run_until_idle()
    done = assert_conforms(kinds.runs.get(run.id))
    assert done.status == RunStatus.COMPLETED
    assert done.context["states"]["both"] == {"left": {"side": "left"}, "right": "right"}
    assert done.context["states"]["each"] == [10, 20, 30]
    assert [c["state"] for c in read_calls(calls)] == ["both"]


def test_for_each_over_max_items_takes_the_failed_transition(kinds: Store, tmp_path: Path) -> None:
    provider, _ = scripted(tmp_path, {"both": [{"output": {"side": "left"}}]})
    run = service.create_objective(
        kinds, service.StartObjective("fan", {"items": [1, 2, 3, 4]}), service.CLI
    ).run
    engine(kinds, provider).run_until_idle()
    failed = kinds.runs.get(run.id)
    assert failed.status == RunStatus.FAILED
    assert failed.current_state == "too_many"
    assert "more than max_items 3" in failed.context["states"]["each"]["error"]


def test_pause_resume_cancel_through_the_service(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    worker = engine(store, provider)
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run

    service.pause_run(store, service.RunCommand(run.id, "hold on"), service.CLI)
    assert worker.run_until_idle() == []  # a paused run is not claimed
    assert service.show_run(store, run.id).reason == "paused (was queued)"
    service.resume_run(store, service.RunCommand(run.id), service.CLI)
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT

    service.pause_run(store, service.RunCommand(run.id), service.CLI)
    resumed = service.resume_run(store, service.RunCommand(run.id), service.CLI)
    assert resumed.status == RunStatus.WAITING_FOR_EVENT  # waits again, still registered
    canceled = service.cancel_run(store, service.RunCommand(run.id, "not needed"), service.CLI).run
    assert canceled.status == RunStatus.CANCELED
    with pytest.raises(InvalidStatus):
        service.resume_run(store, service.RunCommand(run.id), service.CLI)
    event = store.inbound_events.deliver("ok", {"n": 5}, None)
    assert event.consumed_by_run_id is None  # a canceled run takes no events
    assert event_types(store, run)[-1] == "run.canceled"


def test_intervene_with_a_value_continues_from_the_stuck_state(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path))
    provider, calls = scripted(tmp_path, {"ask": [{"output": {"bad": 1}}] * 3})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = engine(store, provider)
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.NEEDS_ATTENTION

    service.intervene(
        store, service.Intervention(run.id, "operator picked", value={"pick": 9}), service.CLI
    )
    worker.run_until_idle()
    fixed = store.runs.get(run.id)
    assert fixed.status == RunStatus.WAITING_FOR_EVENT
    assert fixed.context["states"]["sum"] == {"total": 14}
    assert len(read_calls(calls)) == 3  # the model was not asked again


def test_intervene_with_a_state_moves_the_run(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, {"ask": [{"output": {"bad": 1}}] * 3})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = engine(store, provider)
    worker.run_until_idle()
    service.intervene(
        store, service.Intervention(run.id, "skip it", state="too_small"), service.CLI
    )
    worker.run_until_idle()
    moved = store.runs.get(run.id)
    assert moved.status == RunStatus.FAILED
    assert moved.current_state == "too_small"


def test_retry_after_attention_calls_the_model_again(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path, model_calls=10))
    bad = {"output": {"bad": 1}}
    provider, calls = scripted(tmp_path, {"ask": [bad, bad, bad]})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = engine(store, provider)
    worker.run_until_idle()
    assert assert_conforms(store.runs.get(run.id)).status == RunStatus.NEEDS_ATTENTION
    provider.responses["ask"] = [{"output": {"pick": 8}}]
    service.intervene(store, service.Intervention(run.id, "model fixed, retry"), service.CLI)
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    assert len(read_calls(calls)) == 4


def test_intervene_refuses_an_unknown_state(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    service.pause_run(store, service.RunCommand(run.id), service.CLI)
    with pytest.raises(Exception, match="has no state 'nowhere'"):
        service.intervene(store, service.Intervention(run.id, "x", state="nowhere"), service.CLI)


def test_inputs_are_checked_against_the_workflow_types(store: Store, tmp_path: Path) -> None:
    register(store, small_workflow(tmp_path))
    with pytest.raises(Exception, match="invalid input for small") as raised:
        service.create_objective(store, service.StartObjective("small", {"n": "five"}), service.CLI)
    assert raised.value.code == "invalid_input"  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="no workflow 'missing'"):
        service.create_objective(store, service.StartObjective("missing", {}), service.CLI)


def test_an_unexpected_handler_error_stops_the_run_not_the_worker(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openseal.runtime.engine.states import HANDLERS
    from openseal.runtime.engine.states.base import Outcome, StepContext

    def broken(ctx: StepContext) -> Outcome:
        raise RuntimeError("handler bug")

    monkeypatch.setitem(HANDLERS, "transform", broken)
    register(store, small_workflow(tmp_path))
    provider, _ = scripted(tmp_path, PICK_7)
    first = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    second = service.create_objective(
        store, service.StartObjective("small", {"n": 6}), service.CLI
    ).run
    reports = engine(store, provider).run_until_idle()
    assert len(reports) == 2  # the worker carried on with the next run
    for run in (first, second):
        stuck = store.runs.get(run.id)
        assert stuck.status == RunStatus.NEEDS_ATTENTION
        assert (stuck.waiting or {})["reason"] == "RuntimeError: handler bug"
