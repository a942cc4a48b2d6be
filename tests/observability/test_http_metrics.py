"""``/metrics`` of a real server: the process's own numbers (where the platform tells them) and
every HTTP request by route template, method and status, read with Prometheus's text parser."""

from __future__ import annotations

import sys

import httpx
import pytest

from openseal.api.auth import parse_tokens
from tests.api.conftest import ALICE_TOKEN, Serve, serve, sha, store  # noqa: F401  (fixtures)
from tests.api.test_operations import Samples, scrape, value
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)

RUN = "/api/v1/runs/{run_id}"


def requests(samples: Samples, route: str, method: str, status: str) -> float:
    return value(samples, "openseal_http_requests_total", route=route, method=method, status=status)


def test_requests_are_counted_and_timed_by_route_template_method_and_status(
    serve: Serve,  # noqa: F811
) -> None:
    server = serve()
    local = server.operator.secret if server.operator else None
    before = scrape(server.url, local)
    with server.client() as client:
        for run_id in ("0191f0aa", "0191f0bb", "0191f0cc"):  # three ids, one route
            assert client.get(f"/runs/{run_id}").status_code == 404
        assert client.get("/runs").status_code == 200
        assert client.get("/nothing/here").status_code == 404
        assert client.post("/runs/0191f0aa/cancel", content=b"{").status_code == 422
    after = scrape(server.url, local)

    def grew(route: str, method: str, status: str) -> float:
        return requests(after, route, method, status) - requests(before, route, method, status)

    assert grew(RUN, "GET", "404") == 3
    assert grew("/api/v1/runs", "GET", "200") == 1
    assert grew("unmatched", "GET", "404") == 1
    assert grew("unmatched", "POST", "422") == 1  # refused before routing: malformed JSON
    assert not [key for key in after if "0191f0aa" in str(key)]  # no series per id
    took = value(
        after, "openseal_http_request_duration_seconds_count", route=RUN, method="GET",
        status="404",
    ) - value(
        before, "openseal_http_request_duration_seconds_count", route=RUN, method="GET",
        status="404",
    )  # fmt: skip
    assert took == 3
    assert value(after, "openseal_http_request_duration_seconds_sum", route=RUN, method="GET",
                 status="404") > 0  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process numbers from /proc")
def test_the_process_s_own_numbers_are_exposed(serve: Serve) -> None:  # noqa: F811
    server = serve()
    samples = scrape(server.url, server.operator.secret if server.operator else None)
    assert value(samples, "process_cpu_seconds_total") > 0
    assert value(samples, "process_resident_memory_bytes") > 0
    assert value(samples, "process_open_fds") > 0
    assert value(samples, "process_start_time_seconds") > 0


def test_a_scoped_token_sees_no_process_numbers(serve: Serve) -> None:  # noqa: F811
    scoped = {"sha256": sha(ALICE_TOKEN), "roles": ["viewer"], "scopes": ["procurement"]}
    server = serve(tokens=parse_tokens({"user:alice": scoped}))
    response = httpx.get(
        f"{server.url}/metrics", headers={"Authorization": f"Bearer {ALICE_TOKEN}"}, timeout=30
    )
    assert response.status_code == 200
    assert "process_cpu_seconds_total" not in response.text
    assert "openseal_http_requests_total" not in response.text
