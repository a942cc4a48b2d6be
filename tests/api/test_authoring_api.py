"""``POST /api/v1/authoring/drafts`` over real HTTP, with the model on a local chat server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.api.auth import TokenTable, parse_tokens
from openseal.compiler.pipeline import compile_paths
from openseal.runtime.governance import flow as gov
from openseal.runtime.store import Store
from openseal.skills.credentials import RuntimeContext
from tests.api.conftest import ALICE_TOKEN, Serve, sha
from tests.api.support import assert_error
from tests.authoring.support import (
    BAD,
    GOOD,
    KEY,
    KEY_VARIABLE,
    PROFILE,
    WIDENING,
    answer,
    workspace,
)
from tests.runtime.providers.chat_server import ChatServer

TOKENS: TokenTable = parse_tokens({sha(ALICE_TOKEN): "user:alice"})
DRAFTS = "/authoring/drafts"


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)


def authoring(tmp_path: Path, chat: ChatServer, *, complete: bool = True) -> dict[str, object]:
    definitions = workspace(tmp_path, chat, complete=complete)
    return {
        "authoring_definitions": definitions,
        "authoring_profile": PROFILE,
        "context": RuntimeContext.load(tmp_path / "context.yaml"),
        "tokens": TOKENS,
    }


def test_without_a_complete_profile_authoring_is_not_served(
    serve: Serve, tmp_path: Path, chat: ChatServer
) -> None:
    with serve().client() as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
        assert listed["authoring"]["available"] is False
        assert listed["authoring"]["operations"] == ["authoring.draft"]
        assert "--model PROFILE" in listed["authoring"]["reason"]
        error = assert_error(client.post(DRAFTS, json={"prompt": "add"}), 501, "not_served")
        assert error["details"]["capability"] == "authoring"

    with serve(**authoring(tmp_path, chat, complete=False)).client(ALICE_TOKEN) as client:
        error = assert_error(client.post(DRAFTS, json={"prompt": "add"}), 501, "not_served")
        assert f"model profile `{PROFILE}` has no `credential`" in error["message"]
    assert chat.requests == []


def test_a_draft_is_filed_by_the_caller_and_never_activated(
    serve: Serve, store: Store, tmp_path: Path, chat: ChatServer
) -> None:
    chat.reply(answer(("budget.hcl", WIDENING)))
    server = serve(**authoring(tmp_path, chat))
    with server.anonymous() as anonymous:
        assert_error(anonymous.post(DRAFTS, json={"prompt": "x"}), 401, "unauthorized")
    with server.client(ALICE_TOKEN) as client:
        listed = {c["name"]: c for c in client.get("/capabilities").json()["capabilities"]}
        assert listed["authoring"]["available"] is True
        active_before = client.get("/deployments").json()
        response = client.post(
            DRAFTS, json={"prompt": "let the researcher check budgets", "propose": True}
        )
        assert response.status_code == 201, response.text
        body = response.json()
        assert client.get("/deployments").json() == active_before
    draft = body["draft"]
    assert [f["path"] for f in draft["files"]] == ["budget.hcl"]
    assert [c["message"] for c in draft["widening"]] == [
        "grant added: skill.lookup_budget to team.procurement.role.researcher"
    ]
    proposal = body["proposal"]
    assert body["created"] is True
    assert proposal["author"] == "user:alice"
    assert proposal["risk_widening"] is True
    assert proposal["status"] == "proposed"
    assert gov.get_proposal(store, proposal["id"]).author == "user:alice"
    assert not (tmp_path / "procurement" / "hcl" / "budget.hcl").exists()


def test_a_draft_that_never_compiles_is_422_with_its_diagnostics(
    serve: Serve, tmp_path: Path, chat: ChatServer
) -> None:
    chat.reply(answer(("auditor.hcl", BAD)))
    with serve(**authoring(tmp_path, chat)).client(ALICE_TOKEN) as client:
        response = client.post(DRAFTS, json={"prompt": "add an auditor", "maxRepairs": 0})
        error = assert_error(response, 422, "draft_failed")
        assert client.get("/proposals").json()["proposals"] == []
    assert [d["code"] for d in error["details"]["diagnostics"]] == ["OS201"]
    assert len(error["details"]["rounds"]) == 1
    assert len(chat.requests) == 1


def test_the_model_is_given_the_governance_policy_the_store_runs(
    serve: Serve, store: Store, tmp_path: Path, chat: ChatServer
) -> None:
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "governance.yaml").write_text(
        "governance:\n  production:\n    reviewers: [user:bob]\n    deciders: [user:carol]\n",
        encoding="utf-8",
    )
    filed = gov.deploy(store, compile_paths([policy]).documents, "user:alice").proposal
    assert filed is not None
    gov.review(store, filed.id, "user:bob", "approve")
    gov.decide(store, filed.id, "user:carol", "approve")
    gov.activate(store, filed.id, "user:carol")

    chat.reply(answer(("auditor.hcl", GOOD)))
    with serve(**authoring(tmp_path, chat)).client(ALICE_TOKEN) as client:
        response = client.post(DRAFTS, json={"prompt": "add an auditor"})
        assert response.status_code == 200, response.text
    [request] = chat.requests
    system = request.body["messages"][0]["content"]
    stated = system.split("# The governance policy a filed change is reviewed under\n\n")[1]
    policy_json = json.loads(stated.split("\n\n")[0])
    [active] = policy_json["active where the change is filed"]
    assert active["name"] == "production" and active["deciders"] == ["user:carol"]
    assert policy_json["in the definitions"] == []


def test_an_idempotency_key_answers_a_retry_without_asking_the_model_again(
    serve: Serve, tmp_path: Path, chat: ChatServer
) -> None:
    chat.reply(answer(("budget.hcl", WIDENING)))
    body = {"prompt": "let the researcher check budgets", "propose": True}
    headers = {"Idempotency-Key": "draft-7"}
    with serve(**authoring(tmp_path, chat)).client(ALICE_TOKEN) as client:
        first = client.post(DRAFTS, json=body, headers=headers)
        again = client.post(DRAFTS, json=body, headers=headers)
        other = client.post(DRAFTS, json={**body, "propose": False}, headers=headers)
        assert len(client.get("/proposals").json()["proposals"]) == 1
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert_error(other, 409, "idempotency_conflict")
    assert len(chat.requests) == 1


def test_the_server_token_budget_bounds_a_request(
    serve: Serve, tmp_path: Path, chat: ChatServer
) -> None:
    chat.reply(answer(("auditor.hcl", BAD)))
    server = serve(**authoring(tmp_path, chat), authoring_token_budget=1000)
    with server.client(ALICE_TOKEN) as client:
        response = client.post(DRAFTS, json={"prompt": "add an auditor", "maxRepairs": 5})
    error = assert_error(response, 422, "draft_failed")
    assert "budget of 1000 tokens is spent" in error["message"]
    assert len(chat.requests) == 1
