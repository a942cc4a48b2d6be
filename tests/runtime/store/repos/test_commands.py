from __future__ import annotations

import pytest

from openseal.errors import StoreError
from openseal.runtime.engine.cascade import cancel_run
from openseal.runtime.engine.endings import end_run
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import StaleEpoch
from openseal.runtime.store.tables.records import Claim, Run
from tests.runtime.support import new_run


def _claim(store: Store) -> Claim:
    held = store.leases.claim("w1")
    assert held is not None
    return held


def _run_in(store: Store, status: RunStatus) -> Run:
    """A run brought into ``status`` through the store's own operations."""
    run = new_run(store)
    if status == RunStatus.QUEUED:
        return run
    held = _claim(store)
    if status == RunStatus.PAUSED:
        return store.runs.pause(run.id, "user:op")
    if status == RunStatus.CANCELED:
        return cancel_run(store, run.id, "user:op")
    if status != RunStatus.RUNNING:
        with store.leases.fenced(held) as tx:
            end_run(store, tx, status, current_state="research")
    return store.runs.get(run.id)


def _refused(call: object) -> str:
    with pytest.raises(StoreError) as raised:
        call()  # type: ignore[operator]
    return raised.value.code


def test_pause_and_resume_a_running_run_fences_the_worker(store: Store) -> None:
    run = new_run(store)
    held = _claim(store)
    paused = store.runs.pause(run.id, "user:op", "look first")
    assert paused.status == RunStatus.PAUSED
    assert paused.paused_from_status == RunStatus.RUNNING
    assert paused.lease_owner is None
    assert paused.epoch == held.epoch + 1
    with pytest.raises(StaleEpoch), store.leases.fenced(held) as tx:
        tx.append_event("late", {})
    resumed = store.runs.resume(run.id, "user:op")
    assert resumed.status == RunStatus.QUEUED  # a fresh worker picks it up
    assert resumed.paused_from_status is None
    assert store.leases.claim("w2") is not None


def test_resume_restores_a_waiting_status(store: Store) -> None:
    run = _run_in(store, RunStatus.WAITING_FOR_APPROVAL)
    store.runs.pause(run.id, "user:op")
    assert store.runs.resume(run.id, "user:op").status == RunStatus.WAITING_FOR_APPROVAL


@pytest.mark.parametrize(
    "status", [RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.CANCELED, RunStatus.FAILED]
)
def test_pause_is_refused(store: Store, status: RunStatus) -> None:
    run = _run_in(store, status)
    assert _refused(lambda: store.runs.pause(run.id, "user:op")) == "invalid_status"


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.COMPLETED])
def test_resume_is_refused_unless_paused(store: Store, status: RunStatus) -> None:
    run = _run_in(store, status)
    assert _refused(lambda: store.runs.resume(run.id, "user:op")) == "invalid_status"


def test_cancel_is_durable_and_says_what_the_run_was_doing(store: Store) -> None:
    run = new_run(store)
    held = _claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="submit")
    canceled = cancel_run(store, run.id, "user:op", "wrong vendor")
    assert canceled.status == RunStatus.CANCELED
    assert canceled.epoch == held.epoch + 1
    assert canceled.lease_owner is None
    event = store.runs.events(run.id)[-1]
    assert event.type == "run.canceled"
    assert event.payload["from_status"] == RunStatus.RUNNING
    assert event.payload["current_state"] == "submit"
    assert event.payload["in_flight_worker"] == "w1"
    with pytest.raises(StaleEpoch), store.leases.fenced(held) as tx:
        end_run(store, tx, RunStatus.COMPLETED)
    assert store.runs.get(run.id).status == RunStatus.CANCELED
    assert store.leases.claim("w2") is None


@pytest.mark.parametrize(
    "status",
    [RunStatus.QUEUED, RunStatus.SLEEPING, RunStatus.PAUSED, RunStatus.NEEDS_ATTENTION],
)
def test_cancel_is_allowed_from_any_live_status(store: Store, status: RunStatus) -> None:
    run = _run_in(store, status)
    assert cancel_run(store, run.id, "user:op").status == RunStatus.CANCELED


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED])
def test_cancel_is_refused_when_terminal(store: Store, status: RunStatus) -> None:
    run = _run_in(store, status)
    assert _refused(lambda: cancel_run(store, run.id, "user:op")) == "invalid_status"


def test_intervene_on_a_run_needing_attention_queues_it(store: Store) -> None:
    run = _run_in(store, RunStatus.NEEDS_ATTENTION)
    changed = store.runs.intervene(
        run.id, "user:op", "supplied the PO id", state="done", value={"po": "PO-7"}
    )
    assert changed.status == RunStatus.QUEUED
    assert changed.current_state == "done"
    assert changed.context["states"]["research"] == {"po": "PO-7"}
    event = store.runs.events(run.id)[-1]
    assert (event.type, event.payload["from_state"], event.payload["to_state"]) == (
        "run.intervened",
        "research",
        "done",
    )


def test_intervene_on_a_paused_run_keeps_it_paused_until_resumed(store: Store) -> None:
    run = _run_in(store, RunStatus.PAUSED)
    changed = store.runs.intervene(run.id, "user:op", "skip", state="draft")
    assert (changed.status, changed.current_state) == (RunStatus.PAUSED, "draft")
    assert store.runs.resume(run.id, "user:op").status == RunStatus.QUEUED


@pytest.mark.parametrize(
    "status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.SLEEPING]
)
def test_intervene_is_refused(store: Store, status: RunStatus) -> None:
    run = _run_in(store, status)
    assert _refused(lambda: store.runs.intervene(run.id, "user:op", "x")) == "invalid_status"


def test_commands_on_a_missing_run(store: Store) -> None:
    assert _refused(lambda: store.runs.pause("nope", "user:op")) == "not_found"
