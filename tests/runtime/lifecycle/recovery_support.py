"""Helpers for the recovery tests: the procurement flow brought to an approval (and
approved), an order placed at the simulator as a worker of a newer timeline would have placed
it, and recovery begun and reconciled by the tests' operator."""

from __future__ import annotations

from typing import Any

import httpx

from openseal.runtime import service
from openseal.runtime.lifecycle import recovery
from openseal.runtime.store import Action, Recovery, Store
from openseal.runtime.store.tables.records import Run
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import LOCAL, TOKEN, Flow

#: the operator who begins, reconciles and finishes recovery in these tests
ACTOR = "user:test"


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


def approved(f: Flow) -> tuple[Run, Action]:
    """A run waiting for its order's approval, approved (its action is admitted and sent by
    the next claim), and its action."""
    run, action = waiting_for_approval(f)
    approve(f.store, run)
    return run, action


def begin(store: Store) -> None:
    """Put the store in recovery mode, as a restore leaves it."""
    recovery.start(store, reason="operator", actor=ACTOR)


def reconcile(f: Flow) -> Recovery:
    """One reconciliation pass by the operator, with the flow's credentials."""
    return recovery.reconcile(f.store, f.context(), ACTOR)


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
