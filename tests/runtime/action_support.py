"""Helpers for the proposal / approval / action tests: the procurement example against the
procurement simulator, with variants of the order skill's idempotency block."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.actions.approvals import ApprovalAuthority
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from tests.runtime.engine_support import compile_files, register

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "definitions" / "procurement"
TOKEN = "sim-token-not-a-secret"
TOKEN_ENV = "OPENSEAL_TEST_PROCUREMENT_TOKEN"

PICK = {"vendor": "northwind", "unit_price": 1149.0, "currency": "EUR"}
REQUEST = {"request": {"item": "laptop", "quantity": 10, "budget": 15000}}
LOCAL = ApprovalAuthority(local_operator=True)

ORIGINAL_IDEMPOTENCY = """  idempotency {
    key_header     = "Idempotency-Key"
    same_key_retry = true

    lookup "http" {
      method = "GET"
      url    = "${config.procurement_url}/orders/by-key/${action.key}"
    }
  }"""

#: idempotency blocks of the order skill, by variant name
VARIANTS = {
    "lookup": ORIGINAL_IDEMPOTENCY,
    "no_lookup": """  idempotency {
    key_header = "Idempotency-Key"
  }""",
    "retry_only": """  idempotency {
    key_header     = "Idempotency-Key"
    same_key_retry = true
  }""",
}


ORIGINAL_TIMEOUT = 'timeout    = "15s"'


def definitions(
    tmp: Path, variant: str = "lookup", *, team_spend: int = 20000, timeout: str = "15s"
) -> Path:
    """A copy of the procurement example with the order skill's idempotency ``variant`` (and
    ``timeout``: how long an attempt may be in flight)."""
    root = tmp / f"procurement_{variant}_{team_spend}_{timeout}"
    if root.exists():
        return root / "hcl"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()  # a repository root: file("../prompts/...") reads under it
    skills = root / "hcl" / "skills.hcl"
    text = skills.read_text(encoding="utf-8")
    assert ORIGINAL_IDEMPOTENCY in text and ORIGINAL_TIMEOUT in text
    text = text.replace(ORIGINAL_IDEMPOTENCY, VARIANTS[variant])
    skills.write_text(text.replace(ORIGINAL_TIMEOUT, f'timeout    = "{timeout}"'), "utf-8")
    team = root / "hcl" / "team.hcl"
    team.write_text(
        team.read_text(encoding="utf-8").replace("spend    = 250000", f"spend    = {team_spend}"),
        encoding="utf-8",
    )
    return root / "hcl"


def deploy(store: Store, tmp: Path, variant: str = "lookup", **options: Any) -> None:
    folder = definitions(tmp, variant, **options)
    register(store, compile_files(*sorted(folder.glob("*.hcl"))))


def context_file(tmp: Path, sim: ProcurementSimulator) -> Path:
    path = tmp / "context.yaml"
    path.write_text(
        f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
        f"config:\n  procurement_url: {sim.url}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(name="simulator")
def simulator_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcurementSimulator]:
    """The procurement simulator requiring the test token (import it into a test module)."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with ProcurementSimulator(credential=TOKEN) as sim:
        yield sim


@dataclass
class Flow:
    """One store, the simulator, and an engine configured for them."""

    store: Store
    sim: ProcurementSimulator
    tmp: Path
    picks: list[dict[str, Any]]

    def context(self) -> RuntimeContext:
        """The credentials and configuration the engine (and an operator's reconcile) use."""
        return RuntimeContext.load(context_file(self.tmp, self.sim))

    def engine(self, **options: Any) -> Engine:
        script = {f"research#{i + 1}": [{"output": pick}] for i, pick in enumerate(self.picks)}
        provider = ScriptedProvider(script)
        options.setdefault("worker_id", "test-worker")
        return Engine(self.store, fixed(provider), context=self.context(), **options)

    def start(self, inputs: dict[str, Any] | None = None) -> Run:
        return service.create_objective(
            self.store, service.StartObjective("procure_laptops", inputs or REQUEST), service.CLI
        ).run

    def run_until_idle(self) -> None:
        self.engine().run_until_idle()

    def status(self, run: Run) -> RunStatus:
        return self.store.runs.get(run.id).status


def flow(
    store: Store, sim: ProcurementSimulator, tmp: Path, variant: str = "lookup", **options: Any
) -> Flow:
    deploy(store, tmp, variant, **options)
    return Flow(store, sim, tmp, [PICK])
