"""The served OpenAPI document is valid OpenAPI, as tools that read it (generators, gateways)
check it: openapi-spec-validator, against the version the document declares; and the usual
unversioned addresses of a FastAPI server's document and docs page redirect to it."""

from __future__ import annotations

import httpx
from openapi_spec_validator import validate

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error


def test_the_served_document_is_valid_openapi(serve: Serve) -> None:
    with serve().client() as client:
        document = client.get("/openapi.json").json()
    validate(document)  # raises, naming the first problem, when it is not valid
    paths = document["paths"]
    assert "/api/v1/runs/{run_id}/turns" in paths
    listed = {p["name"] for p in paths["/api/v1/runs"]["get"]["parameters"]}
    assert {"status", "workflow", "since", "after", "limit"} <= listed


def test_the_unversioned_addresses_redirect_to_the_versioned_ones(serve: Serve) -> None:
    server = serve()
    with httpx.Client(base_url=server.url, timeout=30.0) as client:
        for path, target in (("/openapi.json", "/api/v1/openapi.json"), ("/docs", "/api/v1/docs")):
            moved = client.get(path)
            assert (moved.status_code, moved.headers["location"]) == (307, target), path
            followed = client.get(path, follow_redirects=True)
            assert followed.status_code == 200 and followed.url.path == target
        assert client.get("/openapi.json", follow_redirects=True).json()["info"]["title"]
    # with the docs page turned off there is nothing to redirect to
    quiet = serve(docs=False)
    with httpx.Client(base_url=quiet.url, timeout=30.0) as client:
        assert client.get("/docs").status_code == 404
        assert client.get("/openapi.json").status_code == 307


def test_authorization_is_optional_only_where_a_caller_needs_none(
    serve: Serve, store: Store
) -> None:
    with serve().client() as client:  # the local operator presents its per-start secret
        operated = client.get("/openapi.json").json()
    assert operated["paths"]["/api/v1/runs"]["get"]["security"] == [{"bearer": []}]
    with serve(local_operator=None, insecure_no_auth=True).anonymous() as anyone:
        open_to_all = anyone.get("/openapi.json").json()
        assert anyone.get("/runs").status_code == 200  # as declared: no token needed
    assert open_to_all["paths"]["/api/v1/runs"]["get"]["security"] == [{"bearer": []}, {}]
    validate(open_to_all)
    request = service.NewToken("user:alice", ("viewer",), ("default",))
    service.tokens.create_token(store, request, service.CLI)
    with serve(local_operator=None, insecure_no_auth=True).anonymous() as anyone:
        closed = anyone.get("/openapi.json").json()  # a token exists: nobody without one
        assert_error(anyone.get("/runs"), 401, "unauthorized")
    assert closed["paths"]["/api/v1/runs"]["get"]["security"] == [{"bearer": []}]


def test_parameters_declare_what_is_enforced(serve: Serve) -> None:
    with serve(external_workers=True).client() as client:
        document = client.get("/openapi.json").json()
        runs = {
            p["name"]: p["schema"] for p in document["paths"]["/api/v1/runs"]["get"]["parameters"]
        }
        statuses = document["components"]["schemas"]["RunStatus"]["enum"]
        assert set(statuses) == {str(s) for s in RunStatus}
        assert {"$ref": "#/components/schemas/RunStatus"} in runs["status"]["anyOf"]
        assert_error(client.get("/runs", params={"status": "bogus"}), 422, "invalid_request")
        for since in ("2h", "1h30m", "2026-12-01", "2026-12-01T09:30:00Z", "99999999w"):
            answer = client.get("/runs", params={"since": since})
            assert answer.status_code == 200, (since, answer.text)
        for since in ("0", "yesterday", "2026-13-01", "2026-12-01T09:30", "2 h"):
            assert_error(client.get("/runs", params={"since": since}), 422, "invalid_request")
        assert_error(client.get("/definitions/abc"), 422, "invalid_request")
        unknown = client.get(f"/definitions/sha256:{'a' * 64}")
        assert_error(unknown, 404, "not_found")
        spaced = client.post(
            "/objectives", json={"workflow": "small", "inputs": {"n": 1}},
            headers={"Idempotency-Key": "two words"},
        )  # fmt: skip
        assert_error(spaced, 422, "invalid_request")
        typed = client.post("/runs/x/pause", json={"expectedRevision": False})
        assert_error(typed, 422, "invalid_request")  # strict: false is not 0


def test_an_undeclared_method_answers_405_with_every_method_of_the_path(serve: Serve) -> None:
    with serve().client() as client:
        refused = client.delete("/objectives")
        assert_error(refused, 405, "method_not_allowed")
        assert refused.headers["allow"] == "GET, POST"
        refused = client.put("/runs/x/pause")
        assert_error(refused, 405, "method_not_allowed")
        assert refused.headers["allow"] == "POST"
