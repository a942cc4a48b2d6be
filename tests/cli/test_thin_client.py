"""The CLI as a client of a server (``--server``): the same commands print the same output
whether they open the store or ask an ``openseal serve`` API (real HTTP on loopback) over the
same store; the server decides; an operation it does not serve is explained; the token file is
kept private. On SQLite and PostgreSQL."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.api import ApiSettings
from openseal.api.auth import parse_tokens, token_sha256
from openseal.cli.output import handle
from openseal.runtime.actions.approvals import load_authority
from openseal.runtime.store import Action, Approval
from openseal.simulator.procurement import ProcurementSimulator
from tests.api.support import LiveServer, operated, serving
from tests.cli.support import Cli
from tests.cli.test_approvals_cli import authority, pending, waiting  # noqa: F401  (fixture)
from tests.runtime.action_support import Flow, simulator_fixture  # noqa: F401  (fixture)

TOKEN = "thin-client-token-0123456789abcdef"


@pytest.fixture
def server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    tmp_path: Path,
) -> Iterator[LiveServer]:
    """The API over the store the CLI opens, started for the local operator over the CLI's
    home (which finds the secret there), with an authority that lets it decide."""
    path = tmp_path / "server-approvals.yaml"
    path.write_text("local_operator: true\n", encoding="utf-8")
    settings = operated(cli.home, authority=load_authority(path))
    with serving(settings, waiting[0].store) as live:
        yield live


def both(cli: Cli, url: str, *args: str) -> str:
    """What ``args`` print on the store and through the server; they must be the same."""
    local = cli(*args)
    remote = cli(*args, "--server", url)
    assert local == remote, (args, local, remote)
    assert local[0] == 0, local
    # and the command does ask the server when told to: with none listening it cannot answer
    assert cli(*args, "--server", closed_url())[0] == 1
    return local[1]


def closed_url() -> str:
    """A loopback URL where nothing listens (the port is bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_approvals_read_the_same_from_the_store_and_through_the_server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,
) -> None:
    approval = pending(waiting[0].store)
    assert handle(approval.id) in both(cli, server.url, "approvals", "list")
    both(cli, server.url, "approvals", "list", "--status", "pending", "-o", "json")
    shown = both(cli, server.url, "approvals", "show", approval.id[:8])  # an id prefix
    assert f"decide with: --hash {approval.proposal_hash}" in shown
    both(cli, server.url, "approvals", "show", approval.proposal_hash, "-o", "yaml")
    # not found is the same refusal either way
    missing = cli("approvals", "show", "f" * 32)
    assert missing[0] == 1 and missing == cli("approvals", "show", "f" * 32, "--server", server.url)


def test_a_decision_through_the_server_is_the_servers(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,
) -> None:
    approval = pending(waiting[0].store)
    # the hash as `approvals list` shows it: its first 10 hex digits
    decide = ("approvals", "approve", approval.id, "--hash", approval.proposal_hash[:10])
    stale = cli("approvals", "approve", approval.id, "--hash", "0" * 64, "--server", server.url)
    assert stale[0] == 1 and "[hash_mismatch]" in stale[2]
    # no authority on the CLI's side: the server's decides
    code, out, err = cli(*decide, "--server", server.url)
    assert code == 0, err
    assert out == f"approval {approval.id} approved by user:local: recorded\n"
    [decided] = [a for a in _approvals(waiting) if a.id == approval.id]
    assert decided.decided_by == "user:local" and decided.decision == "approve"
    again = cli(*decide, "--server", server.url)
    assert again[1].endswith("already recorded (nothing changed)\n")
    both(cli, server.url, "approvals", "show", approval.id, "-o", "json")


def test_an_operation_the_server_does_not_serve_is_explained(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
) -> None:
    approval = pending(waiting[0].store)
    with serving(operated(cli.home), waiting[0].store) as live:  # no approval authority
        code, _, err = cli(
            "approvals", "approve", approval.id, "--hash", approval.proposal_hash,
            "--server", live.url,
        )  # fmt: skip
    assert code == 1
    assert f"the server at {live.url} does not serve approvals.decide" in err
    assert "Traceback" not in err
    assert pending(waiting[0].store).status == "pending"


def test_the_token_comes_from_a_private_file_or_the_environment(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens = parse_tokens({"tokens": {token_sha256(TOKEN): "user:carol"}})
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    with serving(ApiSettings(tokens=tokens), waiting[0].store) as live:
        listed = ("approvals", "list", "--server", live.url)
        token_file.chmod(0o644)
        code, _, err = cli(*listed, "--token-file", str(token_file))
        assert code == 2 and "readable by others" in err and TOKEN not in err
        token_file.chmod(0o600)
        code, out, err = cli(*listed, "--token-file", str(token_file))
        assert code == 0, err
        assert handle(pending(waiting[0].store).id) in out
        code, _, err = cli(*listed)  # no token at all
        assert code == 1 and "bearer token is required" in err
        assert "OPENSEAL_TOKEN" in err and "--token-file" in err and "tokens create" in err
        monkeypatch.setenv("OPENSEAL_TOKEN", "not-the-token")
        code, _, err = cli(*listed)
        assert code == 1 and "unknown token" in err


def test_an_unreachable_server_is_one_line(cli: Cli) -> None:
    url = closed_url()
    code, out, err = cli("approvals", "list", "--server", url)
    assert code == 1 and out == ""
    assert err.startswith(f"error: cannot reach the server at {url}") and err.count("\n") == 1
    code, _, err = cli("approvals", "list", "--server", "127.0.0.1:8400")
    assert code == 2 and "http:// or https://" in err


def _approvals(waiting: tuple[Flow, str]) -> list[Approval]:  # noqa: F811
    from openseal.runtime import service

    return list(service.list_approvals(waiting[0].store))


def test_actions_read_and_resolve_the_same_through_the_server(
    cli: Cli,
    waiting: tuple[Flow, str],  # noqa: F811
    server: LiveServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    simulator: ProcurementSimulator,
) -> None:
    f, _ = waiting
    approval = pending(f.store)
    authority(tmp_path, monkeypatch)
    assert cli("approvals", "approve", approval.id, "--hash", approval.proposal_hash)[0] == 0
    simulator.set_fault(fail_with_status=503, fail_times=2, fail_scope="all")
    f.run_until_idle()  # the order's outcome is unknown: the destination answered 503
    [action] = [a for a in _actions(f) if a.status == "unknown"]
    assert handle(action.id) in both(cli, server.url, "actions", "list", "--status", "unknown")
    both(cli, server.url, "actions", "list", "-o", "json")
    shown = both(cli, server.url, "actions", "show", action.id[:8])
    assert "outcome unknown" in shown
    code, out, err = cli(
        "actions", "resolve", action.id, "--outcome", "failed",
        "--evidence", "no order with this key in the vendor portal", "--server", server.url,
    )  # fmt: skip
    assert code == 0, err
    assert out == f"action {action.id} resolved as failed\n"
    resolved = both(cli, server.url, "actions", "show", action.id, "-o", "json")
    assert '"actor": "user:local"' in resolved and '"released"' in resolved
    code, _, err = cli(
        "actions", "resolve", action.id, "--outcome", "succeeded", "--evidence", "x",
        "--server", server.url,
    )  # fmt: skip
    assert code == 1 and "only dispatched" in err
    assert simulator.order_count() == 0


def _actions(f: Flow) -> list[Action]:
    from openseal.runtime import service

    return list(service.list_actions(f.store))
