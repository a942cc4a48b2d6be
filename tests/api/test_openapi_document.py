"""The served OpenAPI document is valid OpenAPI, as tools that read it (generators, gateways)
check it: openapi-spec-validator, against the version the document declares; and the usual
unversioned addresses of a FastAPI server's document and docs page redirect to it."""

from __future__ import annotations

import httpx
from openapi_spec_validator import validate

from tests.api.conftest import Serve


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
