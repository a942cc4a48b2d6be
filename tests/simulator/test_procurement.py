"""The procurement simulator over real HTTP: catalogue, idempotent orders, faults, credentials."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO

import httpx
import pytest

from openseal.simulator import ProcurementSimulator, SimulatorError

ORDER = {
    "vendor": "northwind",
    "quantity": 10,
    "total": 11490.0,
    "currency": "EUR",
    "destination": "O4",
}


@pytest.fixture
def sim() -> Iterator[ProcurementSimulator]:
    with ProcurementSimulator() as running:
        yield running


@pytest.fixture
def client(sim: ProcurementSimulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, timeout=10) as c:
        yield c


def post_order(
    client: httpx.Client, key: str | None = "run-1:p-1", body: object = ORDER, **headers: str
) -> httpx.Response:
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post("/orders", json=body, headers=headers)


# -- catalogue ---------------------------------------------------------------


def test_search_lists_three_approved_vendors_with_stock_for_the_quantity(
    client: httpx.Client,
) -> None:
    reply = client.get("/vendors", params={"item": "laptop", "quantity": 10})
    assert reply.status_code == 200
    offers = reply.json()["offers"]
    assert [o["vendor"] for o in offers] == ["northwind", "contoso", "fabrikam"]
    assert {o["currency"] for o in offers} == {"EUR"}
    by_vendor = {o["vendor"]: o for o in offers}
    assert by_vendor["contoso"]["unit_price"] == 1099.0
    assert by_vendor["contoso"]["in_stock"] is False  # only 8 left
    assert by_vendor["northwind"]["in_stock"] is True


def test_search_is_deterministic_and_accepts_plural_items(client: httpx.Client) -> None:
    first = client.get("/vendors", params={"item": "laptop", "quantity": 2}).json()
    second = client.get("/vendors", params={"item": "Laptops", "quantity": 2}).json()
    assert first == second
    assert all(o["in_stock"] for o in first["offers"])


def test_unknown_item_has_no_offers(client: httpx.Client) -> None:
    reply = client.get("/vendors", params={"item": "submarine", "quantity": 1})
    assert reply.status_code == 200
    assert reply.json()["offers"] == []


@pytest.mark.parametrize("quantity", ["0", "-1", "ten", "1.5", "²"])
def test_search_rejects_a_bad_quantity(client: httpx.Client, quantity: str) -> None:
    reply = client.get("/vendors", params={"item": "laptop", "quantity": quantity})
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_query"


# -- orders ------------------------------------------------------------------


def test_create_confirms_an_order(client: httpx.Client, sim: ProcurementSimulator) -> None:
    reply = post_order(client)
    assert reply.status_code == 201
    order = reply.json()
    assert order["order_id"] == "PO-000001"
    assert order["status"] == "confirmed"
    assert {k: order[k] for k in ORDER} == ORDER
    assert sim.orders() == [order]
    assert sim.order_count() == 1


def test_order_ids_count_up(client: httpx.Client) -> None:
    ids = [post_order(client, key=f"k{i}").json()["order_id"] for i in range(3)]
    assert ids == ["PO-000001", "PO-000002", "PO-000003"]


def test_create_without_an_idempotency_key_is_refused(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    reply = post_order(client, key=None)
    assert reply.status_code == 400
    assert reply.json()["error"] == "idempotency_key_required"
    assert sim.order_count() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"quantity": 0}, "quantity"),
        ({"quantity": True}, "quantity"),
        ({"quantity": "10"}, "quantity"),
        ({"total": -5}, "total"),
        ({"currency": "euro"}, "currency"),
        ({"destination": ""}, "destination"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_order_bodies_are_422_naming_the_field(
    client: httpx.Client, sim: ProcurementSimulator, change: dict[str, object], field: str
) -> None:
    reply = post_order(client, body={**ORDER, **change})
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_order"
    assert field in reply.json()["message"]
    assert sim.order_count() == 0


def test_missing_field_is_422(client: httpx.Client) -> None:
    body = {k: v for k, v in ORDER.items() if k != "vendor"}
    reply = post_order(client, body=body)
    assert reply.status_code == 422
    assert "vendor" in reply.json()["message"]


def test_unknown_vendor_is_422(client: httpx.Client, sim: ProcurementSimulator) -> None:
    reply = post_order(client, body={**ORDER, "vendor": "acme"})
    assert reply.status_code == 422
    assert reply.json()["error"] == "unknown_vendor"
    assert sim.order_count() == 0


def test_body_that_is_not_json_is_400(client: httpx.Client) -> None:
    reply = client.post("/orders", content=b"{nope", headers={"Idempotency-Key": "k"})
    assert reply.status_code == 400
    assert reply.json()["error"] == "invalid_json"


def test_same_key_same_body_returns_the_same_order(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    first = post_order(client)
    again = post_order(client)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert sim.order_count() == 1
    assert sim.stats()["outcomes"] == {"created": 1, "replayed": 1}


def test_integer_and_float_totals_are_the_same_order(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    post_order(client, body={**ORDER, "total": 11490})
    assert post_order(client, body={**ORDER, "total": 11490.0}).status_code == 200
    assert sim.order_count() == 1


def test_same_key_different_body_is_409(client: httpx.Client, sim: ProcurementSimulator) -> None:
    post_order(client)
    reply = post_order(client, body={**ORDER, "quantity": 11})
    assert reply.status_code == 409
    assert reply.json()["error"] == "idempotency_conflict"
    assert reply.json()["order_id"] == "PO-000001"
    assert sim.order_count() == 1
    assert sim.orders()[0]["quantity"] == 10


def test_lookup_by_key(client: httpx.Client) -> None:
    created = post_order(client, key="run-7:sha256:ab/cd").json()
    found = client.get("/orders/by-key/run-7:sha256:ab%2Fcd")
    assert found.status_code == 200
    assert found.json() == created
    missing = client.get("/orders/by-key/never-used")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


def test_list_orders_and_stats(client: httpx.Client) -> None:
    post_order(client, key="a")
    post_order(client, key="b")
    listed = client.get("/orders").json()["orders"]
    assert [o["idempotency_key"] for o in listed] == ["a", "b"]
    stats = client.get("/stats").json()
    assert stats["orders"] == 2
    assert stats["requests"] == {"GET /orders": 1, "POST /orders": 2}


def test_unknown_paths_and_methods(client: httpx.Client) -> None:
    assert client.get("/nothing").status_code == 404
    assert client.post("/vendors", json={}).status_code == 405


# -- faults ------------------------------------------------------------------


def test_dropped_response_leaves_an_order_the_lookup_finds(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    sim.set_fault(drop_response_after_create=True)
    with pytest.raises(httpx.RemoteProtocolError):
        post_order(client, key="run-1:p-1")
    assert sim.order_count() == 1
    found = client.get("/orders/by-key/run-1:p-1")
    assert found.status_code == 200
    assert found.json()["order_id"] == "PO-000001"
    # the switch fired once: a same-key retry is answered, without a second order
    retry = post_order(client, key="run-1:p-1")
    assert retry.status_code == 200
    assert retry.json()["order_id"] == "PO-000001"
    assert sim.order_count() == 1
    assert sim.stats()["outcomes"] == {"dropped": 1, "replayed": 1}


def test_drop_n_times(client: httpx.Client, sim: ProcurementSimulator) -> None:
    sim.set_fault(drop_response_after_create=2)
    for key in ("a", "b"):
        with pytest.raises(httpx.RemoteProtocolError):
            post_order(client, key=key)
    assert post_order(client, key="c").status_code == 201
    assert sim.order_count() == 3


def test_fail_with_status_creates_nothing(client: httpx.Client, sim: ProcurementSimulator) -> None:
    sim.set_fault(fail_with_status=503, fail_times=1)
    reply = post_order(client)
    assert reply.status_code == 503
    assert sim.order_count() == 0
    # only creates fail by default, and only once as asked
    assert client.get("/vendors", params={"item": "laptop"}).status_code == 200
    assert post_order(client).status_code == 201


def test_fail_until_switched_off_and_scope_all(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    sim.set_fault(fail_with_status=500, fail_scope="all")
    assert client.get("/vendors", params={"item": "laptop"}).status_code == 500
    assert client.get("/vendors", params={"item": "laptop"}).status_code == 500
    sim.set_fault(fail_with_status=None)
    assert client.get("/vendors", params={"item": "laptop"}).status_code == 200


def test_delay_makes_a_client_time_out_after_the_order_exists(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    sim.set_fault(delay_seconds=30)
    with pytest.raises(httpx.ReadTimeout):
        client.post("/orders", json=ORDER, headers={"Idempotency-Key": "slow"}, timeout=0.3)
    # the work is done before the delay, so the order is already there
    assert sim.order_for_key("slow") is not None
    sim.set_fault(delay_seconds=0)
    assert client.get("/orders/by-key/slow").status_code == 200


def test_control_endpoint_sets_faults_and_resets(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    reply = client.post("/_control", json={"fail_with_status": 503})
    assert reply.status_code == 200
    assert reply.json()["faults"]["fail_with_status"] == 503
    assert post_order(client).status_code == 503
    client.post("/_control", json={"fail_with_status": None})
    post_order(client)
    assert sim.order_count() == 1
    assert client.post("/_control", json={"reset": True}).status_code == 200
    assert sim.order_count() == 0
    assert sim.stats()["requests"] == {}
    assert post_order(client).json()["order_id"] == "PO-000001"


@pytest.mark.parametrize(
    "body", [{"explode": True}, {"fail_with_status": 200}, {"delay_seconds": -1}, [1]]
)
def test_control_rejects_bad_settings(client: httpx.Client, body: object) -> None:
    reply = client.post("/_control", json=body)
    assert reply.status_code == 422
    assert reply.json()["error"] == "invalid_control"


def test_python_api_rejects_bad_settings(sim: ProcurementSimulator) -> None:
    with pytest.raises(SimulatorError, match="explode"):
        sim.set_fault(explode=True)


# -- credentials -------------------------------------------------------------

TOKEN = "canary-7f3a-procurement-token"


def test_credential_required() -> None:
    with ProcurementSimulator(credential=TOKEN) as sim, httpx.Client(base_url=sim.url) as c:
        missing = post_order(c)
        wrong = post_order(c, Authorization="Bearer nope")
        right = post_order(c, Authorization=f"Bearer {TOKEN}")
        search = c.get("/vendors", params={"item": "laptop"})
        assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 201)
        assert search.status_code == 401
        assert missing.headers["WWW-Authenticate"] == "Bearer"
        assert sim.order_count() == 1
        assert TOKEN not in missing.text + wrong.text + right.text


def test_credential_switch_never_echoes_the_value(
    client: httpx.Client, sim: ProcurementSimulator
) -> None:
    reply = client.post("/_control", json={"require_credential": TOKEN})
    assert TOKEN not in reply.text
    assert reply.json()["faults"]["require_credential"] is True
    assert post_order(client).status_code == 401
    # reset restores the constructor's setting: here, no credential
    sim.reset()
    assert post_order(client).status_code == 201


def test_request_log_never_holds_the_token() -> None:
    lines: list[str] = []
    with (
        ProcurementSimulator(credential=TOKEN, log=lines.append) as sim,
        httpx.Client(base_url=sim.url) as c,
    ):
        post_order(c, Authorization=f"Bearer {TOKEN}")
        post_order(c, key="k2", Authorization="Bearer wrong-guess")
    assert len(lines) == 2
    assert not any(TOKEN in line or "wrong-guess" in line for line in lines)


# -- lifecycle ---------------------------------------------------------------


def test_url_before_start_is_an_error() -> None:
    with pytest.raises(SimulatorError, match="not running"):
        _ = ProcurementSimulator().url


def test_stop_closes_the_port() -> None:
    sim = ProcurementSimulator().start()
    url = sim.url
    assert httpx.get(f"{url}/stats").status_code == 200
    sim.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/stats")


def test_taken_port_is_a_clear_error(sim: ProcurementSimulator) -> None:
    port = int(sim.url.rsplit(":", 1)[1])
    with pytest.raises(SimulatorError, match=f"cannot listen on 127.0.0.1:{port}"):
        ProcurementSimulator(port=port).start()


@pytest.mark.slow
def test_cli_runs_in_the_foreground_and_stops_on_sigterm() -> None:
    env = {**os.environ, "SIM_TOKEN": TOKEN}
    command = [
        sys.executable,
        "-c",
        "from openseal.cli.main import run; run()",
        "simulator",
        "procurement",
        "--credential-env",
        "SIM_TOKEN",
        "--output",
        "json",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        assert process.stdout is not None
        url = json.loads(read_json_document(process.stdout))["url"]
        headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "cli"}
        assert httpx.post(f"{url}/orders", json=ORDER, headers=headers).status_code == 201
        assert httpx.get(f"{url}/vendors").status_code == 401
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert TOKEN not in out + err
    assert "POST /orders" in err


def test_cli_refuses_a_missing_credential_variable() -> None:
    from openseal.cli.main import main

    env_name = "OPENSEAL_TEST_SURELY_UNSET_VARIABLE"
    assert env_name not in os.environ
    code = main(["simulator", "procurement", "--credential-env", env_name])
    assert code == 2


def test_a_same_key_request_while_the_first_is_in_flight_gets_409(
    sim: ProcurementSimulator,
) -> None:
    sim.set_fault(hold_create_seconds=5.0)
    headers = {"Idempotency-Key": "k-in-flight"}
    first: list[httpx.Response] = []
    sender = threading.Thread(
        target=lambda: first.append(
            httpx.post(f"{sim.url}/orders", json=ORDER, headers=headers, timeout=60)
        )
    )
    sender.start()
    try:
        deadline = time.monotonic() + 30
        while sim.stats()["in_flight"] == 0:  # the first request holds the key now
            assert time.monotonic() < deadline
            time.sleep(0.01)
        second = httpx.post(f"{sim.url}/orders", json=ORDER, headers=headers, timeout=60)
        assert second.status_code == 409
        assert second.json()["error"] == "idempotency_key_in_flight"
        assert httpx.get(f"{sim.url}/orders/by-key/k-in-flight").status_code == 404
    finally:
        sender.join(timeout=60)
    assert first[0].status_code == 201
    assert sim.order_count() == 1
    assert sim.stats()["in_flight"] == 0


def read_json_document(stream: IO[str]) -> str:
    """The lines of one JSON document (``-o json`` prints it indented), up to its last brace."""
    lines = [stream.readline()]
    while lines[-1] and lines[-1].rstrip("\n") != "}":
        lines.append(stream.readline())
    return "".join(lines)
