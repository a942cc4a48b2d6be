"""One lock order (invariant 15): every writer locks the run row before the rows that belong
to it. On PostgreSQL a writer that locked an action first and then waited for its run would
deadlock with an operator's cancel or resolve, which lock the run first."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.actions.dispatch import target_for
from openseal.runtime.actions.reconcile import mark_unknown, record
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.store import Store
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.base import SkillResult
from tests.runtime.action_support import LOCAL, flow, simulator_fixture  # noqa: F401
from tests.runtime.support import Backend, eventually


def _waiting_locks(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(sa.text("SELECT count(*) FROM pg_locks WHERE NOT granted")).one()[0]
        )


@pytest.mark.parametrize("writer", ["record", "mark_unknown"])
def test_action_writers_lock_the_run_before_the_action(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, writer: str
) -> None:
    if backend.name != "postgresql":
        pytest.skip("SQLite takes one database-wide write lock: there is no row lock order")
    store = backend.open()
    f = flow(store, simulator, tmp_path)
    run = f.start()
    f.run_until_idle()
    [approval] = service.list_approvals(store, run_id=run.id)
    service.decide_approval(
        store,
        LOCAL,
        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
        service.CLI,
    )
    [action] = service.list_actions(store, run_id=run.id)
    with store.read() as conn:
        proposal = store.proposals.get(conn, action.proposal_id)
    target = target_for(
        WorkflowCatalog(store).workflow(store.runs.get(run.id).workflow_digest), proposal
    )

    blocker = store.engine.connect()
    tx = blocker.begin()
    blocker.execute(sa.text("SELECT id FROM runs WHERE id = :id FOR UPDATE"), {"id": run.id})
    before = _waiting_locks(store)

    def write() -> None:
        if writer == "record":
            record(store, action, SkillResult("unknown", error="reset"), target, "worker:w")
        else:
            mark_unknown(store, action, "taken over", "worker:w")

    thread = threading.Thread(target=write)
    thread.start()
    try:
        eventually(lambda: _waiting_locks(store) > before)  # the writer waits for the run
        with store.engine.connect() as other, other.begin():
            # The action row is free: the waiting writer has not locked it before the run.
            other.execute(sa.text("SET LOCAL lock_timeout = '100ms'"))
            other.execute(
                sa.text("SELECT id FROM actions WHERE id = :id FOR UPDATE"), {"id": action.id}
            )
    finally:
        tx.rollback()
        blocker.close()
        thread.join(timeout=60)
    assert not thread.is_alive()
