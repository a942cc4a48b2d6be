"""Recorded procurement runs to replay, and change proposals to replay them against."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openseal.compiler.pipeline import compile_paths
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.governance import flow as gov
from openseal.runtime.store import ChangeProposal, Run, Store
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import EXAMPLE, LOCAL, flow

#: quantity of laptops (at 1149 EUR each) → how the requester decides (None: not yet)
ORDERS: dict[str, tuple[int, str | None]] = {
    "small": (5, "approve"),  # 5745 EUR, completed
    "large": (10, "approve"),  # 11490 EUR, completed
    "waiting": (12, None),  # 13788 EUR, waiting for approval
    "rejected": (8, "reject"),  # 9192 EUR, canceled
    "over": (20, None),  # 22980 EUR over the request's budget: failed
}
BUDGET = 15000
CONSTRAINT = "args.total <= 20000"


@dataclass
class Recorded:
    store: Store
    runs: dict[str, Run]


def record_runs(store: Store, sim: ProcurementSimulator, tmp: Path) -> Recorded:
    """One run per entry of :data:`ORDERS`, driven by the engine with the scripted model and
    decided by the local operator, each left where its decision takes it."""
    f = flow(store, sim, tmp, team_spend=250000)
    runs = {}
    for name, (quantity, _) in ORDERS.items():
        request = {"request": {"item": "laptop", "quantity": quantity, "budget": BUDGET}}
        runs[name] = f.start(request)
    f.run_until_idle()
    for name, (_, decision) in ORDERS.items():
        if decision is not None:
            decide(store, runs[name].id, decision)
    f.run_until_idle()
    return Recorded(store, {name: store.runs.get(run.id) for name, run in runs.items()})


def decide(store: Store, run_id: str, verb: str) -> None:
    [approval] = service.list_approvals(store, status="pending", run_id=run_id)
    reason = None if verb == "approve" else "not this one"
    service.decide_approval(
        store, LOCAL, service.ApprovalDecision(approval.id, verb, approval.proposal_hash, reason),
        service.CLI,
    )  # fmt: skip


def changed_example(
    tmp: Path, name: str, replacements: dict[str, tuple[str, str]], *, team_spend: int = 250000
) -> Path:
    """A copy of the procurement example with ``replacements`` (file → (old, new)) made, and
    the team's spend budget ``team_spend`` (as the recorded runs had it)."""
    root = tmp / f"changed_{name}"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()
    spend = ("team.hcl", "spend    = 250000", f"spend    = {team_spend}")
    for file, old, new in [*((f, o, n) for f, (o, n) in replacements.items()), spend]:
        path = root / "hcl" / file
        text = path.read_text(encoding="utf-8")
        assert old in text, (file, old)
        path.write_text(text.replace(old, new), encoding="utf-8")
    return root / "hcl"


def file_change(store: Store, folder: Path) -> ChangeProposal:
    """Deploy the definitions in ``folder`` as a change proposal (nothing is activated)."""
    result = compile_paths(sorted(folder.glob("*.hcl")))
    assert result.ok, [(d.code, d.message) for d in result.diagnostics]
    filed = gov.deploy(store, result.documents, "user:alice")
    assert filed.proposal is not None, filed.note
    return filed.proposal


def verdicts(report: Any, runs: dict[str, Run]) -> dict[str, tuple[str, str, str]]:
    """Each named run's (verdict, state, why) from a report's JSON."""
    by_id = {r["run"]: r for r in report["runs"]}
    return {
        name: (by_id[run.id]["verdict"], by_id[run.id]["state"] or "", by_id[run.id]["why"] or "")
        for name, run in runs.items()
    }


#: the team's spend budget for many recorded orders: never the reason one is refused
MANY_SPEND = 1_000_000_000
#: how the requester decides, by run index modulo 4 (None: the run is left waiting)
MANY_DECISIONS = ("approve", "reject", None, "approve")


def many_quantity(index: int) -> int:
    """3 to 17 laptops: up to 13 (14937 EUR) fit the request's budget of 15000."""
    return 3 + index % 15


def record_many(store: Store, sim: ProcurementSimulator, tmp: Path, count: int) -> list[Run]:
    """``count`` recorded runs, their quantities and decisions by index (see above)."""
    f = flow(store, sim, tmp, team_spend=MANY_SPEND)
    runs = []
    for index in range(count):
        request = {
            "request": {"item": "laptop", "quantity": many_quantity(index), "budget": BUDGET}
        }
        runs.append(f.start(request))
    engine = f.engine()
    until_idle(engine, count)
    for index, run in enumerate(runs):
        decision = MANY_DECISIONS[index % 4]
        if decision is not None and many_quantity(index) * 1149 <= BUDGET:
            decide(store, run.id, decision)
    until_idle(engine, count)
    return runs


def until_idle(engine: Engine, count: int, threads: int = 4) -> None:
    """Work on the runs with ``threads`` threads sharing the engine (and its commits), as a
    worker does, until none is runnable."""
    with ThreadPoolExecutor(threads) as pool:
        for done in [
            pool.submit(engine.run_until_idle, max_steps=count * 10) for _ in range(threads)
        ]:
            done.result()
