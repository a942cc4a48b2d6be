"""An action is prepared — drafted, admitted, marked ``dispatched`` — in the transaction that
saves its turn (docs/decisions/0013); where that fails, nothing of it is kept there and the
turn prepares on its own, as before (``FencedTx.attempt``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bench.runtime_support import ACTION_WORKFLOW, compiled
from openseal.runtime import service
from openseal.runtime.actions import admission
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Claim, Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine.test_pure_states import WriteCommits
from tests.runtime.engine_support import assert_gap_free, event_types
from tests.runtime.support import new_run


def actions_of(store: Store, run_id: str) -> list[tuple[str, str]]:
    """(status, attempts) of the run's actions, read on a connection of its own."""
    table = schema.actions
    with store.read() as conn:
        rows = conn.execute(
            sa.select(table.c.status, table.c.attempts).where(table.c.run_id == run_id)
        )
        return [(str(status), attempts) for status, attempts in rows]


@pytest.fixture
def deployed(store: Store, tmp_path: Path) -> Store:
    service.register_documents(store, compiled(tmp_path / "project", ACTION_WORKFLOW))
    return store


def start(store: Store, n: int) -> str:
    request = service.StartObjective("three_steps", {"n": n})
    created = service.create_objective(store, request, service.CLI)
    assert created.run is not None
    return created.run.id


def test_an_action_is_marked_dispatched_in_the_commit_that_saves_its_turn(
    deployed: Store,
) -> None:
    run_id = start(deployed, 1)
    seen: list[tuple[str | None, list[tuple[str, str]]]] = []

    def hook(point: str, claim: Claim) -> None:
        if point == "turn.started":  # the turn is executing: its commit is behind it
            seen.append(
                (deployed.runs.get(claim.run_id).current_state, actions_of(deployed, run_id))
            )

    commits = WriteCommits(deployed.engine)
    Engine(deployed, hook=hook).run_until_idle()

    assert seen == [("act", [(str(ActionStatus.DISPATCHED), 1)])]
    assert commits.count == 2  # the claim with the transform and the action prepared; the end
    run = deployed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED
    assert actions_of(deployed, run_id) == [(str(ActionStatus.SUCCEEDED), 1)]
    types = event_types(deployed, run_id)
    turn_started = [i for i, t in enumerate(types) if t == "turn.started"]
    # the action's events follow the turn's save, in the order its own transaction wrote them
    assert types.index("proposal.drafted") > turn_started[1]
    assert types.index("proposal.drafted") < types.index("action.admitted")
    assert types.index("action.admitted") < types.index("action.dispatched")
    assert_gap_free(deployed, run_id)


def test_an_action_whose_preparation_fails_there_prepares_on_its_own(
    deployed: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = start(deployed, 2)
    admit = admission.admit
    calls: list[int] = []

    def fails_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("an admission that fails where the turn is saved")
        return admit(*args, **kwargs)

    monkeypatch.setattr(admission, "admit", fails_once)
    commits = WriteCommits(deployed.engine)
    Engine(deployed).run_until_idle()

    assert len(calls) == 2
    assert commits.count == 3  # the claim and the transform kept; the action's own; the end
    assert deployed.runs.get(run_id).status == RunStatus.COMPLETED
    assert actions_of(deployed, run_id) == [(str(ActionStatus.SUCCEEDED), 1)]
    types = event_types(deployed, run_id)
    assert types.count("proposal.drafted") == 1  # the failed attempt's draft was not kept
    assert types.count("state.advanced") == 2
    assert_gap_free(deployed, run_id)
    with deployed.read() as conn:
        proposals = conn.execute(
            sa.select(sa.func.count()).where(schema.proposals.c.run_id == run_id)
        ).scalar_one()
    assert proposals == 1


def test_an_attempt_that_fails_leaves_the_transaction_as_before_it(store: Store) -> None:
    run = new_run(store)
    claim = store.leases.claim("w1")
    assert claim is not None

    def fails() -> None:
        tx.append_event("test.dropped", {})
        tx.update_run(context={**run.context, "dropped": True})
        tx.conn.execute(sa.insert(schema.activities).values(  # written at once, then undone
            run_id=run.id, activity_id="dropped", kind="tool", input_hash="x", result=None,
            recorded_at=store.now(),
        ))  # fmt: skip
        tx.append_event("test.dropped", {})
        raise ValueError("a bug in the attempt")

    with store.leases.fenced(claim) as tx:
        tx.append_event("test.before", {})
        assert tx.attempt(fails) is None
        assert tx.attempt(lambda: tx.append_event("test.kept", {})) is not None
        tx.append_event("test.after", {})

    assert event_types(store, run.id)[-3:] == ["test.before", "test.kept", "test.after"]
    assert "dropped" not in store.runs.get(run.id).context
    with store.leases.fenced(claim) as tx:
        assert tx.get_activity("dropped") is None
    assert_gap_free(store, run.id)
