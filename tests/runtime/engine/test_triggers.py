"""Triggers in the store and the scheduler: one firing per occurrence, catch-up, overlap,
events, pause and retire. The store's clock is the test's; every test runs on both backends."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest

from openseal.runtime import faults, service
from openseal.runtime.access import Grant
from openseal.runtime.caller import Caller
from openseal.runtime.clock import utcnow
from openseal.runtime.engine.cascade import cancel_run
from openseal.runtime.engine.triggers import Scheduler
from openseal.runtime.providers import ScriptedProvider
from openseal.runtime.statuses import ObjectiveStatus
from openseal.runtime.store import Delivery, InvalidStatus, Run, Store, TriggerFiring
from tests.runtime.engine_support import PICK_7, engine
from tests.runtime.support import Backend, eventually
from tests.runtime.trigger_support import (
    EVENT_TRIGGER,
    START,
    Clock,
    deploy_triggers,
    objectives,
    schedule,
    trigger_project,
)


def opened(backend: Backend, clock: Clock) -> Store:
    store = backend.open()
    store.clock = clock
    return store


def fired(store: Store, name: str = "hourly") -> list[TriggerFiring]:
    """Firings oldest first."""
    return store.triggers.firings(name)[::-1]


def outcomes(store: Store, name: str = "hourly") -> list[tuple[str, str]]:
    return [(f.occurred_at.strftime("%H:%M"), f.outcome) for f in fired(store, name)]


def end_objective(store: Store, firing: TriggerFiring) -> None:
    assert firing.objective_id is not None
    run = service.show_objective(store, firing.objective_id)[1][0]
    cancel_run(store, run.id, "user:test", "done with it")


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_a_due_occurrence_starts_one_objective_however_many_schedulers_look(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, schedule()))
    schedulers = [Scheduler(opened(backend, clock), refresh=0) for _ in range(3)]
    assert [s.poll() for s in schedulers] == [[], [], []]  # nothing due before 09:30
    clock.advance(hours=1)
    results = [s.poll() for s in schedulers]
    assert sorted(len(r) for r in results) == [0, 0, 1]
    [firing] = fired(store)
    assert firing.outcome == "started" and firing.occurred_at == START.replace(hour=9)
    objective, runs = service.show_objective(store, str(firing.objective_id))
    assert objective.inputs == {"n": 1} and objective.created_by == "trigger:hourly"
    assert len(runs) == 1
    assert len(objectives(store)) == 1
    # a restarted worker (a new scheduler) finds the occurrence recorded and starts nothing
    assert Scheduler(opened(backend, clock), refresh=0).poll() == []
    assert len(objectives(store)) == 1


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("latest", [("13:30", "started")]),
        ("all", [("11:30", "started"), ("12:30", "skipped"), ("13:30", "skipped")]),
        ("none", [("13:30", "missed")]),
    ],
)
def test_catch_up_after_downtime(
    backend: Backend,
    clock: Clock,
    tmp_path: Path,
    policy: str,
    expected: list[tuple[str, str]],
) -> None:
    store = opened(backend, clock)
    options = {"catch_up": f'"{policy}"', "catch_up_limit": "3"}
    deploy_triggers(store, trigger_project(tmp_path, schedule(**options)))
    clock.advance(hours=5, minutes=10)  # no worker ran from 08:30 to 13:40
    Scheduler(store, refresh=0).poll()
    assert outcomes(store) == expected
    started = [f for f in fired(store) if f.outcome == "started"]
    assert len(objectives(store)) == len(started)
    # on time again: the next occurrence fires whatever the policy
    for firing in started:
        end_objective(store, firing)
    clock.advance(minutes=50, seconds=30)  # 14:30:30, within the grace
    Scheduler(store, refresh=0).poll()
    assert outcomes(store)[-1] == ("14:30", "started")


def test_catch_up_none_fires_an_occurrence_within_the_grace(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, schedule(catch_up='"none"', grace='"2m"')))
    clock.advance(hours=1, seconds=90)
    Scheduler(store, refresh=0).poll()
    assert outcomes(store) == [("09:30", "started")]


def test_overlap_skip_queue_allow(backend: Backend, clock: Clock, tmp_path: Path) -> None:
    store = opened(backend, clock)
    triggers = "".join(
        schedule(name, overlap=f'"{name}"', catch_up='"all"') for name in ("skip", "queue", "allow")
    )
    deploy_triggers(store, trigger_project(tmp_path, triggers))
    scheduler = Scheduler(store, refresh=0)
    for _ in range(3):
        clock.advance(hours=1)
        scheduler.poll()
    assert [o for _, o in outcomes(store, "skip")] == ["started", "skipped", "skipped"]
    assert [o for _, o in outcomes(store, "queue")] == ["started", "queued", "queued"]
    assert [o for _, o in outcomes(store, "allow")] == ["started"] * 3
    # the queue moves one at a time, when the objective before ends
    first = fired(store, "queue")[0]
    scheduler.poll()
    assert [o for _, o in outcomes(store, "queue")] == ["started", "queued", "queued"]
    end_objective(store, first)
    scheduler.poll()
    assert [o for _, o in outcomes(store, "queue")] == ["started", "started", "queued"]
    # a skipped occurrence never runs later
    end_objective(store, fired(store, "skip")[0])
    scheduler.poll()
    assert [o for _, o in outcomes(store, "skip")] == ["started", "skipped", "skipped"]


def test_the_end_of_the_objective_a_queue_waits_for_starts_the_next_without_a_refresh(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    triggers = schedule("queue", overlap='"queue"', catch_up='"all"') + schedule(
        "skip", overlap='"skip"'
    )
    deploy_triggers(store, trigger_project(tmp_path, triggers))
    scheduler = Scheduler(store, refresh=3600)  # only an ended objective makes it look again
    for _ in range(3):
        clock.advance(hours=1)
        scheduler.poll()
    assert [o for _, o in outcomes(store, "queue")] == ["started", "queued", "queued"]
    assert scheduler.poll() == []

    # the run's end (canceled: the objective is retired) asks the schedulers to look
    end_objective(store, fired(store, "queue")[0])
    [started] = scheduler.poll()
    assert started.outcome == "started" and started.occurred_at == START.replace(hour=10)
    # and so does an operator retiring the objective
    service.steer_objective(
        store, service.ObjectiveCommand(str(started.objective_id), "retired"), service.CLI
    )
    [started] = scheduler.poll()
    assert started.occurred_at == START.replace(hour=11)
    # an objective with nothing queued behind it ends without asking
    mark = store.triggers_mark()
    end_objective(store, started)
    end_objective(store, fired(store, "skip")[0])
    assert store.triggers_mark() == mark and scheduler.poll() == []


def test_a_worker_starts_a_queued_firing_when_its_objective_ends_elsewhere(
    backend: Backend, tmp_path: Path
) -> None:
    """The worker polls once an hour and re-reads its triggers once an hour: only the wake-up
    committed with the objective's end by another store (NOTIFY, or a datagram on SQLite), as
    another process's would be, can start the next."""
    store = backend.open()
    store.clock = lambda: utcnow() - timedelta(hours=2.5)  # two occurrences are due
    deploy_triggers(store, trigger_project(tmp_path, schedule(overlap='"queue"', catch_up='"all"')))
    store.clock = utcnow
    worker_store = backend.open()
    worker = engine(worker_store, ScriptedProvider({"ask": [PICK_7["ask"][0]] * 2}))
    worker.triggers.refresh = 3600
    thread = threading.Thread(target=worker.run_forever, kwargs={"poll_interval": 3600})
    thread.start()
    try:
        first = eventually(lambda: [f for f in fired(store) if f.outcome == "queued"], timeout=60)
        [run] = eventually(lambda: waiting_runs(store), timeout=60)
        eventually(lambda: worker_store.work_signal.waiting == 1, timeout=60)
        cancel_run(store, run.id, "user:test", "done with it")
        eventually(lambda: fired(store)[1].outcome == "started", timeout=60)
        assert first[0].id == fired(store)[1].id
        [second] = eventually(lambda: waiting_runs(store), timeout=60)
        assert second.objective_id == fired(store)[1].objective_id
    finally:
        worker.stop()
        thread.join(timeout=60)
    assert not thread.is_alive()


def waiting_runs(store: Store) -> list[Run]:
    return service.list_runs(store, status="waiting_for_event")


def test_pause_resume_and_retire(backend: Backend, clock: Clock, tmp_path: Path) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, schedule(catch_up='"latest"')))
    operator = service.CLI
    service.set_trigger_status(store, service.TriggerCommand("hourly", "paused"), operator)
    clock.advance(hours=3)
    Scheduler(store, refresh=0).poll()
    assert outcomes(store) == []
    [view] = service.list_triggers(store)
    assert (view.status, view.next_occurrence) == ("paused", None)
    resumed = service.set_trigger_status(
        store, service.TriggerCommand("hourly", "active"), operator
    )
    assert resumed.next_occurrence == START.replace(hour=12)
    Scheduler(store, refresh=0).poll()  # the pause is caught up: the latest missed one fires
    assert outcomes(store) == [("11:30", "started")]
    [view] = service.list_triggers(store)
    assert view.last_firing is not None and view.last_firing.outcome == "started"
    assert view.next_occurrence == START.replace(hour=12)
    service.set_trigger_status(store, service.TriggerCommand("hourly", "retired"), operator)
    clock.advance(hours=2)
    Scheduler(store, refresh=0).poll()
    assert len(fired(store)) == 1
    with pytest.raises(InvalidStatus):
        service.set_trigger_status(store, service.TriggerCommand("hourly", "active"), operator)


def test_a_cron_schedule_fires_in_its_time_zone(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    trigger = """
trigger "berlin_morning" {
  workflow = workflow.small
  schedule {
    cron      = "0 10 * * MON-FRI"
    time_zone = "Europe/Berlin"
  }
  input = { n = 2 }
}
"""
    deploy_triggers(store, trigger_project(tmp_path, trigger))
    [view] = service.list_triggers(store)
    assert view.next_occurrence == START.replace(hour=9, minute=0)  # 10:00 in Berlin (CET)
    clock.advance(minutes=29)
    Scheduler(store, refresh=0).poll()
    assert outcomes(store, "berlin_morning") == []
    clock.advance(minutes=2)
    Scheduler(store, refresh=0).poll()
    assert outcomes(store, "berlin_morning") == [("09:00", "started")]


def deliver(store: Store, payload: object, key: str | None) -> Delivery:
    request = service.EventDelivery("stock.low", payload, {"n": 3}, key)
    return service.receive_event(store, request, service.CLI)


def test_an_event_fires_its_trigger_once_even_when_delivered_again(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    first = deliver(store, {"qty": 3}, "evt-1")
    again = deliver(store, {"qty": 3}, "evt-1")
    assert [f.outcome for f in first.fired] == ["started"]
    assert again.duplicate and again.fired == ()
    [firing] = fired(store, "restock")
    assert firing.inbound_event_id == first.event.id
    objective = store.objectives.get(str(firing.objective_id))
    assert objective.inputs == {"n": 30}  # the mapping: payload.qty * 10
    assert len(objectives(store)) == 1


def test_the_filter_decides_and_each_event_is_its_own_occurrence(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    assert deliver(store, {"qty": 7}, "evt-1").fired == ()  # filter: qty < 5
    assert deliver(store, {"other": 1}, "evt-2").fired == ()  # no qty: no match
    assert len(deliver(store, {"qty": 1}, "evt-3").fired) == 1
    assert len(deliver(store, {"qty": 2}, None).fired) == 1
    assert len(objectives(store)) == 2


def test_a_trigger_and_a_waiting_run_both_take_one_event(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    waiting = service.create_objective(
        store, service.StartObjective("small", {"n": 3}), service.CLI
    ).run
    claim = store.leases.claim("w1")
    assert claim is not None and claim.run_id == waiting.id
    with store.leases.fenced(claim) as tx:
        assert tx.register_event_wait("stock.low", {"n": 3}) is None
    delivery = deliver(store, {"qty": 4}, "evt-9")
    assert delivery.event.consumed_by_run_id == waiting.id
    [firing] = delivery.fired
    assert firing.outcome == "started" and firing.inbound_event_id == delivery.event.id
    assert len(objectives(store)) == 2


def test_inputs_that_do_not_fit_spend_the_occurrence_and_say_why(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    sized = 'trigger "sized" {\n  workflow = workflow.small\n  event { name = "stock.low" }\n'
    sized += "  input = { n = payload.size }\n}\n"
    deploy_triggers(store, trigger_project(tmp_path, sized))
    [firing] = deliver(store, {"size": "big"}, "evt-1").fired
    assert firing.outcome == "failed" and firing.objective_id is None
    assert firing.detail is not None and "invalid input for small: n" in firing.detail
    [firing] = deliver(store, {"colour": "red"}, "evt-2").fired
    assert firing.outcome == "failed"
    assert firing.detail is not None and "could not be computed" in firing.detail
    assert objectives(store) == []
    # the occurrence is spent: delivering the event again starts nothing
    assert deliver(store, {"size": "big"}, "evt-1").fired == ()


def test_objectives_started_by_triggers_end_their_overlap(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, schedule()))
    scheduler = Scheduler(store, refresh=0)
    clock.advance(hours=1)
    scheduler.poll()
    first = fired(store)[0]
    end_objective(store, first)
    assert store.objectives.get(str(first.objective_id)).status == ObjectiveStatus.RETIRED
    clock.advance(hours=1)
    scheduler.poll()
    assert [o for _, o in outcomes(store)] == ["started", "started"]


class Crash(Exception):
    """Stands for the server stopping at an inbound event's crash point."""


def crashing_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """The next deliveries stop at ``point`` (``event.received``: written, not committed;
    ``event.received.committed``: committed, not answered)."""

    def hook(reached: str, event_id: str) -> None:
        if reached == point:
            raise Crash(event_id)

    monkeypatch.setattr(faults, "event_hook_from_env", lambda: hook)


def test_an_event_whose_delivery_stops_before_its_commit_leaves_nothing_to_fire(
    backend: Backend, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    waiting = service.create_objective(
        store, service.StartObjective("small", {"n": 3}), service.CLI
    ).run
    claim = store.leases.claim("w1")
    assert claim is not None and claim.run_id == waiting.id
    with store.leases.fenced(claim) as tx:
        assert tx.register_event_wait("stock.low", {"n": 3}) is None
    crashing_at(monkeypatch, "event.received")
    with pytest.raises(Crash):
        deliver(store, {"qty": 3}, "evt-1")
    # the event, its firing, its objective and the run's wake-up were one transaction
    assert fired(store, "restock") == [] and len(objectives(store)) == 1
    assert store.runs.get(waiting.id).waiting is not None
    assert "delivered" not in (store.runs.get(waiting.id).waiting or {})
    monkeypatch.undo()
    again = deliver(store, {"qty": 3}, "evt-1")  # the sender got no answer: it sends again
    assert not again.duplicate and again.event.consumed_by_run_id == waiting.id
    [firing] = again.fired
    assert firing.outcome == "started" and firing.inbound_event_id == again.event.id
    assert deliver(store, {"qty": 3}, "evt-1").fired == ()
    assert len(fired(store, "restock")) == 1 and len(objectives(store)) == 2


def test_a_stored_event_has_its_firings_without_being_delivered_again(
    backend: Backend, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    crashing_at(monkeypatch, "event.received.committed")
    with pytest.raises(Crash) as stopped:
        deliver(store, {"qty": 3}, "evt-1")
    monkeypatch.undo()
    [firing] = fired(store, "restock")
    assert firing.inbound_event_id == str(stopped.value) and firing.outcome == "started"
    [objective] = objectives(store)
    assert objective.id == firing.objective_id
    again = deliver(store, {"qty": 3}, "evt-1")
    assert again.duplicate and again.fired == ()
    assert len(fired(store, "restock")) == 1 and len(objectives(store)) == 1


def test_concurrent_deliveries_of_one_event_fire_each_trigger_once(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    deploy_triggers(opened(backend, clock), trigger_project(tmp_path, EVENT_TRIGGER))
    stores = [opened(backend, clock) for _ in range(4)]
    start = threading.Barrier(len(stores))
    results: list[Delivery | BaseException] = []

    def send(store: Store) -> None:
        start.wait(timeout=30)
        try:
            results.append(deliver(store, {"qty": 2}, "evt-7"))
        except BaseException as exc:  # reported below, with the others
            results.append(exc)

    threads = [threading.Thread(target=send, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a delivery hung"
    deliveries = [r for r in results if isinstance(r, Delivery)]
    assert len(deliveries) == len(stores), results
    assert sorted(len(d.fired) for d in deliveries) == [0] * (len(stores) - 1) + [1]
    assert len(fired(stores[0], "restock")) == 1 and len(objectives(stores[0])) == 1


def test_an_event_fires_triggers_only_when_its_scopes_reach_default(
    backend: Backend, clock: Clock, tmp_path: Path
) -> None:
    store = opened(backend, clock)
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))

    def sent_by(scopes: tuple[str, ...], key: str) -> Delivery:
        caller = Caller("service:shop", local=False, grant=Grant.of(("operator",), scopes))
        request = service.EventDelivery("stock.low", {"qty": 2}, {"n": 3}, key)
        return service.receive_event(store, request, caller)

    assert sent_by(("ops",), "evt-1").fired == ()
    assert len(sent_by(("ops", "default"), "evt-2").fired) == 1
    assert len(sent_by(("*",), "evt-3").fired) == 1
    assert len(fired(store, "restock")) == 2 and len(objectives(store)) == 2
