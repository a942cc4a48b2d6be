"""The one error shape for every error class, and capabilities with 501 for what is absent."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error


def test_not_found_for_records_and_for_routes(serve: Serve) -> None:
    with serve().client() as client:
        error = assert_error(client.get("/runs/0000nothing"), 404, "not_found")
        assert "0000nothing" in error["message"]
        assert_error(client.get("/objectives/0000nothing"), 404, "not_found")
        assert_error(client.get("/approvals/0000nothing"), 404, "not_found")
        assert_error(client.get("/actions/0000nothing"), 404, "not_found")
        assert_error(client.get("/proposals/0000nothing"), 404, "not_found")
        assert_error(client.get("/deployments/nothing/history"), 404, "not_found")
        assert_error(client.get("/definitions/" + "0" * 64), 404, "not_found")
        assert_error(client.get("/no/such/endpoint"), 404, "not_found")
        assert_error(client.delete("/runs"), 405, "method_not_allowed")


def test_invalid_requests_are_422_invalid_request_without_echoing_input(
    serve: Serve, store: Store
) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    with serve(external_workers=True).client() as client:
        error = assert_error(
            client.post(f"/runs/{run.id}/pause", json={"reason": "x", "bogus": "sekrit-123"}),
            422,
            "invalid_request",
        )
        assert error["details"]["problems"][0]["location"] == ["body", "bogus"]
        assert "sekrit-123" not in str(error)
        not_json = client.post(
            f"/runs/{run.id}/pause", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert_error(not_json, 422, "invalid_request")
        assert_error(client.get("/runs", params={"limit": 0}), 422, "invalid_request")
        assert_error(client.get("/runs", params={"status": "sideways"}), 422, "invalid_request")
        # a refusal by the service's own validation (inputs against the workflow's types)
        bad = client.post("/objectives", json={"workflow": "small", "inputs": {"n": "many"}})
        error = assert_error(bad, 422, "invalid_request")
        assert "invalid input for small" in error["message"]
        assert_error(client.get("/definitions/not-a-digest"), 422, "invalid_request")


def test_conflicts_are_409_with_their_stable_code(serve: Serve, store: Store) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    with serve().client() as client:
        stale = client.post(f"/runs/{run.id}/pause", json={"expectedRevision": run.revision + 5})
        assert_error(stale, 409, "stale_revision")
        assert_error(client.post(f"/runs/{run.id}/resume", json={}), 409, "invalid_status")


def test_unexpected_failures_are_500_internal_error_without_details(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("password=hunter2 at /secret/path")

    monkeypatch.setattr(service, "list_objectives", broken)
    with serve().client() as client:
        response = client.get("/objectives")
    error = assert_error(response, 500, "internal_error")
    assert "hunter2" not in response.text and "/secret/path" not in response.text
    assert "RuntimeError" not in response.text
    assert "reference" in error["message"]


def test_capabilities_follow_the_configuration(serve: Serve) -> None:
    with serve().client() as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
    assert listed["run_creation"]["available"] is False
    assert "--workers" in listed["run_creation"]["reason"]
    assert listed["run_creation"]["operations"] == [
        "objectives.create", "objectives.activate", "asks.plan", "asks.confirm",
    ]  # fmt: skip
    assert listed["approval_decisions"]["available"] is False
    assert listed["authoring"]["available"] is False
    assert listed["runs"]["available"] is True and listed["runs"]["version"] == "v1"
    assert "runs.events_stream" in listed["runs"]["operations"]

    authority = ApprovalAuthority(local_operator=True)
    with serve(external_workers=True, authority=authority).client() as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
    assert listed["run_creation"]["available"] is True
    assert listed["approval_decisions"]["available"] is True
    assert listed["approval_decisions"]["reason"] is None


def test_an_unconfigured_capability_is_not_served(serve: Serve) -> None:
    with serve().client() as client:
        created = client.post("/objectives", json={"workflow": "small", "inputs": {"n": 1}})
        error = assert_error(created, 501, "not_served")
        assert error["details"]["capability"] == "run_creation"
        assert "no workers" in error["message"]
        decided = client.post(
            "/approvals/0000nothing/decision", json={"decision": "approve", "hash": "0" * 64}
        )
        error = assert_error(decided, 501, "not_served")
        assert error["details"]["capability"] == "approval_decisions"
        # not hidden: the operations are still in the OpenAPI document
        paths = client.get("/openapi.json").json()["paths"]
        assert "post" in paths["/api/v1/objectives"]
        assert "post" in paths["/api/v1/approvals/{ref}/decision"]
        assert client.get("/objectives").status_code == 200


def test_an_unreachable_database_is_503_unavailable(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise sa.exc.OperationalError("SELECT", {}, Exception("password=hunter2 refused"))

    monkeypatch.setattr(service, "list_runs", unreachable)
    with serve().client() as client:
        response = client.get("/runs")
    assert_error(response, 503, "unavailable")
    assert "hunter2" not in response.text
