"""What the API answers is what its OpenAPI document declares: each real answer below, success
or error, validates against the schema the document gives for its operation and status."""

from __future__ import annotations

from typing import Any

import httpx
from jsonschema import Draft202012Validator

from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.test_access import Records, call, records, routes  # noqa: F401  (fixture)
from tests.runtime.action_support import simulator_fixture  # noqa: F401  (fixture)

PREFIX = "/api/v1"


class Declared:
    """The OpenAPI document, and a check of answers against it."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.checked: set[tuple[str, str, int]] = set()

    def check(self, method: str, path: str, response: httpx.Response) -> dict[str, Any]:
        """``response`` (to ``method path``, ``path`` as the document writes it) has a status
        the operation declares and a body its schema for that status accepts."""
        operation = self.document["paths"][PREFIX + path][method]
        declared = operation["responses"]
        status = str(response.status_code)
        assert status in declared, f"{method} {path} answered {status}: {response.text}"
        schema = declared[status]["content"]["application/json"]["schema"]
        validator = Draft202012Validator({**schema, "components": self.document["components"]})
        body: dict[str, Any] = response.json()
        problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in
                    validator.iter_errors(body)]  # fmt: skip
        assert problems == [], f"{method} {path} {status}: {problems}"
        self.checked.add((method, path, response.status_code))
        return body


def test_real_answers_validate_against_the_declared_documents(serve: Serve, store: Store) -> None:
    with serve(external_workers=True).client() as client:
        api = Declared(client.get("/openapi.json").json())
        check = api.check
        check("get", "/capabilities", client.get("/capabilities"))
        check("get", "/me", client.get("/me"))
        started = check("post", "/objectives", client.post(
            "/objectives", json={"workflow": "small", "inputs": {"n": 5}}
        ))  # fmt: skip
        run_id, objective_id = started["run"]["id"], started["objective"]["id"]
        check("get", "/objectives", client.get("/objectives"))
        check("get", "/objectives/{objective_id}", client.get(f"/objectives/{objective_id}"))
        check("get", "/runs", client.get("/runs"))
        check("get", "/runs/{run_id}", client.get(f"/runs/{run_id}"))
        check("get", "/runs/{run_id}/events", client.get(f"/runs/{run_id}/events"))
        check("get", "/runs/{run_id}/turns", client.get(f"/runs/{run_id}/turns"))
        check("post", "/runs/{run_id}/pause", client.post(f"/runs/{run_id}/pause", json={}))
        check("post", "/runs/{run_id}/resume", client.post(f"/runs/{run_id}/resume", json={}))
        check("get", "/console/runs", client.get("/console/runs"))
        check("get", "/console/runs/{run_id}", client.get(f"/console/runs/{run_id}"))
        check("post", "/runs/{run_id}/cancel", client.post(f"/runs/{run_id}/cancel", json={}))
        check("post", "/events", client.post(
            "/events", json={"name": "nobody.waits", "correlation": {"k": 1}}
        ))  # fmt: skip
        check("get", "/approvals", client.get("/approvals"))
        check("get", "/actions", client.get("/actions"))
        check("get", "/agent-requests", client.get("/agent-requests"))
        check("get", "/triggers", client.get("/triggers"))
        deployments = check("get", "/deployments", client.get("/deployments"))
        digest = deployments["deployments"][0]["active_digest"]
        check("get", "/definitions/{digest}", client.get(f"/definitions/{digest}"))
        check("get", "/deployments/{name}", client.get("/deployments/small"))
        check("get", "/deployments/{name}/history", client.get("/deployments/small/history"))
        check("get", "/proposals", client.get("/proposals"))
        # errors have the one shape, under the statuses each operation declares
        check("get", "/runs/{run_id}", client.get("/runs/no-such-run"))
        check("get", "/runs", client.get("/runs", params={"limit": 0}))
        check("post", "/runs/{run_id}/pause", client.post(
            f"/runs/{run_id}/pause", json={"expectedRevision": 0}
        ))  # fmt: skip
        check("get", "/runs", client.get("/runs", headers={"Authorization": "Bearer wrong"}))
        # once a token exists, calls need one
        issued = check("post", "/tokens", client.post(
            "/tokens", json={"principal": "user:dana", "roles": ["admin"], "scopes": ["*"]}
        ))  # fmt: skip
        client.headers["Authorization"] = f"Bearer {issued['secret']}"
        check("get", "/tokens", client.get("/tokens"))
        token_id = issued["token"]["id"]
        check("post", "/tokens/{token_id}/revoke", client.post(f"/tokens/{token_id}/revoke"))
    assert {status for _m, _p, status in api.checked} >= {200, 201, 202, 401, 404, 409, 422}


def test_every_operation_declares_a_closed_document_and_the_errors_it_may_answer(
    serve: Serve,
) -> None:
    with serve().client() as client:
        document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    # two models of one name get module-qualified names, which generators stumble on
    assert [name for name in schemas if "__" in name] == []
    bearer = document["components"]["securitySchemes"]["bearer"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            where = f"{method} {path}"
            assert operation["security"] == [{"bearer": []}], where
            answers = operation["responses"]
            for status in ("401", "403", "422", "500", "503"):
                error = answers[status]["content"]["application/json"]["schema"]
                assert error == {"$ref": "#/components/schemas/ErrorBody"}, where
            success = [s for s in answers if s.startswith("2")]
            assert success, where
            for status in success:
                content = answers[status]["content"]
                if "text/event-stream" in content:
                    continue
                ref = content["application/json"]["schema"]["$ref"]
                model = schemas[ref.rsplit("/", 1)[-1]]
                assert model["additionalProperties"] is False, where
                assert model["properties"], where


def test_every_operation_answers_what_it_declares(
    serve: Serve,
    records: Records,  # noqa: F811
) -> None:
    # the procurement flow waiting for its approval, with an action, a trigger and a token:
    # every operation is called once, as the local operator, and its answer, whatever it is,
    # must be one the document declares
    server = serve(external_workers=True)
    with server.client() as client:
        api = Declared(client.get("/openapi.json").json())
        for operation, (method, template) in sorted(routes(server).items()):
            if template.endswith("/stream"):
                continue
            response = call(client, method, records.path(operation, template), operation)
            api.check(method.lower(), template, response)
    assert len(api.checked) >= 45
