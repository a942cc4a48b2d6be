from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa

from openseal.errors import ClaimLost, StoreError
from openseal.runtime.clock import new_id
from openseal.runtime.engine.endings import end_run
from openseal.runtime.engine.states.base import LeaseLost
from openseal.runtime.statuses import (
    TERMINAL_RUN_STATUSES,
    WAITING_RUN_STATUSES,
    ObjectiveStatus,
    RunStatus,
)
from openseal.runtime.store import Store
from openseal.runtime.store.db.errors import IdempotencyConflict, NotFound, StaleEpoch
from openseal.runtime.store.db.fastsql import execute_driver_sql
from openseal.runtime.store.db.group_commit import open_savepoint
from openseal.runtime.store.repos.events import change_run
from openseal.runtime.store.repos.fenced import FencedTx
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Activity, Claim, Run
from tests.runtime.support import WORKFLOW, Backend, new_run, statements_sent


def claim(store: Store, worker: str = "w1", **options: object) -> Claim:
    claimed = store.leases.claim(worker, **options)  # type: ignore[arg-type]
    assert claimed is not None
    return claimed


def test_claim_sets_lease_increments_epoch_and_records_event(store: Store) -> None:
    run = new_run(store)
    first = claim(store)
    assert (first.run_id, first.epoch, first.claimed_from) == (run.id, 1, RunStatus.QUEUED)
    stored = store.runs.get(run.id)
    assert stored.status == RunStatus.RUNNING
    assert stored.lease_owner == "w1"
    assert stored.lease_expires_at == first.lease_expires_at
    assert store.leases.claim("w2") is None  # nothing else runnable
    assert store.leases.release(first)
    second = claim(store, "w2")
    assert second.epoch == 2
    types = [e.type for e in store.runs.events(run.id)]
    assert types == ["run.created", "lease.claimed", "lease.released", "lease.claimed"]


def test_the_turns_a_claim_starts_are_written_with_its_events(store: Store) -> None:
    """On PostgreSQL the turns started in a fenced transaction are inserted by the statement
    that changes the run and appends its events: a claim that starts two turns is the claiming
    SELECT and one statement."""
    run = new_run(store)
    sent: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        sent.append(sql)

    def start(tx: FencedTx) -> None:
        first = tx.start_turn("one", seq=1)
        tx.record_turn(first.id, phase="advanced", status="completed", event=False)
        tx.start_turn("two")

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        claimed = store.leases.claim_and_start("w1", start)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    assert claimed is not None
    turns, _activities = store.runs.turns(run.id)
    assert [(t.seq, t.state, t.status, t.epoch) for t in turns] == [
        (1, "one", "completed", 1),
        (2, "two", "running", 1),
    ]
    types = [e.type for e in store.runs.events(run.id)]
    assert types == ["run.created", "lease.claimed", "turn.started", "turn.started"]
    if store.dialect == "postgresql":
        assert len(sent) == 2, sent


def test_a_run_left_unwritten_is_written_once_by_its_claim_with_all_its_events(
    store: Store,
) -> None:
    """``claim_and_start(unwritten=...)`` (a run its transaction created and did not write:
    ``create(write_run=False)``) reads nothing and writes the run once, already claimed: one
    INSERT of its row, none queued and no UPDATE, and one INSERT of its events, ``run.created``
    first, all at its creation time. A run already stored under its id is refused."""
    new_run(store)  # deploys the workflow
    created = store.objectives.create(
        "acme", WORKFLOW, {"n": 2}, actor="user:test", write_run=False
    )
    unwritten = created.unwritten
    assert unwritten is not None and created.run == unwritten.run
    run_id = unwritten.run.id
    with pytest.raises(NotFound):
        store.runs.get(run_id)

    def start(tx: FencedTx) -> None:
        tx.start_turn("research", seq=1)

    with statements_sent(store) as sent:
        claimed = store.leases.claim_and_start("w1", start, run_id=run_id, unwritten=unwritten)
    assert claimed is not None and claimed[0].epoch == 1
    assert not [s for s in sent if s.lstrip().upper().startswith("SELECT")], sent
    assert [s for s in sent if "UPDATE runs" in s] == [], sent
    assert len([s for s in sent if "INSERT INTO runs" in s]) == 1, sent
    assert len([s for s in sent if "INSERT INTO events" in s]) == 1, sent
    stored = store.runs.get(run_id)
    assert (stored.status, stored.epoch, stored.lease_owner) == (RunStatus.RUNNING, 1, "w1")
    assert (stored.last_event_seq, stored.revision) == (3, 3)
    assert stored.lease_expires_at == claimed[0].lease_expires_at
    events = store.runs.events(run_id)
    assert [(e.seq, e.type, e.actor) for e in events] == [
        (1, "run.created", "user:test"),
        (2, "lease.claimed", "worker:w1"),
        (3, "turn.started", "worker:w1"),
    ]
    assert events[0].payload == {"objective_id": created.objective.id, "workflow": WORKFLOW}
    assert events[1].payload == {"worker": "w1", "epoch": 1, "claimed_from": "queued"}
    assert {e.at for e in events} == {stored.created_at}
    turns, _activities = store.runs.turns(run_id)
    assert [(t.seq, t.state, t.epoch) for t in turns] == [(1, "research", 1)]

    with pytest.raises(sa.exc.IntegrityError):
        store.leases.claim_and_start("w2", None, run_id=run_id, unwritten=unwritten)
    assert store.runs.get(run_id) == stored
    assert len(store.runs.events(run_id)) == 3


def test_a_fence_reads_a_deployments_active_digest_in_its_own_statement(store: Store) -> None:
    """``fenced(deployment=...)``: the statement that checks the claim also reads which version
    the deployment has active (an admission's), in the transaction; None when never active."""
    new_run(store)
    held = claim(store)
    active = store.definitions.active_version(WORKFLOW)
    assert active is not None
    sent: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        sent.append(sql)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        with store.leases.fenced(held, deployment=WORKFLOW) as tx:
            read = dict(tx.active_digests)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    assert read == {WORKFLOW: active.digest}
    assert len([s for s in sent if s.lstrip().upper().startswith("SELECT")]) == 1, sent
    with store.leases.fenced(held, deployment="never_deployed") as tx:
        assert tx.active_digests == {"never_deployed": None}
    with store.leases.fenced(held) as tx:
        assert tx.active_digests == {}


def test_rows_held_back_by_a_fenced_transaction_are_inserted_with_its_events(
    store: Store,
) -> None:
    """``insert_with_flush`` rows are written when the transaction's changes are (on PostgreSQL
    by the statement that appends its events), in the order given, and not before."""
    run = new_run(store)
    held = claim(store)
    sent: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_rest: object) -> None:
        sent.append(sql)

    recorded = [
        Activity(run.id, f"held:{n}", "tool", "digest", {"n": n}, store.now()) for n in (1, 2)
    ]
    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        with store.leases.fenced(held) as tx:
            for activity in recorded:
                tx.insert_with_flush(schema.activities, dict(activity.__dict__))
            assert not [s for s in sent if "INSERT" in s.upper()]
            tx.append_event("test.held", {})
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    with store.leases.fenced(held) as tx:
        assert [tx.get_activity(a.activity_id) for a in recorded] == recorded
    assert store.runs.events(run.id)[-1].type == "test.held"
    if store.dialect == "postgresql":
        assert len(sent) == 2, sent  # the fence, and the rows with the run's change and event


def _selects(store: Store, body: Callable[[], object]) -> list[str]:
    """The SELECT statements ``body`` sends."""
    with statements_sent(store) as sent:
        body()
    return [s for s in sent if s.lstrip().upper().startswith("SELECT")]


def test_a_fence_after_the_claims_own_write_starts_from_the_run_it_left(store: Store) -> None:
    """After a write of the claim committed, the next fence reads only the claim's columns, the
    event sequence and the lease expiry, and its run is the row as a read returns it: the JSON
    it wrote decoded afresh (a tuple comes back a list), the lease a heartbeat moved."""
    run = new_run(store)
    held = claim(store)
    context = {**run.context, "states": {"one": (1, 2)}}
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one", context=context, budget_used={"turns": 1})
    assert store.leases.heartbeat(held, lease_seconds=60)
    seen: list[Run] = []

    def fence() -> None:
        with store.leases.fenced(held) as tx:
            seen.append(tx.run())

    (select,) = _selects(store, fence)
    assert "context" not in select and "budget_used" not in select, select
    assert seen == [store.runs.get(run.id)]
    assert seen[0].context["states"] == {"one": [1, 2]}


def _appended_by_others(store: Store) -> tuple[Run, Claim]:
    """A run held by a claim whose write this store committed, then appended to by someone
    else (a child's spend charged to it: budget used 3 turns)."""
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one", budget_used={"turns": 1})
    with store.write() as conn:
        change_run(
            conn, run.id, event_type="budget.spent", actor="run:child", payload={},
            now=store.now(), values={"budget_used": {"turns": 3}},
        )  # fmt: skip
    return run, held


def test_events_appended_by_others_while_the_run_is_held_are_read_by_the_next_fence(
    store: Store,
) -> None:
    """Someone else's change of the held run (here: a child's spend charged to it) appends an
    event; the next fence sees the sequence moved, reads the whole row and writes after it
    (an admission's fence, which also reads the deployment's active version)."""
    run, held = _appended_by_others(store)
    seen: list[Run] = []

    digests: dict[str, str | None] = {}

    def fence() -> None:
        with store.leases.fenced(held, deployment=WORKFLOW) as tx:
            seen.append(tx.run())
            digests.update(tx.active_digests)
            tx.append_event("test.after", {})

    assert len(_selects(store, fence)) == 2  # the fence, then the whole row
    active = store.definitions.active_version(WORKFLOW)
    assert active is not None and digests == {WORKFLOW: active.digest}
    assert seen[0].budget_used == {"turns": 3}
    assert seen[0].last_event_seq == store.runs.get(run.id).last_event_seq - 1
    events = store.runs.events(run.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.type for e in events][-2:] == ["budget.spent", "test.after"]


def test_a_fence_after_a_failed_write_reads_the_whole_row(store: Store) -> None:
    """A write rolled back leaves nothing to start from: the next fence reads the run."""
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one")
    with pytest.raises(ZeroDivisionError), store.leases.fenced(held) as tx:
        tx.update_run(current_state="two")
        _ = 1 / 0
    seen: list[Run] = []

    def fence() -> None:
        with store.leases.fenced(held) as tx:
            seen.append(tx.run())

    (select,) = _selects(store, fence)
    assert "context" in select, select
    assert seen == [store.runs.get(run.id)]
    assert seen[0].current_state == "one"


def _set_goal(tx: FencedTx, objective_id: str, goal: str) -> None:
    """A statement of the body on another table (through the connection, the run held back)."""
    objectives = schema.objectives
    tx.row_conn.execute(
        sa.update(objectives).where(objectives.c.id == objective_id).values(goal=goal)
    )


def _goal(store: Store, objective_id: str) -> str | None:
    objectives = schema.objectives
    with store.read() as conn:
        return conn.execute(
            sa.select(objectives.c.goal).where(objectives.c.id == objective_id)
        ).scalar_one()


def _owed(tx: FencedTx) -> int:
    """Statements the transaction's connection owes (PostgreSQL), not sent yet."""
    return len(getattr(tx.row_conn.connection.dbapi_connection, "owed", ()))


def test_a_pipelined_fence_goes_with_the_bodys_first_statement(store: Store) -> None:
    """After the claim's own write, a pipelined fence is owed (PostgreSQL) and sent with the
    body's first statement; the body's look at the run waits for it, and the write commits."""
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one")
    owed: list[int] = []
    with store.leases.fenced(held, pipelined=True) as tx:
        owed.append(_owed(tx))
        _set_goal(tx, run.objective_id, "first")
        owed.append(_owed(tx))
        tx.update_run(current_state="two")
    assert owed == ([1, 0] if store.dialect == "postgresql" else [0, 0])
    stored = store.runs.get(run.id)
    assert stored.current_state == "two" and stored.stale_writes == 0
    assert _goal(store, run.objective_id) == "first"
    events = store.runs.events(run.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_a_pipelined_fence_alone_is_sent_when_the_body_looks_at_the_run(store: Store) -> None:
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one")
    with store.leases.fenced(held, pipelined=True) as tx:
        seen = tx.run()
        assert _owed(tx) == 0
    assert seen == store.runs.get(run.id)
    with store.leases.fenced(held, pipelined=True):
        pass  # nothing follows the fence: it is checked before the commit all the same
    assert store.runs.get(run.id).stale_writes == 0


@pytest.mark.parametrize("swallowed", [False, True])
def test_a_pipelined_fence_that_finds_the_claim_lost_undoes_the_bodys_statement(
    store: Store, swallowed: bool
) -> None:
    """The fence sent with the body's first statement refuses a claim taken over: that
    statement fails, nothing of the body is kept (even when the body swallows the failure
    and goes on), the rejection is recorded, and StaleEpoch is raised as with a fence sent
    first."""
    run = new_run(store)
    old = claim(store, "old", lease_seconds=5)
    with store.leases.fenced(old) as tx:
        tx.update_run(current_state="one")
    new = claim(store, "new", now=old.lease_expires_at + timedelta(seconds=1))
    with pytest.raises(StaleEpoch) as raised, store.leases.fenced(old, pipelined=True) as tx:
        try:
            _set_goal(tx, run.objective_id, "stale")
        except Exception:  # what a careless wrapper does
            if not swallowed:
                raise
        tx.append_event("should.not.land", {})
    assert (raised.value.claim_epoch, raised.value.run_epoch) == (old.epoch, new.epoch)
    assert _goal(store, run.objective_id) is None
    stored = store.runs.get(run.id)
    assert stored.stale_writes == 1
    types = [e.type for e in store.runs.events(run.id)]
    assert types[-1] == "write.rejected_stale_epoch" and "should.not.land" not in types
    with store.leases.fenced(new, pipelined=True) as tx:
        tx.append_event("accepted", {"by": "new"})
    assert store.runs.events(run.id)[-1].type == "accepted"


def test_a_pipelined_fence_after_others_appended_starts_from_the_whole_row(store: Store) -> None:
    """Someone else appended to the held run: the body's first statement still goes with the
    fence, and the run it then looks at is the whole row, read after it."""
    run, held = _appended_by_others(store)
    with store.leases.fenced(held, pipelined=True) as tx:
        _set_goal(tx, run.objective_id, "after")
        seen = tx.run()
        tx.append_event("test.after", {})
    assert seen.budget_used == {"turns": 3}
    assert _goal(store, run.objective_id) == "after"
    events = store.runs.events(run.id)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.type for e in events][-2:] == ["budget.spent", "test.after"]


def test_a_pipelined_fence_lost_with_a_failed_statement_is_read_again(store: Store) -> None:
    """The body's first statement fails (rolled back to a savepoint of the body's): the
    fence's row went with that pipeline's failure, so the look at the run reads it again,
    and the write goes on."""
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(current_state="one")
    projects = schema.projects
    with store.read() as conn:
        existing = conn.execute(sa.select(projects).limit(1)).mappings().one()
    with store.leases.fenced(held, pipelined=True) as tx:
        open_savepoint(tx.row_conn, "probe")
        with pytest.raises(sa.exc.IntegrityError):
            tx.row_conn.execute(sa.insert(projects), dict(existing))
        execute_driver_sql(tx.row_conn, "ROLLBACK TO SAVEPOINT probe")
        tx.update_run(current_state="two")
    stored = store.runs.get(run.id)
    assert stored.current_state == "two" and stored.stale_writes == 0


def test_a_turn_ended_without_its_own_event_is_updated_with_the_transactions_events(
    store: Store,
) -> None:
    """``record_turn(event=False)`` of a turn started earlier holds its UPDATE back: it is
    written with the event that says how the turn ended (on PostgreSQL by the same statement,
    after the fence's SELECT), and one that matches no turn fails the whole transaction."""
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        turn = tx.start_turn("one", seq=1)
    with statements_sent(store) as sent, store.leases.fenced(held) as tx:
        ended = tx.record_turn(turn.id, phase="advanced", status="completed", event=False)
        assert ended is None  # not read back
        assert not [s for s in sent if s.lstrip().upper().startswith("UPDATE")]
        tx.append_event("test.turn_ended", {})
    stored = store.runs.turns(run.id)[0][0]
    assert (stored.phase, stored.status, stored.finished_at) == ("advanced", "completed", tx.now)
    if store.dialect == "postgresql":
        assert len(sent) == 2, sent  # the fence, and the turn's update with the run's event
    before = store.runs.get(run.id)
    with pytest.raises(NotFound), store.leases.fenced(held) as tx:
        tx.record_turn("no-such-turn", status="completed", event=False)
        tx.append_event("test.never", {})
    assert store.runs.get(run.id).last_event_seq == before.last_event_seq


@pytest.mark.parametrize("status", sorted(TERMINAL_RUN_STATUSES))
def test_an_end_without_what_it_settled_is_refused_and_writes_nothing(
    store: Store, status: RunStatus
) -> None:
    """What a run's end settles is decided above the store; a fenced transaction refuses an
    end it was not told about, rather than leave the objective, request or join unsettled."""
    run = new_run(store)
    held = claim(store)
    before = store.runs.get(run.id)
    with pytest.raises(StoreError) as raised, store.leases.fenced(held) as tx:
        tx.append_event("test.before", {})
        tx.update_run(status=status)
    assert raised.value.code == "usage_error"
    after = store.runs.get(run.id)
    assert (after.status, after.last_event_seq) == (RunStatus.RUNNING, before.last_event_seq)
    assert store.objectives.get(run.objective_id).status == ObjectiveStatus.ACTIVE
    with store.leases.fenced(held) as tx:
        end_run(store, tx, status)
    assert store.runs.get(run.id).status == status


@pytest.mark.parametrize("still_open", [True, False])
def test_a_run_ends_and_settles_its_objective_in_the_statement_of_its_end(
    store: Store, still_open: bool
) -> None:
    """A completed run satisfies its objective by an UPDATE held back with the run's end (on
    PostgreSQL the fence's SELECT and one statement), and ``run.completed`` says so only if
    that UPDATE matched: an objective no longer open for the run's attempt is left alone."""
    run = new_run(store)
    held = claim(store)
    if not still_open:
        with store.write() as conn:
            conn.execute(
                sa.update(schema.objectives)
                .where(schema.objectives.c.id == run.objective_id)
                .values(status=ObjectiveStatus.FAILED)
            )
    with statements_sent(store) as sent, store.leases.fenced(held) as tx:
        end_run(store, tx, RunStatus.COMPLETED, event="run.completed")
    ended = store.runs.events(run.id)[-1]
    assert ended.type == "run.completed"
    objective = store.objectives.get(run.objective_id)
    if still_open:
        assert ended.payload["objective"] == {"status": "satisfied"}
        assert objective.status == ObjectiveStatus.SATISFIED
    else:
        assert "objective" not in ended.payload
        assert objective.status == ObjectiveStatus.FAILED
    if store.dialect == "postgresql":
        assert len(sent) == 2, sent


def test_two_workers_race_for_one_run_and_exactly_one_wins(backend: Backend) -> None:
    setup = backend.open()
    run = new_run(setup)
    stores = [backend.open(), backend.open()]
    barrier = threading.Barrier(2)
    results: list[Claim | None] = [None, None]

    def worker(index: int) -> None:
        barrier.wait()
        results[index] = stores[index].leases.claim(f"w{index}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0].run_id == run.id
    assert setup.runs.get(run.id).epoch == 1


def test_expired_lease_is_taken_over_and_the_old_worker_is_fenced(store: Store) -> None:
    run = new_run(store)
    old = claim(store, "old", lease_seconds=5)
    later = old.lease_expires_at + timedelta(seconds=1)
    new = claim(store, "new", now=later)
    assert new.epoch == old.epoch + 1
    assert new.claimed_from == RunStatus.RUNNING
    assert store.leases.heartbeat(old) is False
    assert store.leases.heartbeat(new) is True

    with pytest.raises(StaleEpoch) as raised, store.leases.fenced(old) as tx:
        tx.append_event("should.not.land", {})
    assert (raised.value.claim_epoch, raised.value.run_epoch) == (1, 2)
    stored = store.runs.get(run.id)
    assert stored.stale_writes == 1
    last = store.runs.events(run.id)[-1]
    assert last.type == "write.rejected_stale_epoch"
    assert last.payload["claim_epoch"] == 1
    assert "should.not.land" not in [e.type for e in store.runs.events(run.id)]
    with store.leases.fenced(new) as tx:
        tx.append_event("accepted", {"by": "new"})
    assert store.runs.events(run.id)[-1].type == "accepted"


def test_a_lost_claim_passes_through_a_broad_except_exception(store: Store) -> None:
    """An adapter wrapper or a retry loop that catches ``Exception`` cannot swallow a lost
    claim and let the old worker go on acting for the run."""
    new_run(store)
    old = claim(store, "old", lease_seconds=5)
    claim(store, "new", now=old.lease_expires_at + timedelta(seconds=1))
    swallowed: list[BaseException] = []
    with pytest.raises(StaleEpoch):
        try:
            with store.leases.fenced(old) as tx:
                tx.append_event("should.not.land", {})
        except Exception as exc:  # what a careless wrapper does
            swallowed.append(exc)
    assert swallowed == []
    assert not issubclass(StaleEpoch, Exception)
    assert not issubclass(LeaseLost, Exception)
    assert issubclass(StaleEpoch, ClaimLost) and issubclass(LeaseLost, ClaimLost)


def test_a_failing_body_writes_nothing(store: Store) -> None:
    run = new_run(store)
    held = claim(store)
    before = store.runs.get(run.id).last_event_seq
    with pytest.raises(ZeroDivisionError), store.leases.fenced(held) as tx:
        tx.update_run(current_state="draft")
        _ = 1 / 0
    after = store.runs.get(run.id)
    assert after.last_event_seq == before
    assert after.current_state is None


@pytest.mark.parametrize("status", sorted(WAITING_RUN_STATUSES - {RunStatus.WAITING_FOR_EVENT}))
def test_entering_a_waiting_status_releases_the_lease(store: Store, status: RunStatus) -> None:
    run = new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        tx.update_run(status=status, waiting={"kind": "test"})
    stored = store.runs.get(run.id)
    assert (stored.status, stored.lease_owner, stored.lease_expires_at) == (status, None, None)
    assert store.leases.claim("w2") is None
    assert store.leases.heartbeat(held) is False
    with pytest.raises(StaleEpoch), store.leases.fenced(held) as tx:
        tx.append_event("late", {})


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.QUEUED])
def test_leaving_running_releases_the_lease(store: Store, status: RunStatus) -> None:
    run = new_run(store)
    with store.leases.fenced(claim(store)) as tx:
        end_run(store, tx, status)
    assert store.runs.get(run.id).lease_owner is None


def test_sleeping_run_wakes_when_its_time_comes(store: Store) -> None:
    run = new_run(store)
    held = claim(store)
    wake_at = held.lease_expires_at + timedelta(hours=1)
    with store.leases.fenced(held) as tx:
        tx.update_run(status=RunStatus.SLEEPING, wake_at=wake_at, waiting={"kind": "timer"})
    assert store.leases.claim("w2", now=wake_at - timedelta(seconds=1)) is None
    woken = claim(store, "w2", now=wake_at)
    assert (woken.run_id, woken.claimed_from, woken.epoch) == (run.id, RunStatus.SLEEPING, 2)
    assert woken.run.waiting == {"kind": "timer"}
    assert woken.run.wake_at is None


def test_queued_runs_and_runs_back_to_claim_are_claimed_in_one_order(store: Store) -> None:
    """Higher priority first, then least recently changed, whether a run is queued, due to wake
    or left by a worker whose lease expired."""
    abandoned = new_run(store)  # priority 0, changed by its claim before `plain` was created
    lease = claim(store, "gone", lease_seconds=5)
    plain = new_run(store)
    sleeper = store.objectives.create("acme", WORKFLOW, {"n": 2}, actor="user:t", priority=3).run
    held = claim(store, "w1")
    assert held.run_id == sleeper.id
    wake_at = held.lease_expires_at
    with store.leases.fenced(held) as tx:
        tx.update_run(status=RunStatus.SLEEPING, wake_at=wake_at, waiting={"kind": "timer"})
    urgent = store.objectives.create("acme", WORKFLOW, {"n": 3}, actor="user:t", priority=3).run
    later = max(wake_at, lease.lease_expires_at) + timedelta(seconds=1)
    order = []
    while (taken := store.leases.claim("w2", now=later)) is not None:
        order.append(taken.run_id)
    assert order == [sleeper.id, urgent.id, abandoned.id, plain.id]


def _queue(store: Store, template: Run, runs: int) -> None:
    now = store.now()
    rows = [
        {
            "id": new_id(),
            "objective_id": template.objective_id,
            "workflow_digest": template.workflow_digest,
            "status": RunStatus.QUEUED,
            "context": {},
            "epoch": 0,
            "last_event_seq": 0,
            "stale_writes": 0,
            "budget_used": {},
            "revision": 0,
            "created_at": now,
            "updated_at": now + timedelta(seconds=i + 1),
        }
        for i in range(runs)
    ]
    with store.write() as conn:
        conn.execute(sa.insert(schema.runs), rows)


def test_a_claim_on_sqlite_reads_a_few_rows_however_long_the_queue(store: Store) -> None:
    """The claim's look does not read and sort every queued run: the steps SQLite's engine
    takes for a claim stay the same from 20 queued runs to 1,000 (and so the fair look's, past
    a busy scope that has none queued)."""
    if store.dialect != "sqlite":
        pytest.skip("SQLite's engine steps; PostgreSQL skips the rows other claims lock")
    template = new_run(store)
    claim(store)
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def watch(conn: sa.Connection, *_rest: object) -> None:
        conn.connection.driver_connection.set_progress_handler(count, 1)  # type: ignore[union-attr]

    def claim_steps(backlog: int) -> int:
        _queue(store, template, backlog)
        steps[0] = 0
        sa.event.listen(store.engine, "before_cursor_execute", watch)
        try:
            taken = claim(store)
        finally:
            sa.event.remove(store.engine, "before_cursor_execute", watch)
        assert store.runs.get(taken.run_id).epoch == 1
        return steps[0]

    few, many = claim_steps(20), claim_steps(1_000)
    assert many < 2 * few, (few, many)


def test_ten_thousand_waiting_runs_hold_no_lease_and_nothing_is_claimable(store: Store) -> None:
    template = new_run(store)
    with store.leases.fenced(claim(store)) as tx:
        tx.update_run(status=RunStatus.WAITING_FOR_APPROVAL, waiting={"kind": "approval"})
    statuses = sorted(WAITING_RUN_STATUSES | {RunStatus.PAUSED, RunStatus.NEEDS_ATTENTION})
    now = store.now()
    rows = [
        {
            "id": new_id(),
            "objective_id": template.objective_id,
            "workflow_digest": template.workflow_digest,
            "status": statuses[i % len(statuses)],
            "waiting": {"kind": "bulk", "i": i},
            "context": {},
            "epoch": 1,
            "last_event_seq": 0,
            "stale_writes": 0,
            "budget_used": {},
            "revision": 0,
            "created_at": now,
            "updated_at": now,
        }
        for i in range(10_000)
    ]
    with store.write() as conn:
        conn.execute(sa.insert(schema.runs), rows)
    with store.read() as conn:
        leased = conn.execute(
            sa.select(sa.func.count()).where(schema.runs.c.lease_owner.is_not(None))
        ).scalar_one()
        total = conn.execute(sa.select(sa.func.count()).select_from(schema.runs)).scalar_one()
    assert (leased, total) == (0, 10_001)
    assert store.leases.claim("w9") is None


def test_a_recorded_activity_is_replayed_and_a_different_request_under_its_id_refused(
    store: Store,
) -> None:
    new_run(store)
    held = claim(store)
    with store.leases.fenced(held) as tx:
        assert tx.replayed("research:1:model", "sha256:a") is None
        tx.record_activity("research:1:model", "model", "sha256:a", {"answer": 1})
    with store.leases.fenced(held) as tx:
        found = tx.replayed("research:1:model", "sha256:a")
        assert found is not None and found.result == {"answer": 1}
        again = tx.record_activity("research:1:model", "model", "sha256:a", {"answer": 2})
        assert again.result == {"answer": 1}  # the recorded result wins
        with pytest.raises(IdempotencyConflict, match="different request"):
            tx.replayed("research:1:model", "sha256:b")
        with pytest.raises(IdempotencyConflict):
            tx.record_activity("research:1:model", "model", "sha256:b", {"answer": 3})
