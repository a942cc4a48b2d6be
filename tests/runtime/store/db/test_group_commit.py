"""Group commit (docs/decisions/0006): the writes of one engine's threads share commits, each
run's fence is checked under its lock inside the shared transaction, a run whose fence fails
or whose write fails is dropped from the batch without failing the others, and a worker
process killed in the middle of a batch leaves no lost turn, no duplicate order and no gap."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Claim, GroupCommit, StaleEpoch, Store
from openseal.runtime.store.db import group_commit
from openseal.runtime.store.testing import BATCH_POINTS
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import simulator_fixture  # noqa: F401
from tests.runtime.engine.test_pure_states import WriteCommits
from tests.runtime.engine_support import DEFS, assert_gap_free, compile_files, event_types, register
from tests.runtime.quickstart_support import (
    approve_pending,
    kill,
    model_activities,
    model_calls,
    procurement,
    stop,
)
from tests.runtime.support import Backend, eventually

#: generous hang guard for threads that wait on each other
GUARD = 60.0


def claims(store: Store, n: int) -> list[Claim]:
    register(store, compile_files(DEFS / "pure.hcl"))
    for i in range(n):
        service.create_objective(store, service.StartObjective("tally", {"n": i}), service.CLI)
    found = [store.leases.claim("batcher") for _ in range(n)]
    assert all(c is not None for c in found)
    return [c for c in found if c is not None]


def together(group: GroupCommit, bodies: list[Callable[[], None]]) -> list[BaseException | None]:
    """Run each body on its own thread as a working member of ``group``; what each raised."""
    ready = threading.Barrier(len(bodies))
    raised: list[BaseException | None] = [None] * len(bodies)

    def work(i: int) -> None:
        with group.member():
            ready.wait(GUARD)  # every thread is working before anyone writes
            try:
                bodies[i]()
            except BaseException as exc:
                raised[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(GUARD)
        assert not thread.is_alive()
    return raised


def note(store: Store, claim: Claim, text: str) -> Callable[[], None]:
    def write() -> None:
        with store.leases.fenced(claim) as tx:
            tx.append_event("test.note", {"text": text})

    return write


def test_the_writes_of_threads_working_together_share_one_commit(store: Store) -> None:
    held = claims(store, 4)
    group = GroupCommit(store, size=8, window=GUARD)
    commits = WriteCommits(store.engine)

    raised = together(group, [note(store, c, f"run {i}") for i, c in enumerate(held)])

    assert raised == [None] * 4
    assert commits.count == 1  # the batch closed when every working thread had joined
    for claim in held:
        assert event_types(store, claim.run_id)[-1] == "test.note"
        assert_gap_free(store, claim.run_id)


def test_the_batch_size_bounds_a_shared_commit(store: Store) -> None:
    held = claims(store, 4)
    group = GroupCommit(store, size=2, window=GUARD)
    commits = WriteCommits(store.engine)

    assert together(group, [note(store, c, "x") for c in held]) == [None] * 4
    assert commits.count == 2


def test_a_run_whose_fence_fails_is_dropped_from_the_batch_and_the_others_commit(
    store: Store,
) -> None:
    held = claims(store, 3)
    stale = held[1]
    store.runs.pause(stale.run_id, "user:test", "taken away")  # bumps the epoch
    group = GroupCommit(store, size=8, window=GUARD)
    commits = WriteCommits(store.engine)

    raised = together(group, [note(store, c, "kept") for c in held])

    assert isinstance(raised[1], StaleEpoch)
    assert raised[0] is None and raised[2] is None
    assert commits.count == 1
    for claim in (held[0], held[2]):
        assert event_types(store, claim.run_id)[-1] == "test.note"
    types = event_types(store, stale.run_id)
    assert types[-2:] == ["run.paused", "write.rejected_stale_epoch"]
    assert "test.note" not in types
    assert store.runs.get(stale.run_id).stale_writes == 1
    for claim in held:
        assert_gap_free(store, claim.run_id)


class Boom(Exception):
    pass


@pytest.mark.parametrize("fails", [False, True], ids=["refused-by-its-statement", "fails-first"])
def test_a_pipelined_fence_refused_in_a_batch_drops_that_run_alone(
    store: Store, fails: bool
) -> None:
    """A pipelined fence (docs/decisions/0028) refusing its claim inside a batch fails that
    member only: when its body's first statement carries the fence, and when the body fails
    before sending anything (the fence then goes with the statement undoing the body, and its
    refusal must not fail that)."""
    held = claims(store, 3)
    for claim in held:
        note(store, claim, "first")()  # the claims' own writes: their next fences are pipelined
    stale = held[1]
    store.runs.pause(stale.run_id, "user:test", "taken away")  # bumps the epoch
    group = GroupCommit(store, size=8, window=GUARD)

    def write(claim: Claim) -> Callable[[], None]:
        def body() -> None:
            if claim is stale:  # the last member: its body runs in a savepoint of its own
                eventually(lambda: group.joined >= 2)
            with store.leases.fenced(claim, pipelined=True) as tx:
                if fails and claim is stale:
                    raise Boom("before any statement")
                tx.row_conn.execute(sa.text("SELECT 1"))  # carries the fence
                tx.append_event("test.note", {"text": "kept"})

        return body

    raised = together(group, [write(c) for c in held])

    # on SQLite the fence is read before the body, which then never runs
    failed_first = fails and store.dialect == "postgresql"
    assert isinstance(raised[1], Boom if failed_first else StaleEpoch)
    assert raised[0] is None and raised[2] is None
    for claim in (held[0], held[2]):
        assert event_types(store, claim.run_id)[-2:] == ["test.note", "test.note"]
    types = event_types(store, stale.run_id)
    assert types[-1] == ("run.paused" if failed_first else "write.rejected_stale_epoch")
    for claim in held:
        assert_gap_free(store, claim.run_id)


@pytest.mark.parametrize("failing_first", [True, False], ids=["leader-fails", "follower-fails"])
def test_a_write_that_fails_in_a_batch_is_rolled_back_alone(
    store: Store, failing_first: bool
) -> None:
    held = claims(store, 3)
    group = GroupCommit(store, size=8, window=GUARD)
    commits = WriteCommits(store.engine)
    first = threading.Event()

    def body(i: int) -> Callable[[], None]:
        def write() -> None:
            leads = i == (1 if failing_first else 0)  # the failing write, or another, opens it
            if not leads:
                assert first.wait(GUARD)
            with store.leases.fenced(held[i]) as tx:
                if leads:
                    first.set()
                    eventually(lambda: group.joined == 3, timeout=GUARD)
                tx.append_event("test.note", {"i": i})
                tx.conn  # written now, before the failure  # noqa: B018
                if i == 1:
                    raise Boom("after writing")

        return write

    raised = together(group, [body(i) for i in range(3)])

    assert isinstance(raised[1], Boom)
    assert raised[0] is None and raised[2] is None
    assert commits.count == 1
    assert "test.note" not in event_types(store, held[1].run_id)
    for i in (0, 2):
        assert event_types(store, held[i].run_id)[-1] == "test.note"
    for claim in held:
        assert_gap_free(store, claim.run_id)


def test_a_batch_takes_no_more_members_once_it_has_opened_its_savepoints(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = claims(store, 3)
    monkeypatch.setattr(group_commit, "SAVEPOINTS_PER_BATCH", 1)
    group = GroupCommit(store, size=8, window=GUARD)  # a batch waiting for more would hang
    commits = WriteCommits(store.engine)
    opens = first_writer(group, 2)
    second_wrote = threading.Event()

    def first() -> None:
        with store.leases.fenced(held[0]) as tx:
            opens(True)
            tx.append_event("test.note", {"text": "first"})

    def second() -> None:
        opens(False)
        with store.leases.fenced(held[1]) as tx:  # the batch's one savepoint
            tx.append_event("test.note", {"text": "second"})
            second_wrote.set()

    def third() -> None:
        assert second_wrote.wait(GUARD)
        note(store, held[2], "third")()

    assert together(group, [first, second, third]) == [None] * 3
    assert commits.count == 2
    assert all(noted(store, claim) for claim in held)


def test_a_savepoint_a_members_body_opens_counts_against_the_batchs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = claims(store, 2)
    monkeypatch.setattr(group_commit, "SAVEPOINTS_PER_BATCH", 1)
    group = GroupCommit(store, size=8, window=GUARD)  # a batch waiting for more would hang
    commits = WriteCommits(store.engine)
    first_wrote = threading.Event()

    def first() -> None:
        with store.leases.fenced(held[0]) as tx:
            # the leader's body needs no savepoint of its own; its attempt opens one
            assert tx.attempt(lambda: tx.append_event("test.note", {"text": "first"}))
            first_wrote.set()

    def second() -> None:
        assert first_wrote.wait(GUARD)
        note(store, held[1], "second")()

    assert together(group, [first, second]) == [None] * 2
    assert commits.count == 2  # the second found the first's batch full of savepoints
    assert all(noted(store, claim) for claim in held)


def test_a_thread_alone_commits_without_waiting_for_the_window(store: Store) -> None:
    [claim] = claims(store, 1)
    group = GroupCommit(store, size=8, window=3600)  # a wait would hang until the guard
    done = threading.Event()

    def alone() -> None:
        with group.member():
            note(store, claim, "alone")()
        done.set()

    threading.Thread(target=alone, daemon=True).start()
    assert done.wait(GUARD)
    assert event_types(store, claim.run_id)[-1] == "test.note"


def test_a_batch_commits_once_the_threads_it_waits_for_stop_working(store: Store) -> None:
    [claim] = claims(store, 1)
    group = GroupCommit(store, size=8, window=3600)  # a wait would hang until the guard
    wrote = threading.Event()

    def writer() -> None:  # returns once committed: with the window, only after idle() ends
        with store.leases.fenced(claim) as tx:
            tx.append_event("test.note", {"text": "x"})
        wrote.set()

    def idle() -> None:
        time.sleep(0.2)  # the writer's batch is waiting for this thread to join
        assert not wrote.is_set()

    assert together(group, [writer, idle]) == [None, None]
    assert noted(store, claim)


# -- together(): a block of writes is one member of the shared batch ---------------------


def noted(store: Store, claim: Claim) -> bool:
    """Whether ``claim``'s note is committed (read on a connection of its own)."""
    return "test.note" in event_types(store, claim.run_id)


def test_a_together_block_joins_the_shared_batch_as_one_member(store: Store) -> None:
    held = claims(store, 4)
    committed = threading.Event()

    def hook(point: str, _members: int) -> None:
        if point == "batch.committed":
            committed.set()

    group = GroupCommit(store, size=8, window=GUARD, hook=hook)
    commits = WriteCommits(store.engine)
    seen: dict[str, bool] = {}

    def block() -> None:
        with group.together():
            note(store, held[0], "first")()
            seen["first write visible inside the block"] = noted(store, held[0])
            note(store, held[1], "second")()
        seen["committed when the block was left"] = committed.is_set()

    def plain(claim: Claim) -> Callable[[], None]:
        def write() -> None:
            note(store, claim, "plain")()
            seen[f"committed when {claim.run_id} returned"] = committed.is_set()

        return write

    raised = together(group, [block, plain(held[2]), plain(held[3])])

    assert raised == [None] * 3
    assert commits.count == 1  # the block's two writes and the others' share one commit
    assert seen.pop("first write visible inside the block") is False
    assert all(seen.values()) and len(seen) == 3  # no member went on before the commit
    for claim in held:
        assert noted(store, claim)
        assert_gap_free(store, claim.run_id)


def first_writer(group: GroupCommit, members: int) -> Callable[[bool], None]:
    """``opens(leads)``: the batch's first writer waits for all ``members`` to join; the others
    wait for it."""
    first = threading.Event()

    def opens(leads: bool) -> None:
        if leads:
            first.set()
            eventually(lambda: group.joined == members, timeout=GUARD)
        else:
            assert first.wait(GUARD)

    return opens


def kept(
    store: Store, claim: Claim, opens: Callable[[bool], None], *, leads: bool
) -> Callable[[], None]:
    """A note written in a fenced transaction that is kept; ``leads``: whether it opens the
    batch (see :func:`first_writer`)."""

    def write() -> None:
        if not leads:
            opens(False)
        with store.leases.fenced(claim) as tx:
            if leads:
                opens(True)
            tx.append_event("test.note", {"text": "kept"})

    return write


@pytest.mark.parametrize("block_leads", [True, False], ids=["block-leads", "block-follows"])
def test_a_together_block_that_fails_rolls_back_its_writes_and_only_them(
    store: Store, block_leads: bool
) -> None:
    held = claims(store, 4)
    group = GroupCommit(store, size=8, window=GUARD)
    commits = WriteCommits(store.engine)
    opens = first_writer(group, 3)

    def block() -> None:
        if not block_leads:
            opens(False)
        with group.together():
            if block_leads:
                opens(True)
            note(store, held[0], "rolled back")()
            note(store, held[1], "rolled back")()
            raise Boom("out of the block")

    raised = together(
        group,
        [
            block,
            kept(store, held[2], opens, leads=not block_leads),
            kept(store, held[3], opens, leads=False),
        ],
    )

    assert isinstance(raised[0], Boom)
    assert raised[1:] == [None, None]
    assert commits.count == 1
    assert [noted(store, claim) for claim in held] == [False, False, True, True]
    for claim in held:
        assert_gap_free(store, claim.run_id)


@pytest.mark.parametrize("block_leads", [True, False], ids=["block-leads", "block-follows"])
def test_each_write_inside_a_together_block_rolls_back_alone(
    store: Store, block_leads: bool
) -> None:
    held = claims(store, 5)
    group = GroupCommit(store, size=8, window=GUARD)
    commits = WriteCommits(store.engine)
    opens = first_writer(group, 2)

    def failing(claim: Claim) -> None:
        with store.leases.fenced(claim) as tx:
            tx.append_event("test.note", {"text": "rolled back"})
            tx.conn  # written now, before the failure  # noqa: B018
            raise Boom("after writing")

    def block() -> None:
        if not block_leads:
            opens(False)
        with group.together():
            if block_leads:
                opens(True)
            # the block's first write (undone by the block's savepoint or, when the block leads,
            # by beginning the transaction again; the other member's write is kept either way),
            # then one after a write that is kept (its own savepoint)
            with pytest.raises(Boom):
                failing(held[0])
            note(store, held[1], "kept")()
            with pytest.raises(Boom):
                failing(held[2])
            note(store, held[3], "kept")()

    plain = kept(store, held[4], opens, leads=not block_leads)
    assert together(group, [block, plain]) == [None, None]
    assert commits.count == 1
    assert [noted(store, claim) for claim in held] == [False, True, False, True, True]
    for claim in held:
        assert_gap_free(store, claim.run_id)


# -- SIGKILL in the middle of a batch ----------------------------------------------------

RUNS = 4


@pytest.mark.slow
@pytest.mark.parametrize("point", BATCH_POINTS)
def test_sigkill_in_the_middle_of_a_batch_loses_no_turn_and_orders_once(
    backend: Backend, simulator: ProcurementSimulator, tmp_path: Path, point: str
) -> None:
    f = procurement(backend, simulator, tmp_path)
    runs = [f.start() for _ in range(RUNS)]
    reached = tmp_path / f"{point}.reached"
    doomed = f.worker(
        "doomed", "--lease-seconds", "1", "--concurrency", str(RUNS),
        "--batch-window-ms", "300", **{POINT_ENV: point, DIR_ENV: str(tmp_path)},
    )  # fmt: skip
    try:

        def at_point() -> bool:
            for run in runs:
                if f.status(run) == RunStatus.WAITING_FOR_APPROVAL:
                    approve_pending(f.store, run.id)
            return reached.exists()

        eventually(at_point, timeout=120)
    finally:
        kill(doomed)
    members = int(reached.read_text(encoding="utf-8"))
    assert 2 <= members <= RUNS
    assert simulator.order_count() <= RUNS

    rescuer = f.worker("rescuer", "--lease-seconds", "1", "--concurrency", "2")
    try:

        def all_completed() -> bool:
            for run in runs:
                if f.status(run) == RunStatus.WAITING_FOR_APPROVAL:
                    approve_pending(f.store, run.id)
            return all(f.status(run) == RunStatus.COMPLETED for run in runs)

        eventually(all_completed, timeout=180)
    finally:
        assert stop(rescuer) == 0

    # no duplicate effect: one order per run, under the run's action key
    orders = simulator.orders()
    assert len(orders) == RUNS
    for run in runs:
        [action] = service.list_actions(f.store, run_id=run.id)
        assert action.status == ActionStatus.SUCCEEDED
        [order] = [o for o in orders if o["idempotency_key"] == action.key]
        assert f.store.runs.get(run.id).context["outputs"] == {"order_id": order["order_id"]}
        # no gap: every run's events are gap-free
        assert_gap_free(f.store, run.id)
    # no lost turn, and no recorded model call made again: every recorded call was made, and
    # the only calls made twice are those whose record the kill lost (at most one per thread)
    recorded = Counter(name for run in runs for name in model_activities(f.store, run.id))
    called = Counter(model_calls(f))
    assert all(called[name] >= count for name, count in recorded.items())
    assert set(called) == set(recorded)
    assert sum(called.values()) - sum(recorded.values()) <= RUNS
