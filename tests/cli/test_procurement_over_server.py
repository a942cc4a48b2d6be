"""The procurement example driven only by CLI commands against a real ``openseal serve``
process on loopback (``--server``, tokens): deploy, review and activate, start the objective,
wait for the approval, restart the server while it is pending, approve, and see the order
submitted once. Only the first token is made on the store, as the administrator would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from openseal.cli.main import main
from openseal.quickstart import REQUEST, WORKFLOW
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.support import eventually

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ROOT / "definitions" / "procurement" / "hcl"
SCRIPT = ROOT / "definitions" / "procurement" / "scripts" / "procurement.json"
SIMULATOR_TOKEN = "thin-client-simulator-token-0123456789"
TOKEN_ENV = "OPENSEAL_THIN_CLIENT_TEST_PROCUREMENT_TOKEN"
HANG_GUARD = 60.0

pytestmark = pytest.mark.slow


class Cli:
    """``openseal ...`` in this process, as whoever ``OPENSEAL_TOKEN`` names."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def as_(self, secret: str) -> Cli:
        self.monkeypatch.setenv("OPENSEAL_TOKEN", secret)
        return self

    def __call__(self, *args: str) -> str:
        self.capsys.readouterr()
        code = main(list(args))
        out, err = self.capsys.readouterr()
        assert code == 0, (args, out, err)
        return out

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))


class Server:
    """``openseal serve`` with one worker over the store in ``home``, restartable."""

    def __init__(self, home: Path, simulator: ProcurementSimulator) -> None:
        self.home = home
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        context = home.parent / "context.yaml"
        context.write_text(
            f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
            f"config:\n  procurement_url: {simulator.url}\n",
            encoding="utf-8",
        )
        # alice's token, made through the server, approves as `requester`
        authority = home.parent / "authority.yaml"
        authority.write_text(
            "local_operator: false\nroles:\n  requester: [user:alice]\n", encoding="utf-8"
        )
        self.command = [
            str(Path(sys.executable).parent / "openseal"), "serve", "--host", "127.0.0.1",
            "--port", str(self.port), "--home", str(home), "--workers", "1",
            "--authority", str(authority), "--context", str(context),
            "--scripted-responses", str(SCRIPT), "--log-level", "warning",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        environment = {**os.environ, TOKEN_ENV: SIMULATOR_TOKEN}
        for name in ("OPENSEAL_DATABASE_URL", "OPENSEAL_APPROVAL_AUTHORITY", "OPENSEAL_TOKEN"):
            environment.pop(name, None)
        log = self.home.parent / "serve.log"
        with log.open("ab") as sink:
            self.process = subprocess.Popen(
                self.command, env=environment, stdout=sink, stderr=subprocess.STDOUT
            )

        def answering() -> bool:
            assert self.process is not None and self.process.poll() is None, log.read_text()
            try:
                return httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == 200
            except httpx.TransportError:
                return False

        wait_for("openseal serve to answer", answering)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def wait_for(what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check`` until it returns something truthy (a hang guard, not a timing claim)."""
    try:
        return eventually(check, timeout=HANG_GUARD)
    except AssertionError:
        raise AssertionError(f"gave up waiting for {what}") from None


@contextmanager
def served(home: Path) -> Iterator[tuple[Server, ProcurementSimulator]]:
    simulator = ProcurementSimulator(credential=SIMULATOR_TOKEN).start()
    server = Server(home, simulator)
    try:
        server.start()
        yield server, simulator
    finally:
        server.stop()
        simulator.stop()


def test_the_procurement_flow_through_the_server_survives_a_restart_while_approval_is_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    cli = Cli(capsys, monkeypatch)
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("OPENSEAL_SERVER", raising=False)
    monkeypatch.delenv("OPENSEAL_ACTOR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no token file but the ones given here
    # the administrator's first token, made on the store; everything after goes to the server
    root = cli("tokens", "create", "user:root", "--role", "admin", "--scope", "*",
               "--home", str(home)).strip()  # fmt: skip
    with served(home) as (server, simulator):
        monkeypatch.setenv("OPENSEAL_SERVER", server.url)

        def issue(principal: str, *roles: str) -> str:
            flags = [flag for role in roles for flag in ("--role", role)]
            made = cli.as_(root).json("tokens", "create", principal, *flags, "--scope", "*")
            return str(made["secret"])

        alice = issue("user:alice", "author", "operator", "approver")
        bob = issue("user:bob", "reviewer", "decider")
        carol = issue("user:carol", "operator")  # starts the order alice approves

        filed = cli.as_(alice).json("deploy", str(DEFINITIONS), "--message", "procurement")
        proposal = filed["proposal"]["id"]
        assert filed["proposal"]["author"] == "user:alice"
        cli.as_(bob)("proposals", "review", proposal, "--approve")
        cli.as_(bob)("proposals", "decide", proposal, "--approve")
        activated = cli.as_(alice).json("proposals", "activate", proposal)
        assert activated["status"] == "activated"
        assert WORKFLOW in cli("deployments", "list")

        inputs = f"request={json.dumps(REQUEST['request'])}"
        created = cli.as_(carol).json(
            "objectives", "create", "--workflow", WORKFLOW, "--input", inputs
        )
        run_id = created["run"]["id"]

        def status() -> str:
            return str(cli.json("runs", "show", run_id)["run"]["status"])

        wait_for("the approval", lambda: status() == "waiting_for_approval")
        [approval] = cli.json("approvals", "list", "--status", "pending", "--run", run_id)

        server.stop()  # the approval is pending while no server runs
        refused = main(["approvals", "list", "--status", "pending"])
        assert refused == 1  # unreachable: one line, exit 1
        server.start()

        shown = cli("approvals", "show", approval["id"][:10])
        assert "verified against its artefact" in shown
        assert f"decide with: --hash {approval['proposal_hash']}" in shown
        decided = cli.as_(alice)(
            "approvals", "approve", approval["id"], "--hash", approval["proposal_hash"]
        )
        assert decided == f"approval {approval['id']} approved by user:alice: recorded\n"

        wait_for("the run to complete", lambda: status() == "completed")
        [action] = cli.json("actions", "list", "--run", run_id)
        assert action["status"] == "succeeded" and action["result"]["order_id"]
        assert simulator.order_count() == 1
        events = cli("runs", "events", run_id)
        assert "approval.decided" in events and "run.completed" in events
