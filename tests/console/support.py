"""A real ``openseal serve`` process on loopback over a SQLite store holding the procurement
example, with workers, an approval authority, bearer tokens and the procurement simulator; and
headless Chromium from the distribution's packages, driven by Playwright.

With ``CI=true`` a missing browser fails the tests instead of skipping them (``.ci/run``
installs it).
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from openseal.local_operator import console_url, read_secret
from openseal.quickstart import REQUEST, WORKFLOW, compile_definitions
from openseal.runtime import service
from openseal.runtime.store import open_store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.support import eventually

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ROOT / "definitions" / "procurement" / "hcl"
SCRIPT = ROOT / "definitions" / "procurement" / "scripts" / "procurement.json"
CHROMIUM = Path("/usr/bin/chromium")
SIMULATOR_TOKEN = "console-simulator-token-0123456789"
TOKEN_ENV = "OPENSEAL_CONSOLE_TEST_PROCUREMENT_TOKEN"
#: alice holds the requester role (she approves orders); bob operates but approves nothing
ALICE = "alice-console-token-0123456789abcdef"
BOB = "bob-console-token-0123456789abcdef"
HANG_GUARD = 60.0
#: a name the tests' browser resolves to 127.0.0.1 (a DNS rebinding page's, say)
REBOUND_HOST = "rebound.example"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def chromium_or_skip() -> Path:
    """The system Chromium; a failure under CI, a skip elsewhere, when it is missing."""
    if CHROMIUM.exists():
        return CHROMIUM
    message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def wait_for(what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check`` until it returns something truthy (a hang guard, not a timing claim)."""
    try:
        return eventually(check, timeout=HANG_GUARD)
    except AssertionError:
        raise AssertionError(f"gave up waiting for {what}") from None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Console:
    """The served console: its URL, the simulator behind it, and API clients per person."""

    url: str
    home: Path
    simulator: ProcurementSimulator
    process: subprocess.Popen[bytes]

    def operator_url(self) -> str:
        """The console URL `openseal serve --local-operator` printed (its secret's file)."""
        port = int(self.url.rsplit(":", 1)[1])
        secret = wait_for("the local operator's secret", lambda: read_secret(self.home, port))
        return console_url("127.0.0.1", port, str(secret))

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30.0,
        )

    def start_run(self, by: str = BOB) -> str:
        """A new procurement run, waited for until it asks for approval of its order. Bob
        starts it unless told: with separation of duties (the order spends), alice may approve
        it."""
        with self.client(by) as bob:
            created = bob.post("/objectives", json={"workflow": WORKFLOW, "inputs": REQUEST})
            assert created.status_code == 201, created.text
            run_id = str(created.json()["run"]["id"])
            self.wait_status(run_id, "waiting_for_approval")
        return run_id

    def run(self, run_id: str) -> dict[str, Any]:
        with self.client(ALICE) as alice:
            found = alice.get(f"/runs/{run_id}")
            assert found.status_code == 200, found.text
            return dict(found.json())

    def wait_status(self, run_id: str, status: str) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            run = self.run(run_id)
            assert run["run"]["status"] not in {"failed", "needs_attention"} or status in {
                "failed", "needs_attention",
            }, run  # fmt: skip
            return run if run["run"]["status"] == status else None

        found: dict[str, Any] = wait_for(f"run {run_id} to be {status}", reached)
        return found

    def wait_for_action(self, run_id: str, statuses: set[str]) -> dict[str, Any]:
        """The run's action once it is in one of ``statuses``."""

        def reached() -> dict[str, Any] | None:
            with self.client(ALICE) as alice:
                found = alice.get("/actions", params={"run": run_id}).json()["actions"]
            return next((a for a in found if a["status"] in statuses), None)

        found: dict[str, Any] = wait_for(f"an action of run {run_id} in {statuses}", reached)
        return found

    def pending_approval(self, run_id: str) -> dict[str, Any]:
        with self.client(ALICE) as alice:
            found = alice.get("/approvals", params={"status": "pending", "run": run_id})
            [approval] = found.json()["approvals"]
            return dict(approval)


def _prepare_home(
    home: Path,
    simulator: ProcurementSimulator,
    definitions: Path,
    credentials: dict[str, str],
    local_operator: bool,
) -> dict[str, Path]:
    store = open_store(home=home)
    try:
        documents = compile_definitions(definitions)
        service.register_documents(store, documents, actor="user:local", reason="console tests")
    finally:
        store.close()
    context = home / "context.yaml"
    context.write_text(
        f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
        + "".join(f"  {name}: {{env: {variable}}}\n" for name, variable in credentials.items())
        + f"config:\n  procurement_url: {simulator.url}\n",
        encoding="utf-8",
    )
    authority = home / "authority.yaml"
    authority.write_text(
        f"local_operator: {str(local_operator).lower()}\n"
        f"roles:\n  requester: [user:alice{', user:local' if local_operator else ''}]\n"
        f"tokens:\n  user:alice: {{sha256: {sha(ALICE)}}}\n  user:bob: {{sha256: {sha(BOB)}}}\n",
        encoding="utf-8",
    )
    # the authority's tokens only approve; the people of these tests also steer and deploy
    tokens = home / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  user:alice: {{sha256: {sha(ALICE)}, roles: [admin]}}\n"
        f"  user:bob: {{sha256: {sha(BOB)}, roles: [admin]}}\n",
        encoding="utf-8",
    )
    return {"context": context, "authority": authority, "tokens": tokens}


@contextmanager
def serving(
    home: Path,
    script: Path = SCRIPT,
    *,
    definitions: Path = DEFINITIONS,
    credentials: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    local_operator: bool = False,
    workers: int = 1,
    before: Callable[[Path], None] | None = None,
) -> Iterator[Console]:
    """``openseal serve`` with one worker over a fresh store in ``home``; stopped afterwards.

    ``workers=0`` starts it with no worker (runs stay queued); ``before`` is called with the
    home once the definitions are registered, before the server starts (to fill the store).

    ``credentials`` adds credential references (name → environment variable) to the runtime
    context the server's workers get; ``env`` adds to the server's environment;
    ``local_operator`` starts it with ``--local-operator`` (user:local holds ``requester``).
    """
    simulator = ProcurementSimulator(credential=SIMULATOR_TOKEN).start()
    process: subprocess.Popen[bytes] | None = None
    try:
        files = _prepare_home(home, simulator, definitions, credentials or {}, local_operator)
        if before is not None:
            before(home)
        port = free_port()
        program = Path(sys.executable).parent / "openseal"
        environment = {**os.environ, TOKEN_ENV: SIMULATOR_TOKEN, "NO_COLOR": "1", **(env or {})}
        environment.pop("OPENSEAL_DATABASE_URL", None)
        environment.pop("OPENSEAL_APPROVAL_AUTHORITY", None)
        with (home / "serve.log").open("wb") as log:
            process = subprocess.Popen(
                [
                    str(program), "serve", "--host", "127.0.0.1", "--port", str(port),
                    "--home", str(home), "--authority", str(files["authority"]),
                    *(["--workers", str(workers)] if workers else ["--external-workers"]),
                    "--tokens", str(files["tokens"]),
                    "--context", str(files["context"]), "--scripted-responses", str(script),
                    "--log-level", "warning", *(["--local-operator"] if local_operator else []),
                ],
                env=environment, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        console = Console(f"http://127.0.0.1:{port}", home, simulator, process)

        def answering() -> bool:
            assert process is not None and process.poll() is None, (home / "serve.log").read_text()
            try:
                return httpx.get(f"{console.url}/", timeout=2.0).status_code == 200
            except httpx.TransportError:
                return False

        wait_for("openseal serve to answer", answering)
        yield console
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        simulator.stop()


def sign_in(page: Page, console: Console, token: str, route: str = "#/runs") -> None:
    """Open ``route`` and sign in with ``token`` as a person would."""
    page.goto(f"{console.url}/{route}")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#principal")).to_be_visible()
