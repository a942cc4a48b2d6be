"""``POST /events`` redelivered by a sender that retries: the event id (``Idempotency-Key`` or
``eventId``) makes the second delivery an acknowledgement of the first, over real HTTP on
both backends."""

from __future__ import annotations

from typing import Any

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.engine_support import engine, scripted

EVENT = {"name": "ok", "correlation": {"n": 5}, "payload": {"shipment": "S-1"}}
TWO_PICKS = {"ask": [{"output": {"pick": 7}}, {"output": {"pick": 7}}]}


def test_a_redelivered_webhook_is_acknowledged_and_wakes_no_later_run(
    serve: Serve, store: Store, tmp_path: Any
) -> None:
    provider, _ = scripted(tmp_path, TWO_PICKS)
    first = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    assert store.runs.get(first.id).status == RunStatus.WAITING_FOR_EVENT
    with serve(external_workers=True).client() as client:
        headers = {"Idempotency-Key": "evt_0001"}
        delivered = client.post("/events", json=EVENT, headers=headers)
        assert delivered.status_code == 202, delivered.text
        assert delivered.json()["duplicate"] is False
        assert "Idempotent-Replayed" not in delivered.headers
        event = delivered.json()["event"]
        assert event["consumed_by_run_id"] == first.id

        later = service.create_objective(
            store, service.StartObjective("small", {"n": 5}), service.CLI
        ).run
        engine(store, provider).run_until_idle()
        assert store.runs.get(first.id).status == RunStatus.COMPLETED
        assert store.runs.get(later.id).status == RunStatus.WAITING_FOR_EVENT

        again = client.post("/events", json=EVENT, headers=headers)
        assert again.status_code == 202, again.text
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == {"event": event, "duplicate": True, "triggered": []}
        by_id = client.post("/events", json={**EVENT, "eventId": "evt_0001"})
        assert by_id.json() == {"event": event, "duplicate": True, "triggered": []}
    engine(store, provider).run_until_idle()
    assert store.runs.get(later.id).status == RunStatus.WAITING_FOR_EVENT


def test_an_event_id_reused_for_another_event_is_refused(serve: Serve) -> None:
    with serve(external_workers=True).client() as client:
        first = client.post("/events", json={**EVENT, "eventId": "evt_0002"})
        assert first.status_code == 202, first.text
        other = {**EVENT, "payload": {"shipment": "S-2"}, "eventId": "evt_0002"}
        assert_error(client.post("/events", json=other), 409, "idempotency_conflict")
        both = client.post(
            "/events", json={**EVENT, "eventId": "evt_0003"}, headers={"Idempotency-Key": "x"}
        )
        assert_error(both, 422, "invalid_request")
        unkeyed = [client.post("/events", json=EVENT).json()["event"]["id"] for _ in range(2)]
        assert len(set(unkeyed)) == 2


def _waiting(store: Store, provider: Any, n: int, scope: str) -> str:
    request = service.StartObjective("small", {"n": n}, scope=scope)
    run = service.create_objective(store, request, service.CLI).run
    engine(store, provider).run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
    return run.id


def test_an_event_wakes_only_runs_in_its_senders_scopes(
    serve: Serve, store: Store, tmp_path: Any
) -> None:
    provider, _ = scripted(tmp_path, {"ask": [{"output": {"pick": 7}}] * 6})
    ops = _waiting(store, provider, 5, "ops")  # the oldest waiter
    default = _waiting(store, provider, 5, "default")
    tokens = {
        who: service.tokens.create_token(
            store, service.NewToken(f"service:{who}", ("operator",), scopes), service.CLI
        ).secret
        for who, scopes in (("shop", ("default",)), ("ops", ("ops",)), ("all", ("*",)))
    }
    server = serve(external_workers=True)
    with server.client(tokens["shop"]) as shop, server.client(tokens["ops"]) as opsbot:
        woke = shop.post("/events", json=EVENT)
        assert woke.status_code == 202, woke.text
        assert woke.json()["event"]["consumed_by_run_id"] == default  # not the older ops run
        assert woke.json()["event"]["scopes"] == ["default"]
        kept = shop.post("/events", json=EVENT).json()["event"]  # nobody in default waits
        assert kept["consumed_by_run_id"] is None
        assert store.runs.get(ops).status == RunStatus.WAITING_FOR_EVENT
        # a run of another scope registering its wait does not take the kept event either
        engine(store, provider).run_until_idle()
        later_ops = _waiting(store, provider, 5, "ops")
        assert store.inbound_events.get(kept["id"]).consumed_by_run_id is None  # type: ignore[union-attr]
        mine = opsbot.post("/events", json=EVENT).json()["event"]
        assert mine["consumed_by_run_id"] == ops and mine["scopes"] == ["ops"]
    # a run of the event's scope registering later takes the kept one
    later_default = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    engine(store, provider).run_until_idle()
    assert store.inbound_events.get(kept["id"]).consumed_by_run_id == later_default.id  # type: ignore[union-attr]
    with server.client(tokens["all"]) as everywhere:  # a token for every scope wakes any run
        anyone = everywhere.post("/events", json=EVENT).json()["event"]
        assert anyone["consumed_by_run_id"] == later_ops and anyone["scopes"] is None
