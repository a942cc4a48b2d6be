"""Triggers over real HTTP on both backends: an event fires its trigger once, and the trigger
routes list, show and change it."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.trigger_support import (
    EVENT_TRIGGER,
    deploy_triggers,
    objectives,
    trigger_project,
)


def test_an_event_fires_its_trigger_once_and_the_routes_show_it(
    serve: Serve, store: Store, tmp_path: Path
) -> None:
    deploy_triggers(store, trigger_project(tmp_path, EVENT_TRIGGER))
    event = {"name": "stock.low", "eventId": "evt-1", "payload": {"qty": 2}}
    with serve(external_workers=True).client() as client:
        first = client.post("/events", json=event)
        again = client.post("/events", json=event)
        assert first.status_code == 202, first.text
        [fired] = first.json()["triggered"]
        assert (fired["trigger_name"], fired["outcome"]) == ("restock", "started")
        assert again.json()["duplicate"] is True and again.json()["triggered"] == []
        listed = client.get("/triggers").json()["triggers"]
        assert [(t["name"], t["status"]) for t in listed] == [("restock", "active")]
        assert listed[0]["last_firing"]["objective_id"] == fired["objective_id"]
        shown = client.get("/triggers/restock").json()
        assert [f["id"] for f in shown["firings"]] == [fired["id"]]
        paused = client.post("/triggers/restock/status", json={"status": "paused"})
        assert paused.json()["trigger"]["status"] == "paused", paused.text
        # a paused trigger does not fire
        later = client.post("/events", json={**event, "eventId": "evt-2"})
        assert later.json()["triggered"] == []
        assert_error(client.get("/triggers/nightly"), 404, "not_found")
        assert_error(
            client.post("/triggers/restock/status", json={"status": "gone"}), 422, "invalid_request"
        )
    assert len(objectives(store)) == 1
