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
