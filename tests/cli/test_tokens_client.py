"""``openseal tokens`` as a client of a server (``--server``): the same output as on the store
(real HTTP on loopback over the same store), the server's admin rule, and the secret shown
only by ``create``. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from openseal.api import ApiSettings
from openseal.runtime import service
from openseal.runtime.store import Store
from tests.api.support import LiveServer, serving
from tests.cli.support import Cli
from tests.cli.test_thin_client import both
from tests.runtime.support import Backend


def token(store: Store, principal: str, roles: tuple[str, ...], scopes: tuple[str, ...]) -> str:
    request = service.NewToken(principal, roles, scopes)
    return service.tokens.create_token(store, request, service.CLI).secret


@pytest.fixture
def store(cli: Cli, backend: Backend) -> Store:
    assert cli("db", "upgrade")[0] == 0
    return backend.open()


@pytest.fixture
def server(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """A server over the store the CLI opens; the CLI's token is an admin's in every scope."""
    monkeypatch.setenv("OPENSEAL_TOKEN", token(store, "user:root", ("admin",), ("*",)))
    with serving(ApiSettings(), store) as live:
        yield live


def test_tokens_list_and_revoke_the_same_from_the_store_and_through_the_server(
    cli: Cli,
    store: Store,
    server: LiveServer,
) -> None:
    made = ("tokens", "create", "user:alice", "--role", "operator", "--scope", "procurement")
    code, _, err = cli(*made, "--expires-in", "30d", "--note", "buyer")
    assert code == 0, err
    code, _, err = cli("tokens", "create", "user:vera", "--role", "viewer", "--server", server.url)
    assert code == 0, err
    listed = both(cli, server.url, "tokens", "list")
    assert listed.count("\n") == 4 and "user:alice" in listed and "user:vera" in listed
    both(cli, server.url, "tokens", "list", "--principal", "user:vera", "-o", "json")
    shown = json.loads(both(cli, server.url, "tokens", "list", "-o", "json"))["tokens"]
    assert [t["created_by"] for t in shown] == ["user:local", "user:local", "user:root"]
    assert "sha256" not in json.dumps(shown)
    [alice] = [t for t in shown if t["principal"] == "user:alice"]
    code, out, err = cli("tokens", "revoke", alice["id"][:24], "--server", server.url)
    assert code == 0, err
    assert out.startswith(f"token {alice['id']} of user:alice revoked at ")
    again = both(cli, server.url, "tokens", "revoke", alice["id"], "-o", "json")
    # revoked once, by the server's caller; revoking again changes nothing
    assert json.loads(again)["token"]["revoked_by"] == "user:root"
    assert "revoked " in both(cli, server.url, "tokens", "list", "--principal", "user:alice")
    missing = cli("tokens", "revoke", "f" * 12)
    assert missing[0] == 1 and missing == cli("tokens", "revoke", "f" * 12, "--server", server.url)


def test_tokens_create_prints_the_same_and_the_secret_only_once(
    cli: Cli,
    store: Store,
    server: LiveServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    made = ("tokens", "create", "service:ci", "--role", "author", "--scope", "*", "--note", "ci")
    local = cli(*made)
    with caplog.at_level("DEBUG"):
        remote = cli(*made, "--server", server.url)
    assert local[0] == remote[0] == 0, (local, remote)
    ids = [t.id for t in service.tokens.list_tokens(store, service.CLI, principal="service:ci")]
    for (_, out, err), token_id in zip((local, remote), ids, strict=True):
        secret = out.strip()
        assert out == f"{secret}\n" and secret.startswith("oseal_")
        assert err == (
            f"token {token_id} for service:ci: roles author; scopes *; expires never. "
            "The token above is shown only now.\n"
        )
        with httpx.Client(base_url=f"{server.url}/api/v1") as client:  # the secret works
            me = client.get("/me", headers={"Authorization": f"Bearer {secret}"}).json()
            assert me["principal"] == "service:ci" and me["roles"] == ["author"]
    secret = remote[1].strip()
    assert secret not in caplog.text
    listed = cli("tokens", "list", "--server", server.url, "-o", "yaml")[1]
    assert secret not in listed and local[1].strip() not in listed
    # -o json: the same document either way, the secret in it once
    documents = [
        json.loads(cli(*made, *where, "-o", "json")[1]) for where in ((), ("--server", server.url))
    ]
    for document in documents:
        assert set(document) == {"token", "secret"}
        assert document["token"]["principal"] == "service:ci"
        assert document["token"]["state"] == "active"
    assert set(documents[0]["token"]) == set(documents[1]["token"])
    # refusals are the same one line either way
    for bad in (
        ("tokens", "create", "alice", "--role", "viewer"),
        ("tokens", "create", "user:al", "--role", "boss"),
        ("tokens", "create", "user:al", "--role", "viewer", "--scope", "No Scope"),
    ):
        refused = cli(*bad)
        assert refused[0] == 2 and refused[1] == "" and refused[2].count("\n") == 1, refused
        assert refused == cli(*bad, "--server", server.url)


def test_the_server_decides_who_administers_tokens(
    cli: Cli,
    store: Store,
    server: LiveServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENSEAL_TOKEN", token(store, "user:olga", ("operator",), ("*",)))
    code, out, err = cli("tokens", "list", "--server", server.url)
    assert code == 1 and out == ""
    assert err == "error: user:olga may not use tokens.list (it needs one of the roles admin)\n"
    monkeypatch.setenv("OPENSEAL_TOKEN", token(store, "user:ada", ("admin",), ("ops",)))
    made = ("tokens", "create", "user:eve", "--role", "admin", "--scope", "*")
    code, out, err = cli(*made, "--server", server.url)
    assert code == 1 and out == "" and "admin role in every scope" in err
    assert service.tokens.list_tokens(store, service.CLI, principal="user:eve") == []
