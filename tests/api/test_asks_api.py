"""``POST /api/v1/asks`` (a plan, nothing started) and ``POST /api/v1/asks/confirm`` (the
confirmed plan started) over real HTTP, the agent's model on a local chat server."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openseal.api.auth import TokenTable, parse_tokens
from openseal.cli.main import main
from openseal.runtime import service
from openseal.runtime.store import Store
from openseal.skills.credentials import RuntimeContext
from tests.api.conftest import ALICE_TOKEN, BOB_TOKEN, Serve, sha
from tests.api.support import assert_error
from tests.asks.support import FITTING, KEY, KEY_VARIABLE, PROMPT, plan, release_documents
from tests.runtime.providers.chat_server import ChatServer

TOKENS: TokenTable = parse_tokens(
    {
        sha(ALICE_TOKEN): "user:alice",
        "user:bob": {"sha256": sha(BOB_TOKEN), "roles": ["operator"], "scopes": ["ops"]},
    }
)
ASK = {"prompt": PROMPT, "agent": "release_writer"}


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    with ChatServer(require_key=KEY) as running:
        yield running


@pytest.fixture
def settings(store: Store, tmp_path: Path, chat: ChatServer) -> dict[str, Any]:
    service.register_documents(store, release_documents(tmp_path, chat), actor="user:test")
    return {
        "context": RuntimeContext.load(tmp_path / "context.yaml"),
        "tokens": TOKENS,
        "external_workers": True,
    }


def test_a_plan_starts_nothing_and_its_confirmation_starts_it_once(
    serve: Serve, settings: dict[str, Any], store: Store, chat: ChatServer
) -> None:
    chat.reply(plan("release_note", FITTING))
    with serve(**settings).client(ALICE_TOKEN) as client:
        planned = client.post("/asks", json=ASK)
        assert planned.status_code == 200, planned.text
        body = planned.json()["plan"]
        assert (body["workflow"], body["inputs"], body["owner"]) == (
            "release_note", FITTING, "agent.release_writer",
        )  # fmt: skip
        assert service.list_objectives(store) == []
        confirm = {**ASK, "workflow": body["workflow"], "inputs": body["inputs"]}
        key = {"Idempotency-Key": "ask-once"}
        started = client.post("/asks/confirm", json=confirm, headers=key)
        assert started.status_code == 201, started.text
        objective = started.json()["objective"]
        assert (objective["goal"], objective["created_by"]) == (PROMPT, "user:alice")
        again = client.post("/asks/confirm", json=confirm, headers=key)
        assert again.json()["objective"]["id"] == objective["id"]
    assert len(chat.requests) == 1  # the confirmation asks no model
    assert [o.id for o in service.list_objectives(store)] == [objective["id"]]


def test_a_prompt_that_fits_nothing_is_422_and_starts_nothing(
    serve: Serve, settings: dict[str, Any], store: Store, chat: ChatServer
) -> None:
    chat.reply(plan("none", {}, "no workflow buys laptops"))
    with serve(**settings).client(ALICE_TOKEN) as client:
        error = assert_error(
            client.post("/asks", json={**ASK, "prompt": "buy ten laptops"}),
            422, "no_fitting_workflow",
        )  # fmt: skip
        assert "no workflow buys laptops" in error["message"]
        forged = {**ASK, "team": None, "agent": "release_writer", "workflow": "small"}
        assert_error(client.post("/asks/confirm", json=forged), 422, "no_fitting_workflow")
    assert service.list_objectives(store) == []


def test_a_caller_without_the_scope_or_the_role_is_refused(
    serve: Serve, settings: dict[str, Any], store: Store, chat: ChatServer
) -> None:
    server = serve(**settings)
    with server.client(BOB_TOKEN) as bob:
        assert_error(bob.post("/asks", json={**ASK, "scope": "default"}), 403, "forbidden")
        confirm = {**ASK, "scope": "default", "workflow": "release_note", "inputs": FITTING}
        assert_error(bob.post("/asks/confirm", json=confirm), 403, "forbidden")
    assert chat.requests == []
    assert service.list_objectives(store) == []


def test_openseal_ask_with_server_plans_and_confirms_there(
    serve: Serve,
    settings: dict[str, Any],
    store: Store,
    chat: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chat.reply(plan("release_note", FITTING, "a release note was asked for"))
    server = serve(**settings)
    monkeypatch.setenv("OPENSEAL_TOKEN", ALICE_TOKEN)
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    home = str(tmp_path / "elsewhere")  # no store here: the server plans and starts
    code = main(
        ["ask", PROMPT, "--agent", "release_writer", "--server", server.url, "--home", home]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "agent.release_writer picked workflow release_note" in out
    (objective,) = service.list_objectives(store)
    assert f"objective {objective.id} created run" in out
    assert (objective.goal, objective.created_by) == (PROMPT, "user:alice")
    assert len(chat.requests) == 1
