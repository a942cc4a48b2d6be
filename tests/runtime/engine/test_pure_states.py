"""Pure states (``transform``, ``decision``, ``end``) are executed in the commit that saves
their turn (docs/decisions/0006): a workflow of pure states only runs in its claim's commit,
with the same turns, events and budget charges as one commit per turn would write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from openseal.runtime import service
from openseal.runtime.engine import states
from openseal.runtime.engine.states import simple
from openseal.runtime.engine.states.base import Outcome, StepContext
from openseal.runtime.engine.turns import TurnReport
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import FencedTx, NewObjective, Store
from openseal.runtime.store.tables import schema
from tests.runtime.engine_support import (
    DEFS,
    assert_gap_free,
    compile_files,
    engine,
    event_types,
    register,
    scripted,
)
from tests.runtime.support import statements_sent


class WriteCommits:
    """Counts committed transactions that wrote something."""

    def __init__(self, engine: sa.Engine) -> None:
        self.count = 0
        self._dirty: set[int] = set()
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)

    def _statement(self, conn: sa.Connection, _c: Any, sql: str, *_rest: Any) -> None:
        if not sql.lstrip().upper().startswith(("SELECT", "PRAGMA", "BEGIN", "SAVEPOINT")):
            self._dirty.add(id(conn))

    def _commit(self, conn: sa.Connection) -> None:
        if id(conn) in self._dirty:
            self.count += 1
            self._dirty.discard(id(conn))


@pytest.fixture
def pure(store: Store) -> Store:
    register(store, compile_files(DEFS / "pure.hcl"))
    return store


@pytest.fixture
def restored() -> Iterator[None]:
    saved, pure = dict(states.HANDLERS), dict(states.PURE)
    yield
    states.HANDLERS.clear()
    states.HANDLERS.update(saved)
    states.PURE.clear()
    states.PURE.update(pure)


def start(store: Store, n: int) -> str:
    return service.create_objective(
        store, service.StartObjective("tally", {"n": n}), service.CLI
    ).run.id


def turn_rows(store: Store, run_id: str) -> list[tuple[int, str, str]]:
    turns = schema.turns
    with store.read() as conn:
        rows = conn.execute(
            sa.select(turns.c.seq, turns.c.state, turns.c.status)
            .where(turns.c.run_id == run_id)
            .order_by(turns.c.seq)
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


def test_a_workflow_of_pure_states_runs_in_its_claims_commit(pure: Store, tmp_path: Path) -> None:
    run_id = start(pure, 7)
    commits = WriteCommits(pure.engine)
    logged: list[TurnReport] = []
    worker = engine(pure, scripted(tmp_path, {})[0], on_turn=logged.append)
    [report] = worker.run_until_idle()

    assert commits.count == 1  # the claim, every turn, and the end
    run = pure.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED
    assert run.lease_owner is None
    assert run.context["states"]["big"] == {"size": "big"}
    assert [t.state for t in report.turns] == ["count", "check", "big", "done"]
    assert [t.turn_seq for t in logged] == [1, 2, 3, 4]
    assert turn_rows(pure, run_id) == [
        (1, "count", "completed"),
        (2, "check", "completed"),
        (3, "big", "completed"),
        (4, "done", "completed"),
    ]
    assert event_types(pure, run_id) == [
        "run.created",
        "lease.claimed",
        *["turn.started", "state.advanced"] * 3,
        "turn.started",
        "run.completed",
    ]
    assert run.budget_used.get("turns") == 3  # an end state costs no turn
    assert_gap_free(pure, run_id)


def test_the_claims_turn_limit_still_gives_the_run_back(pure: Store, tmp_path: Path) -> None:
    run_id = start(pure, 1)
    worker = engine(pure, scripted(tmp_path, {})[0], max_turns_per_claim=2)
    first = worker.step()
    assert first is not None
    assert [t.state for t in first.turns] == ["count", "check"]
    assert first.ending == "released"
    assert pure.runs.get(run_id).status == RunStatus.QUEUED
    assert pure.runs.get(run_id).current_state == "small"

    worker.run_until_idle()
    assert pure.runs.get(run_id).status == RunStatus.COMPLETED
    assert [row[1] for row in turn_rows(pure, run_id)] == ["count", "check", "small", "done"]
    assert_gap_free(pure, run_id)


def test_a_registered_handler_is_not_assumed_pure(
    pure: Store, tmp_path: Path, restored: None
) -> None:
    seen: list[str] = []

    def transform(ctx: StepContext) -> Outcome:
        seen.append(ctx.state.name)
        return simple.transform(ctx)

    states.register("transform", transform)
    assert not states.is_pure("transform")
    assert states.is_pure("decision") and states.is_pure("end")
    run_id = start(pure, 1)
    commits = WriteCommits(pure.engine)
    engine(pure, scripted(tmp_path, {})[0]).run_until_idle()

    assert seen == ["count", "small"]
    assert pure.runs.get(run_id).status == RunStatus.COMPLETED
    # the claim saves `count`; its outcome saves `check`, which runs in it with `small` saved;
    # `small`'s outcome saves `done`, which runs in it
    assert commits.count == 3
    assert_gap_free(pure, run_id)


def test_an_unexpected_failure_in_a_pure_handler_is_met_in_a_turn_of_its_own(
    pure: Store, tmp_path: Path, restored: None
) -> None:
    def broken(ctx: StepContext) -> Outcome:
        raise RuntimeError("a bug in a handler")

    states.PURE["transform"] = broken
    states.register("transform", broken)
    run_id = start(pure, 1)
    engine(pure, scripted(tmp_path, {})[0]).run_until_idle()

    run = pure.runs.get(run_id)
    assert run.status == RunStatus.NEEDS_ATTENTION
    assert "a bug in a handler" in (run.waiting or {}).get("reason", "")
    assert turn_rows(pure, run_id)[0][1:] == ("count", "running")
    assert_gap_free(pure, run_id)


@pytest.mark.parametrize(("batch_size", "commits"), [(8, 1), (1, 2)])
def test_submit_creates_the_objective_and_claims_its_run_in_one_commit(
    pure: Store, tmp_path: Path, batch_size: int, commits: int
) -> None:
    older = start(pure, 1)  # runnable, but submit works on the run it creates
    counted = WriteCommits(pure.engine)
    worker = engine(pure, scripted(tmp_path, {})[0], batch_size=batch_size)
    created, report = worker.submit(service.StartObjective("tally", {"n": 7}), service.CLI)

    assert counted.count == commits  # with batching: the creation, the claim and every turn
    assert report is not None and report.run_id == created.run.id
    assert pure.runs.get(created.run.id).status == RunStatus.COMPLETED
    assert pure.runs.get(older).status == RunStatus.QUEUED
    assert event_types(pure, created.run.id)[:3] == ["run.created", "lease.claimed", "turn.started"]
    assert_gap_free(pure, created.run.id)


def written_events(store: Store, created: NewObjective) -> list[tuple[int, str, str, str]]:
    """The run's events as (seq, type, actor, payload), its objective's and its own ids in the
    payloads written as ``<objective>`` and ``<run>``."""
    assert created.run is not None
    ids = {created.objective.id: "<objective>", created.run.id: "<run>"}
    written = []
    for e in store.runs.events(created.run.id, 0, 10_000):
        payload = json.dumps(e.payload, sort_keys=True)
        for key, placeholder in ids.items():
            payload = payload.replace(key, placeholder)
        written.append((e.seq, e.type, e.actor, payload))
    return written


def test_submit_in_a_batch_writes_its_run_once_with_every_event_of_a_queued_run_claimed(
    pure: Store, tmp_path: Path
) -> None:
    """In a batch, ``submit`` writes its run's row once, claimed (here a run of pure states,
    ended in the claim's commit), by one INSERT and no UPDATE, and its events by one INSERT:
    the same events, in the same order, with the same sequence numbers and payloads, as a run
    inserted ``queued`` and claimed after it (``submit`` without a batch)."""
    written = {}
    for batch_size in (1, 8):
        worker = engine(pure, scripted(tmp_path, {})[0], batch_size=batch_size)
        with statements_sent(pure) as sent:
            created, report = worker.submit(service.StartObjective("tally", {"n": 7}), service.CLI)
        assert report is not None and report.status == RunStatus.COMPLETED
        assert created.run is not None
        assert (created.unwritten is None) == (batch_size == 1)
        written[batch_size] = written_events(pure, created)
        assert_gap_free(pure, created.run.id)
    assert [s for s in sent if "UPDATE runs" in s] == [], sent
    assert len([s for s in sent if "INSERT INTO runs" in s]) == 1, sent
    assert len([s for s in sent if "INSERT INTO events" in s]) == 1, sent
    assert written[8] == written[1]
    assert [kind for _seq, kind, _actor, _payload in written[8]] == [
        "run.created", "lease.claimed", *["turn.started", "state.advanced"] * 3,
        "turn.started", "run.completed",
    ]  # fmt: skip


def test_submit_claims_its_run_alone_when_its_first_turn_cannot_begin(
    pure: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beginning the first turn fails unexpectedly inside ``submit``'s block, after the run's
    row was written: the claim is rolled back with that row, the claim alone writes the run
    (``run.created``, ``lease.claimed``), and the turn is then worked on as any other."""
    worker = engine(pure, scripted(tmp_path, {})[0])
    begin = worker.executor.begin
    failed: list[str] = []

    def fails_once(tx: FencedTx, **options: Any) -> object:
        if not failed:
            failed.append(tx.claim.run_id)
            assert tx.conn is not None  # writes what is held back: the run's row
            raise RuntimeError("a bug beginning the turn")
        return begin(tx, **options)

    monkeypatch.setattr(worker.executor, "begin", fails_once)
    created, report = worker.submit(service.StartObjective("tally", {"n": 7}), service.CLI)

    assert created.run is not None and failed == [created.run.id]
    assert report is not None and report.status == RunStatus.COMPLETED
    types = event_types(pure, created.run.id)
    assert types[:3] == ["run.created", "lease.claimed", "turn.started"]
    assert types.count("lease.claimed") == 1
    assert pure.runs.get(created.run.id).epoch == 1
    assert_gap_free(pure, created.run.id)


def test_submit_again_with_its_request_key_returns_its_objective_and_claims_nothing(
    pure: Store, tmp_path: Path
) -> None:
    worker = engine(pure, scripted(tmp_path, {})[0])
    request = service.StartObjective("tally", {"n": 7}, request_key="tally-7")
    created, report = worker.submit(request, service.CLI)
    again, none = worker.submit(request, service.CLI)

    assert report is not None and none is None
    assert (again.objective.id, again.created, again.unwritten) == (
        created.objective.id, False, None,
    )  # fmt: skip
    assert again.run is not None and again.run.id == report.run_id
    assert len(pure.runs.query(limit=10)) == 1
    assert event_types(pure, report.run_id).count("lease.claimed") == 1


def test_submit_rolls_back_the_objective_when_its_claim_cannot_be_saved(
    pure: Store, tmp_path: Path, restored: None
) -> None:
    worker = engine(pure, scripted(tmp_path, {})[0])

    def creation_fails(*_args: object) -> None:
        raise RuntimeError("the block failed")

    with pytest.raises(RuntimeError), worker.group.together():  # type: ignore[union-attr]
        created = service.create_objective(
            pure, service.StartObjective("tally", {"n": 1}), service.CLI
        )
        creation_fails(created)
    assert pure.runs.query(limit=10) == ()
