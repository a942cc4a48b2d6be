"""The procurement flow against a local OpenAI-compatible endpoint that requires its key
(``Authorization: Bearer``), the key coming from the runtime context: through
``openseal worker`` processes, ``openseal serve --workers --context`` and
``openseal quickstart --context``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.simulator.procurement import ProcurementSimulator
from tests.console.support import ALICE, serving
from tests.runtime.action_support import (  # noqa: F401  (fixture)
    LOCAL,
    PICK,
    REQUEST,
    TOKEN,
    TOKEN_ENV,
    definitions,
    simulator_fixture,
)
from tests.runtime.engine.test_worker_process import LAUNCH, finish, spawn
from tests.runtime.engine_support import compile_files, register
from tests.runtime.providers.chat_server import ChatServer, Reply, completion
from tests.runtime.support import Backend

pytestmark = pytest.mark.slow

KEY = "sk-hosted-7Rf2xLq0"
KEY_VARIABLE = "OPENSEAL_TEST_MODEL_KEY"
REPO = Path(__file__).resolve().parents[3]

SEARCH = {"id": "call_1", "name": "search_vendors",
          "arguments": '{"item": "laptop", "quantity": 10}'}  # fmt: skip


@pytest.fixture
def endpoint() -> Iterator[ChatServer]:
    with ChatServer(require_key=KEY) as server:
        server.reply(
            Reply.ok(completion(tool_calls=[SEARCH])), Reply.ok(completion(json.dumps(PICK)))
        )
        yield server


def keyed_definitions(tmp: Path, base_url: str) -> Path:
    """The procurement example with its model profile pointed at a keyed endpoint."""
    folder = definitions(tmp)
    (folder / "models.hcl").write_text(
        'model "procurement_default" {\n  provider   = "openai"\n'
        f'  base_url   = "{base_url}"\n  model      = "gpt-hosted"\n'
        '  credential = "model_key"\n  parameters = { timeout = 30 }\n}\n',
        encoding="utf-8",
    )
    return folder


def assert_keyed(server: ChatServer) -> None:
    assert len(server.requests) == 2, [r.header("Authorization") for r in server.requests]
    assert all(r.header("Authorization") == f"Bearer {KEY}" for r in server.requests)


def test_worker_processes_run_the_procurement_flow_on_a_keyed_endpoint(
    backend: Backend, tmp_path: Path, endpoint: ChatServer, simulator: ProcurementSimulator
) -> None:
    store = backend.open()
    register(
        store, compile_files(*sorted(keyed_definitions(tmp_path, endpoint.base_url).glob("*.hcl")))
    )
    context = tmp_path / "context.yaml"
    context.write_text(
        f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
        f"  model_key: {{env: {KEY_VARIABLE}}}\n"
        f"config:\n  procurement_url: {simulator.url}\n",
        encoding="utf-8",
    )
    env = {KEY_VARIABLE: KEY, TOKEN_ENV: TOKEN}
    run = service.create_objective(
        store, service.StartObjective("procure_laptops", REQUEST), service.CLI
    ).run

    def work(log: str) -> None:
        worker = spawn(
            backend, tmp_path, "--until-idle", "--context", str(context), env=env, log=log
        )
        assert finish(worker) == 0, (tmp_path / f"{log}.log").read_text(encoding="utf-8")

    work("research")
    waiting = store.runs.get(run.id)
    assert waiting.status == RunStatus.WAITING_FOR_APPROVAL, waiting.waiting
    assert_keyed(endpoint)
    [approval] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    work("submit")
    done = store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    assert done.context["outputs"]["order_id"].startswith("PO-")
    stored = json.dumps([e.payload for e in store.runs.events(run.id, 0, 10_000)])
    assert KEY not in stored


def test_without_the_key_the_endpoint_refuses_and_the_run_says_why(
    backend: Backend, tmp_path: Path, endpoint: ChatServer, simulator: ProcurementSimulator
) -> None:
    store = backend.open()
    register(
        store, compile_files(*sorted(keyed_definitions(tmp_path, endpoint.base_url).glob("*.hcl")))
    )
    context = tmp_path / "context.yaml"
    context.write_text(
        f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
        f"  model_key: {{env: {KEY_VARIABLE}}}\n"
        f"config:\n  procurement_url: {simulator.url}\n",
        encoding="utf-8",
    )
    run = service.create_objective(
        store, service.StartObjective("procure_laptops", REQUEST), service.CLI
    ).run
    env = {KEY_VARIABLE: "sk-not-the-key", TOKEN_ENV: TOKEN}
    worker = spawn(backend, tmp_path, "--until-idle", "--context", str(context), env=env)
    assert finish(worker) == 0
    stopped = store.runs.get(run.id)
    assert stopped.status in (RunStatus.NEEDS_ATTENTION, RunStatus.FAILED), stopped.status
    reasons = json.dumps([e.payload for e in store.runs.events(run.id, 0, 10_000)])
    assert "refused the credential" in reasons and "sk-not-the-key" not in reasons
    assert endpoint.requests and all(
        r.header("Authorization") == "Bearer sk-not-the-key" for r in endpoint.requests
    )


def test_quickstart_with_a_context_uses_a_keyed_endpoint(
    tmp_path: Path, endpoint: ChatServer
) -> None:
    folder = keyed_definitions(tmp_path, endpoint.base_url)
    context = tmp_path / "model-context.yaml"
    context.write_text(f"credentials:\n  model_key: {{env: {KEY_VARIABLE}}}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    env[KEY_VARIABLE] = KEY
    command = [
        sys.executable, "-c", LAUNCH, "quickstart", "--home", str(tmp_path / "home"),
        "--definitions", str(folder), "--context", str(context), "--output", "json",
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "completed"
    assert result["purchase_order_id"] == "PO-000001"
    assert_keyed(endpoint)


def test_serve_with_workers_and_a_context_uses_a_keyed_endpoint(
    tmp_path: Path, endpoint: ChatServer
) -> None:
    folder = keyed_definitions(tmp_path, endpoint.base_url)
    home = tmp_path / "home"
    home.mkdir()
    with serving(
        home, definitions=folder, credentials={"model_key": KEY_VARIABLE}, env={KEY_VARIABLE: KEY}
    ) as server:
        run_id = server.start_run()  # researched through the keyed endpoint, then approval
        assert_keyed(endpoint)
        approval = server.pending_approval(run_id)
        with server.client(ALICE) as alice:
            decided = alice.post(
                f"/approvals/{approval['id']}/decision",
                json={"decision": "approve", "hash": approval["proposal_hash"], "reason": "ok"},
            )
            assert decided.status_code == 200, decided.text
        done = server.wait_status(run_id, "completed")
    assert done["run"]["context"]["outputs"]["order_id"].startswith("PO-")
    assert KEY not in (home / "serve.log").read_text(encoding="utf-8")
