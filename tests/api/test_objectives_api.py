"""Objectives over HTTP: a goal and a priority at creation, pausing, resuming and retiring
(with their runs, and ``expectedRevision``), on both backends."""

from __future__ import annotations

from openseal.runtime import service
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error


def test_an_objective_is_created_with_a_goal_and_a_priority(serve: Serve, store: Store) -> None:
    body = {"workflow": "small", "inputs": {"n": 5}, "goal": "pick one", "priority": 9}
    with serve(external_workers=True).client() as client:
        created = client.post("/objectives", json=body)
        assert created.status_code == 201, created.text
        objective, run = created.json()["objective"], created.json()["run"]
        assert (objective["goal"], objective["priority"], run["priority"]) == ("pick one", 9, 9)
        assert objective["attempts"] == 1 and run["attempt"] == 1
        too_high = client.post("/objectives", json={**body, "priority": 1001})
        assert_error(too_high, 422, "invalid_request")
        shown = client.get(f"/objectives/{objective['id']}").json()
        [listed] = client.get("/objectives").json()["objectives"]
    assert (listed["goal"], listed["priority"]) == ("pick one", 9)
    assert [r["id"] for r in shown["runs"]] == [run["id"]]
    assert store.objectives.get(objective["id"]).goal == "pick one"


def test_pause_resume_and_retire_an_objective_with_its_runs(serve: Serve, store: Store) -> None:
    created = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    )
    objective_id = created.objective.id
    path = f"/objectives/{objective_id}/status"
    with serve().client() as client:
        paused = client.post(path, json={"status": "paused", "reason": "outage"})
        assert paused.status_code == 200, paused.text
        assert paused.json()["objective"]["status"] == "paused"
        assert [r["status"] for r in paused.json()["runs"]] == ["paused"]
        revision = paused.json()["objective"]["revision"]

        stale = client.post(path, json={"status": "active", "expectedRevision": revision - 1})
        assert_error(stale, 409, "stale_revision")
        resumed = client.post(path, json={"status": "active", "expectedRevision": revision})
        assert resumed.json()["objective"]["status"] == "active"
        assert [r["status"] for r in resumed.json()["runs"]] == ["queued"]

        retired = client.post(path, json={"status": "retired"})
        assert retired.json()["objective"]["status"] == "retired"
        assert [r["status"] for r in retired.json()["runs"]] == ["canceled"]
        assert_error(client.post(path, json={"status": "paused"}), 409, "invalid_status")
        assert_error(client.post(path, json={"status": "satisfied"}), 422, "invalid_request")
        assert_error(
            client.post("/objectives/0123456789abcdef/status", json={"status": "paused"}),
            404,
            "not_found",
        )
    assert store.runs.get(created.run.id).status == "canceled"


def test_a_draft_objective_starts_its_first_run_when_activated(serve: Serve, store: Store) -> None:
    body = {"workflow": "small", "inputs": {"n": 5}, "draft": True}
    with serve(external_workers=True).client() as client:
        created = client.post("/objectives", json=body)
        assert created.status_code == 201, created.text
        objective = created.json()["objective"]
        assert (objective["status"], created.json()["run"]) == ("draft", None)
        drafts = client.get("/objectives", params={"status": "draft"}).json()["objectives"]
        assert [o["id"] for o in drafts] == [objective["id"]]
        status = f"/objectives/{objective['id']}/status"
        resumed = client.post(status, json={"status": "active"})
        assert_error(resumed, 409, "objective_draft")
        hint = f"activate it with `openseal objectives activate {objective['id']}`"
        assert hint in resumed.json()["error"]["message"]
        path = f"/objectives/{objective['id']}/activate"
        activated = client.post(path, json={"reason": "go"})
        assert activated.status_code == 200, activated.text
        assert activated.json()["objective"]["status"] == "active"
        [run] = activated.json()["runs"]
        assert (run["status"], run["attempt"]) == ("queued", 1)
        again = client.post(path, json={})
        assert_error(again, 409, "invalid_status")
        assert "it is active, not a draft" in again.json()["error"]["message"]
        assert client.post(status, json={"status": "paused"}).status_code == 200
        assert_error(client.post(path, json={}), 409, "invalid_status")
    assert store.runs.events(run["id"])[0].payload["activated"] is True


def test_activating_a_draft_is_not_served_without_workers(serve: Serve, store: Store) -> None:
    request = service.StartObjective("small", {"n": 1}, draft=True)
    draft = service.create_objective(store, request, service.CLI).objective
    with serve().client() as client:
        refused = client.post(f"/objectives/{draft.id}/activate", json={})
    assert_error(refused, 501, "not_served")
    assert store.objectives.get(draft.id) == draft
