"""Helpers for the recovery tests: the procurement flow brought to an approval, and an order
placed at the simulator as a worker of a newer timeline would have placed it."""

from __future__ import annotations

from typing import Any

import httpx

from openseal.runtime import service
from openseal.runtime.store import Action, Store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import LOCAL, TOKEN, Flow


def waiting_for_approval(f: Flow) -> tuple[Run, Action]:
    """A run of the procurement example waiting for its order's approval, and its action."""
    run = f.start()
    f.run_until_idle()
    [action] = service.list_actions(f.store, run_id=run.id)
    return run, action


def approve(store: Store, run: Run) -> None:
    [approval] = service.list_approvals(store, run_id=run.id, status="pending")
    decision = service.ApprovalDecision(approval.id, "approve", approval.proposal_hash)
    service.decide_approval(store, LOCAL, decision, service.CLI)


def place_order(store: Store, sim: ProcurementSimulator, action: Action) -> dict[str, Any]:
    """Send the action's order with its key, as the worker would have after the backup."""
    with store.read() as conn:
        document = store.proposals.get(conn, action.proposal_id).document
    reply = httpx.post(
        f"{sim.url}/orders", json=document["args"], timeout=30,
        headers={"Idempotency-Key": action.key, "Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    assert reply.status_code == 201, reply.text
    order: dict[str, Any] = reply.json()
    return order


def posts(sim: ProcurementSimulator) -> int:
    """How many orders were sent to the simulator (every ``POST /orders``)."""
    return int(sim.stats()["requests"].get("POST /orders", 0))
