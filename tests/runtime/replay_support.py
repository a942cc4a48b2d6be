"""Recorded procurement runs to replay, and change proposals to replay them against."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openseal.compiler.pipeline import compile_paths
from openseal.runtime import service
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


def changed_example(tmp: Path, name: str, replacements: dict[str, tuple[str, str]]) -> Path:
    """A copy of the procurement example with ``replacements`` (file → (old, new)) made."""
    root = tmp / f"changed_{name}"
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()
    for file, (old, new) in replacements.items():
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
