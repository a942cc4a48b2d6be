"""Objectives (idempotent creation), runs (expected revisions), event pages, the live event
stream and inbound events, over real HTTP on both backends."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.engine_support import PICK_7, assert_gap_free, engine, scripted
from tests.runtime.support import eventually

BODY = {"workflow": "small", "inputs": {"n": 5}}


def test_objective_creation_honours_the_idempotency_key(serve: Serve, store: Store) -> None:
    with serve(external_workers=True).client() as client:
        first = client.post("/objectives", json=BODY, headers={"Idempotency-Key": "order-42"})
        assert first.status_code == 201, first.text
        assert "Idempotent-Replayed" not in first.headers
        again = client.post("/objectives", json=BODY, headers={"Idempotency-Key": "order-42"})
        assert again.status_code == 201
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        other = client.post(
            "/objectives",
            json={"workflow": "small", "inputs": {"n": 6}},
            headers={"Idempotency-Key": "order-42"},
        )
        error = assert_error(other, 409, "idempotency_conflict")
        assert error["details"] == {"key": "order-42"}
        fresh = client.post("/objectives", json=BODY, headers={"Idempotency-Key": "order-43"})
        assert fresh.status_code == 201
        without = client.post("/objectives", json=BODY)
        assert without.status_code == 201
    created = first.json()
    assert created["created"] is True and created["run"]["status"] == "queued"
    assert created["objective"]["inputs"] == {"n": 5}
    ids = {o.id for o in service.list_objectives(store)}
    assert ids == {
        created["objective"]["id"],
        fresh.json()["objective"]["id"],
        without.json()["objective"]["id"],
    }


def test_a_replay_is_the_first_response_even_after_the_run_moved_on(
    serve: Serve, store: Store, tmp_path: Any
) -> None:
    with serve(external_workers=True).client() as client:
        headers = {"Idempotency-Key": "k-1"}
        first = client.post("/objectives", json=BODY, headers=headers).json()
        service.pause_run(store, service.RunCommand(first["run"]["id"], "moved on"), service.CLI)
        again = client.post("/objectives", json=BODY, headers=headers)
    assert again.json() == first
    assert again.json()["run"]["status"] == "queued"


def test_run_mutations_check_the_expected_revision(serve: Serve, store: Store) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    with serve().client() as client:
        shown = client.get(f"/runs/{run.id}").json()
        revision = shown["run"]["revision"]
        assert shown["position"]["current"] == "ask"
        paused = client.post(
            f"/runs/{run.id}/pause", json={"reason": "look", "expectedRevision": revision}
        )
        assert paused.status_code == 200, paused.text
        assert paused.json()["run"]["status"] == "paused"
        assert paused.json()["run"]["revision"] == revision + 1
        # the same revision again is stale now, for every mutation
        for verb in ("resume", "cancel"):
            stale = client.post(f"/runs/{run.id}/{verb}", json={"expectedRevision": revision})
            error = assert_error(stale, 409, "stale_revision")
            assert f"revision {revision + 1}" in error["message"]
        stale = client.post(
            f"/runs/{run.id}/intervene", json={"reason": "fix", "expectedRevision": revision}
        )
        assert_error(stale, 409, "stale_revision")
        assert store.runs.get(run.id).status == RunStatus.PAUSED
        intervened = client.post(
            f"/runs/{run.id}/intervene",
            json={"reason": "skip", "state": "sum", "expectedRevision": revision + 1},
        )
        assert intervened.status_code == 200, intervened.text
        assert intervened.json()["run"]["current_state"] == "sum"
        unknown = client.post(f"/runs/{run.id}/intervene", json={"reason": "x", "state": "nope"})
        assert_error(unknown, 422, "invalid_request")
        canceled = client.post(f"/runs/{run.id}/cancel", json={"reason": "done"})
        assert canceled.json()["run"]["status"] == "canceled"
        assert canceled.json()["changed"] is True
        # canceling again changes nothing and says so, as a repeated approval does
        events = store.runs.get(run.id).last_event_seq
        again = client.post(f"/runs/{run.id}/cancel", json={"reason": "again"})
        assert again.status_code == 200, again.text
        assert again.json()["changed"] is False
        assert again.json()["report"] == canceled.json()["report"]
        assert store.runs.get(run.id).last_event_seq == events
    assert [e.actor for e in store.runs.events(run.id)][-1] == "user:local"


def test_events_are_paged_by_sequence(serve: Serve, store: Store) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    for _ in range(3):
        service.pause_run(store, service.RunCommand(run.id), service.CLI)
        service.resume_run(store, service.RunCommand(run.id), service.CLI)
    seen: list[int] = []
    with serve().client() as client:
        after = 0
        while True:
            page = client.get(f"/runs/{run.id}/events", params={"after": after, "limit": 2})
            assert page.status_code == 200, page.text
            events = page.json()["events"]
            if not events:
                assert page.json()["next_after"] == after
                break
            assert len(events) <= 2
            seen.extend(e["seq"] for e in events)
            after = page.json()["next_after"]
        assert_error(client.get("/runs/0000nothing/events"), 404, "not_found")
    assert seen == list(range(1, 8))
    assert_gap_free(store, run.id)


def _read_stream(
    response: httpx.Response, out: list[dict[str, Any]], opened: threading.Event
) -> None:
    frame: dict[str, Any] = {}
    for line in response.iter_lines():
        opened.set()
        if line.startswith(":") or line.startswith("retry:"):
            continue
        if not line:
            if frame:
                out.append(frame)
                frame = {}
            continue
        field, _, value = line.partition(": ")
        frame[field] = json.loads(value) if field == "data" else value


def test_the_stream_sends_events_committed_after_it_opened_and_ends_with_the_run(
    serve: Serve, store: Store, tmp_path: Any
) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    server = serve()
    frames: list[dict[str, Any]] = []
    opened = threading.Event()
    with (
        server.client() as client,
        client.stream("GET", f"/runs/{run.id}/events/stream") as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = threading.Thread(target=_read_stream, args=(response, frames, opened))
        reader.start()
        eventually(lambda: opened.is_set() and [f for f in frames if f.get("id") == "1"])
        # committed after the stream opened: the engine's turns, then the inbound event
        provider, _ = scripted(tmp_path, PICK_7)
        engine(store, provider).run_until_idle()
        assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_EVENT
        eventually(lambda: any(f.get("event") == "wait.registered" for f in frames) or None)
        delivered = client.post("/events", json={"name": "ok", "correlation": {"n": 5}})
        assert delivered.status_code == 202, delivered.text
        assert delivered.json()["event"]["consumed_by_run_id"] == run.id
        engine(store, provider).run_until_idle()
        reader.join(timeout=30)
        assert not reader.is_alive(), "the stream did not end with the run"
    last = store.runs.get(run.id)
    assert last.status == RunStatus.COMPLETED
    sent = [f for f in frames if f.get("event") != "end"]
    assert [int(f["id"]) for f in sent] == list(range(1, last.last_event_seq + 1))
    assert all(f["data"]["seq"] == int(f["id"]) for f in sent)
    assert frames[-1]["event"] == "end"
    assert frames[-1]["data"]["status"] == "completed"


def test_the_stream_resumes_after_a_sequence(serve: Serve, store: Store) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    service.pause_run(store, service.RunCommand(run.id), service.CLI)
    service.cancel_run(store, service.RunCommand(run.id), service.CLI)
    with serve().client() as client:
        body = client.get(f"/runs/{run.id}/events/stream", params={"after": 1}).text
        again = client.get(f"/runs/{run.id}/events/stream", headers={"Last-Event-ID": "2"}).text
        assert_error(client.get("/runs/0000nothing/events/stream"), 404, "not_found")
    assert "id: 1\n" not in body and "id: 2\n" in body and "id: 3\n" in body
    assert "event: end" in body
    assert "id: 2\n" not in again and "id: 3\n" in again


def test_in_process_workers_execute_runs_created_through_the_api(
    serve: Serve, store: Store, tmp_path: Any
) -> None:
    from tests.runtime.engine_support import write_script

    responses = write_script(tmp_path / "responses.yaml", PICK_7)
    server = serve(workers=1, scripted_responses=responses)
    with server.client() as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
        assert listed["run_creation"]["available"] is True
        created = client.post("/objectives", json=BODY)
        assert created.status_code == 201, created.text
        run_id = created.json()["run"]["id"]

        def status() -> str:
            return str(client.get(f"/runs/{run_id}").json()["run"]["status"])

        eventually(lambda: status() == "waiting_for_event")
        client.post("/events", json={"name": "ok", "correlation": {"n": 5}})
        eventually(lambda: status() == "completed")
        assert client.get(f"/runs/{run_id}").json()["run"]["context"]["outputs"] == {"total": 12}


def test_lists_page_newest_first_with_the_cli_s_filters(serve: Serve, store: Store) -> None:
    made = [
        service.create_objective(store, service.StartObjective("small", {"n": n}), service.CLI).run
        for n in range(3)
    ]
    newest = [r.id for r in reversed(made)]
    with serve().client() as client:
        page = client.get("/runs", params={"limit": 2, "workflow": "small", "since": "1h"}).json()
        assert [r["id"] for r in page["runs"]] == newest[:2]
        assert page["next_after"] == newest[1]
        rest = client.get("/runs", params={"after": page["next_after"]}).json()
        assert [r["id"] for r in rest["runs"]] == newest[2:] and rest["next_after"] is None
        assert client.get("/runs", params={"workflow": "other"}).json()["runs"] == []
        objectives = client.get("/objectives", params={"limit": 1, "status": "active"}).json()
        assert objectives["objectives"][0]["id"] == made[-1].objective_id
        assert objectives["next_after"] == made[-1].objective_id
        for path in ("/runs", "/objectives", "/approvals", "/actions", "/proposals"):
            assert_error(client.get(path, params={"since": "soon"}), 422, "invalid_request")
        assert client.get("/approvals", params={"workflow": "small"}).json()["approvals"] == []


def test_turns_and_what_a_cancellation_prevented(serve: Serve, store: Store, tmp_path: Any) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    provider, _ = scripted(tmp_path, PICK_7)
    engine(store, provider).run_until_idle()
    with serve().client() as client:
        turns = client.get(f"/runs/{run.id}/turns")
        assert turns.status_code == 200, turns.text
        first = turns.json()["turns"][0]
        assert first["seq"] == 1 and first["outcome"] == "advanced"
        assert {"state", "started_at", "finished_at", "calls", "tokens"} <= first.keys()
        assert_error(client.get("/runs/0000nothing/turns"), 404, "not_found")
        response = client.post(f"/runs/{run.id}/cancel", json={"reason": "done"})
        assert response.status_code == 200, response.text
        canceled = response.json()
        assert canceled["run"]["status"] == "canceled"
        report = canceled["report"]
        assert report["reason"] == "done" and report["from_status"] == "waiting_for_event"
        assert report["actions"] == [] and report["in_flight_worker"] is None
