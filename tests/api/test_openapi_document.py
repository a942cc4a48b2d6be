"""The served OpenAPI document is valid OpenAPI, as tools that read it (generators, gateways)
check it: openapi-spec-validator, against the version the document declares."""

from __future__ import annotations

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
