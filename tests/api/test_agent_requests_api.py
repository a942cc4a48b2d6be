"""Agent requests over real HTTP, on both backends: people and outside systems list, show and
answer them; each step names its principal; the role check admits operators and the principal
the request names, and refuses others."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from tests.api.conftest import Serve
from tests.api.support import assert_error
from tests.runtime.engine_support import REPO, compile_files, engine, register, scripted

BUDGET = REPO / "definitions" / "budget_check" / "hcl"
REQUEST = {"request": {"item": "laptop", "quantity": 10, "cost_center": "CC-7"}}


def token(store: Store, principal: str, roles: tuple[str, ...]) -> str:
    request = service.NewToken(principal, roles, ("*",))
    return service.tokens.create_token(store, request, service.CLI).secret


@pytest.fixture
def delegated(store: Store, tmp_path: Path) -> tuple[Run, str]:
    """A buyer run waiting for finance (whose child run has not run yet); the request id."""
    register(store, compile_files(BUDGET))
    provider, _ = scripted(tmp_path, {"pick": [{"output": {"vendor": "n", "total": 900}}]})
    run = service.create_objective(
        store, service.StartObjective("buy_with_budget", REQUEST), service.CLI
    ).run
    worker = engine(store, provider)
    while store.runs.get(run.id).status != RunStatus.WAITING_FOR_AGENT:
        assert worker.step() is not None
    (request,) = store.agent_requests.newest(caller_run_id=run.id)
    return run, request.id


def test_list_show_and_answer_with_identities(
    serve: Serve, store: Store, delegated: tuple[Run, str]
) -> None:
    run, request_id = delegated
    server = serve(external_workers=True, authority=ApprovalAuthority(local_operator=False))
    viewer = token(store, "user:vera", ("viewer",))
    finance = token(store, "agent:finance", ("viewer",))
    operator = token(store, "user:otto", ("operator",))

    with server.client(viewer) as client:
        listed = client.get("/agent-requests", params={"status": "accepted"}).json()
        assert [r["id"] for r in listed["agent_requests"]] == [request_id]
        shown = client.get(f"/agent-requests/{request_id[:8]}").json()["agent_request"]
        assert shown["callee"] == "agent.finance" and shown["child_run_id"]
        refused = client.post(f"/agent-requests/{request_id}/ask", json={"question": "why?"})
        assert_error(refused, 403, "forbidden")
        # the caller side's step is not the callee's to take
    with server.client(finance) as client:
        refused = client.post(f"/agent-requests/{request_id}/clarify", json={"answer": "x"})
        assert_error(refused, 403, "forbidden")
        wrong = client.post(f"/agent-requests/{request_id}/complete", json={"response": {}})
        assert assert_error(wrong, 422, "invalid_request")["details"] == {
            "reason": "completion_mismatch"
        }
        asked = client.post(f"/agent-requests/{request_id}/ask", json={"question": "Which CC?"})
        assert asked.status_code == 200, asked.text
        assert asked.json()["agent_request"]["status"] == "clarification_requested"
    with server.client(operator) as client:
        answered = client.post(f"/agent-requests/{request_id}/clarify", json={"answer": "CC-7"})
        assert answered.json()["agent_request"]["status"] == "accepted"
        declined = client.post(
            f"/agent-requests/{request_id}/decline", json={"reason": "CC-7 is frozen"}
        )
        assert declined.json()["agent_request"]["status"] == "declined"
        again = client.post(f"/agent-requests/{request_id}/decline", json={"reason": "again"})
        assert_error(again, 409, "invalid_status")
        missing = client.get("/agent-requests/0123456789abcdef0123456789abcdef")
        assert_error(missing, 404, "not_found")
    actors = {
        e.type: e.actor for e in store.runs.events(run.id) if e.type.startswith("agent_request.")
    }
    assert actors["agent_request.clarification_requested"] == "agent:finance"
    assert actors["agent_request.clarified"] == "user:otto"
    assert actors["agent_request.declined"] == "user:otto"
