"""Bad input is refused cleanly: non-finite numbers, oversized bodies, deep JSON, big inputs."""

from __future__ import annotations

import json

import httpx
import pytest

from openseal.api.limits import Limits
from openseal.runtime import service
from openseal.runtime.store import Store
from tests.api.conftest import Serve
from tests.api.support import assert_error

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]


def post_raw(client: httpx.Client, path: str, text: str) -> httpx.Response:
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


@pytest.mark.parametrize("number", NON_FINITE)
def test_non_finite_numbers_are_422_wherever_json_enters(
    serve: Serve, store: Store, number: str
) -> None:
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 1}), service.CLI
    ).run
    service.pause_run(
        store, service.RunCommand(run.id, "repair"), service.Caller("user:test", local=True)
    )
    before = len(service.list_objectives(store, limit=1000))
    bodies = {
        "/objectives": f'{{"workflow": "small", "inputs": {{"n": {number}}}}}',
        f"/runs/{run.id}/intervene": f'{{"reason": "fix", "value": {{"x": [{number}]}}}}',
        "/events": f'{{"name": "paid", "payload": {number}}}',
        "/events#correlation": f'{{"name": "paid", "correlation": {{"order": {number}}}}}',
    }
    with serve(external_workers=True).client() as client:
        for path, text in bodies.items():
            error = assert_error(
                post_raw(client, path.split("#")[0], text), 422, "non_finite_number"
            )
            assert number.lstrip("-")[:3] in error["message"]
        # nothing was stored: no objective, the run untouched, no event kept
        assert len(service.list_objectives(store, limit=1000)) == before
        shown = client.get(f"/runs/{run.id}").json()["run"]
        assert shown["revision"] == service.show_run(store, run.id).run.revision
        assert shown["status"] == "paused"
        # the same bodies with a finite number are accepted
        accepted = post_raw(client, "/events", '{"name": "paid", "payload": 1e300}')
        assert accepted.status_code == 202, accepted.text


def test_a_body_over_the_limit_is_413(serve: Serve) -> None:
    server = serve(external_workers=True, limits=Limits(max_body_bytes=2048))
    with server.client() as client:
        big = {"workflow": "small", "inputs": {"n": 1, "pad": "x" * 4096}}
        assert_error(client.post("/objectives", json=big), 413, "body_too_large")

        # without a Content-Length (chunked), the limit holds while the body streams in
        def chunks() -> object:
            yield b'{"workflow": "small", "inputs": {"pad": "'
            for _ in range(10):
                yield b"x" * 1024
            yield b'"}}'

        streamed = client.post(
            "/objectives", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(streamed, 413, "body_too_large")


def test_json_nested_deeper_than_the_limit_is_422(serve: Serve) -> None:
    server = serve(external_workers=True, limits=Limits(max_json_depth=8))
    with server.client() as client:
        deep: object = 1
        for _ in range(10):
            deep = [deep]
        body = {"name": "paid", "payload": deep}
        error = assert_error(client.post("/events", json=body), 422, "too_deep")
        assert "8 levels" in error["message"]
        # far past the parser's own recursion limit: still one clean answer
        absurd = "[" * 200_000 + "]" * 200_000
        text = f'{{"name": "paid", "payload": {absurd}}}'
        assert_error(post_raw(client, "/events", text), 422, "too_deep")
        shallow = client.post("/events", json={"name": "paid", "payload": [[1]]})
        assert shallow.status_code == 202, shallow.text


def test_objective_inputs_over_the_limit_are_422(serve: Serve, store: Store) -> None:
    server = serve(external_workers=True, limits=Limits(max_input_bytes=100))
    with server.client() as client:
        big = {"workflow": "small", "inputs": {"n": 1, "note": "y" * 200}}
        error = assert_error(client.post("/objectives", json=big), 422, "inputs_too_large")
        assert "at most 100" in error["message"]
        assert service.list_objectives(store, limit=10) == []
        small = client.post("/objectives", json={"workflow": "small", "inputs": {"n": 1}})
        assert small.status_code == 201, small.text


def test_the_limits_leave_get_requests_and_valid_json_alone(serve: Serve) -> None:
    with serve().client() as client:
        assert client.get("/objectives").status_code == 200
        event = post_raw(client, "/events", json.dumps({"name": "paid", "payload": {"a": 0.5}}))
        assert event.status_code == 202, event.text
        assert event.json()["event"]["payload"] == {"a": 0.5}
