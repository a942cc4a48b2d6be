"""Helpers for trigger tests: a workflow with schedule and event triggers, a settable clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from openseal.compiler.output.document import CompiledDocument
from openseal.runtime.compiled import version_key
from openseal.runtime.store import ListQuery, Objective, Store
from tests.runtime.engine_support import DEFS, compile_files, register

#: the clock tests start from: a Monday, 08:30 UTC
START = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)


@dataclass
class Clock:
    """The store's clock, moved by the test."""

    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def trigger_project(tmp: Path, triggers: str) -> list[CompiledDocument]:
    """The small test workflow plus ``triggers`` (HCL), compiled."""
    text = (DEFS / "small.hcl.in").read_text(encoding="utf-8")
    text = text.replace("FACTOR", "1").replace("MODEL_CALLS", "5")
    text = text.replace("ON_EXHAUSTED", "needs_attention")
    folder = tmp / f"project_{abs(hash(triggers))}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.hcl").write_text(text, encoding="utf-8")
    (folder / "triggers.hcl").write_text(triggers, encoding="utf-8")
    return compile_files(folder)


def schedule(name: str = "hourly", **options: str) -> str:
    """A trigger starting ``small`` every hour with ``n = 1``; ``options`` are HCL values."""
    lines = "\n".join(f"  {k} = {v}" for k, v in options.items())
    return (
        f'trigger "{name}" {{\n  workflow = workflow.small\n'
        f'  schedule {{ every = "1h" }}\n  input = {{ n = 1 }}\n{lines}\n}}\n'
    )


EVENT_TRIGGER = """
trigger "restock" {
  workflow = workflow.small
  event {
    name   = "stock.low"
    filter = payload.qty < 5
  }
  input   = { n = payload.qty * 10 }
  overlap = "allow"
}
"""


def deploy_triggers(store: Store, documents: list[CompiledDocument]) -> None:
    """Register the workflow (active) and activate every trigger, as a change proposal would."""
    register(store, documents)
    for document in documents:
        if document.kind == "trigger":
            store.definitions.activate(document.name, version_key(document.digest), "user:test")


def objectives(store: Store) -> list[Objective]:
    """Every objective, newest first."""
    return store.objectives.newest(ListQuery(limit=1000))
