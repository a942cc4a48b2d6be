"""Concurrency caps (invariant 20): a claim takes a slot in its transaction, a run over the cap
waits in ``waiting_for_capacity`` holding no lease, a claim's end frees its slot and wakes the
waiter of the highest priority, a dead worker's slot comes back only when its lease is taken
over, and a paused agent's runs wait while others go on. Both backends."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bench.runtime_support import CommitCounter
from openseal.runtime import service
from openseal.runtime.access import Grant
from openseal.runtime.engine.capacity import wake_free
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Run, Store
from openseal.runtime.store.repos import leases
from openseal.runtime.store.repos.capacity import LOCK_SPACE, lock_ids
from tests.runtime.engine_support import DEFS, compile_files, engine, event_types, register
from tests.runtime.engine_support import scripted as scripted_provider
from tests.runtime.support import eventually

DONE = {"output": {"done": True}}


@pytest.fixture
def capped(store: Store) -> Store:
    register(store, compile_files(DEFS / "capacity.hcl"))
    return store


def start(store: Store, workflow: str, priority: int | None = None) -> Run:
    request = service.StartObjective(workflow, {}, priority=priority)
    created = service.create_objective(store, request, service.CLI)
    assert created.run is not None
    return created.run


def worker(store: Store, tmp_path: Path, name: str = "w1") -> Engine:
    script = {"work": [DONE] * 50}
    return engine(store, scripted_provider(tmp_path, script)[0], worker_id=name)


def status(store: Store, run: Run) -> RunStatus:
    return store.runs.get(run.id).status


def claim(worker: Engine, run: Run) -> Any:
    """Claim ``run``'s first turn without executing it (the claim holds its slots)."""
    found = worker._claim(run.id)
    assert found is not None
    return found


def spy_rollbacks(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The takes sent with a claim's write whose claim was rolled back (a cap was full), as
    they are told to ``store.capacity.rolled_back``."""
    found: list[object] = []
    told = store.capacity.rolled_back

    def spy(taking: Any) -> None:
        found.append(taking)
        told(taking)

    monkeypatch.setattr(store.capacity, "rolled_back", spy)
    return found


def test_a_run_over_the_cap_waits_and_is_woken_by_priority(capped: Store, tmp_path: Path) -> None:
    w = worker(capped, tmp_path)
    first, second = start(capped, "capped"), start(capped, "capped")
    low, high = start(capped, "capped", priority=-1), start(capped, "capped", priority=3)
    held = [claim(w, first), claim(w, second)]
    assert [status(capped, r) for r in (first, second)] == [RunStatus.RUNNING] * 2

    for run in (high, low):  # each claimed, each refused a slot
        claim(w, run)
        waiting = capped.runs.get(run.id)
        assert waiting.status == RunStatus.WAITING_FOR_CAPACITY
        assert waiting.lease_owner is None
        assert waiting.waiting == {
            "kind": "capacity",
            "waits_for": {"kind": "concurrency", "limit": "workflow:capped", "max": 2,
                          "in_use": 2},
        }  # fmt: skip
        assert event_types(capped, run)[-1] == "capacity.waiting"
    assert capped.leases.claim("other") is None  # nothing else is runnable

    w._run_claim(*held[0])  # the first run ends: its slot frees, the higher priority wakes
    assert status(capped, first) == RunStatus.COMPLETED
    assert status(capped, high) == RunStatus.QUEUED
    assert status(capped, low) == RunStatus.WAITING_FOR_CAPACITY
    assert "capacity.woken" in event_types(capped, high)

    w._run_claim(*held[1])
    assert status(capped, low) == RunStatus.QUEUED
    w.run_until_idle()
    assert [status(capped, r) for r in (first, second, low, high)] == [RunStatus.COMPLETED] * 4
    with capped.read() as conn:
        assert capped.capacity.held(conn) == []
        assert capped.capacity.waiting_keys(conn) == []


def test_a_take_sent_with_the_claims_write_that_finds_the_cap_full_counts_again(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a claim's slots go with its own write, assumed free: when the cap was full
    after all (taken by another worker's claims), the claim is rolled back and made again with
    its slots counted first, and the run waits as if it had counted first (one claim, its
    events, no slot); the key then has this worker count first for its next claims too."""
    if capped.dialect != "postgresql":
        pytest.skip("SQLite counts first: its count costs no round trip")
    holder, late = worker(capped, tmp_path, "holder"), worker(capped, tmp_path, "late")
    first, second, third, fourth = (start(capped, "capped") for _ in range(4))
    claim(holder, first)
    claim(holder, second)
    rolled_back = spy_rollbacks(capped, monkeypatch)
    claim(late, third)
    assert len(rolled_back) == 1  # its take had gone with its write, and was undone
    waiting = capped.runs.get(third.id)
    assert (waiting.status, waiting.epoch, waiting.lease_owner) == (
        RunStatus.WAITING_FOR_CAPACITY, 1, None,
    )  # fmt: skip
    assert event_types(capped, third) == ["run.created", "lease.claimed", "capacity.waiting"]
    with capped.read() as conn:
        assert {slot.run_id for slot in capped.capacity.held(conn)} == {first.id, second.id}
    claim(late, fourth)  # counted first: refused without a claim rolled back
    assert len(rolled_back) == 1
    assert status(capped, fourth) == RunStatus.WAITING_FOR_CAPACITY


def test_a_run_submitted_over_a_full_cap_is_created_and_waits(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Engine.submit`` creates the objective and claims its run in one commit of a group: a
    cap found full there (by the take sent with the claim's write, on PostgreSQL) undoes only
    the claim, and the run, created, waits for the cap."""
    holder = worker(capped, tmp_path, "holder")
    claim(holder, start(capped, "capped"))
    claim(holder, start(capped, "capped"))
    rolled_back = spy_rollbacks(capped, monkeypatch)
    script = {"work": [DONE] * 5}
    submitter = engine(capped, scripted_provider(tmp_path, script)[0], batch_size=2)
    created, report = submitter.submit(service.StartObjective("capped", {}), service.CLI)
    assert created.run is not None and report is not None
    assert len(rolled_back) == (capped.dialect == "postgresql")  # the claim was made again
    waiting = capped.runs.get(created.run.id)
    assert (waiting.status, waiting.epoch) == (RunStatus.WAITING_FOR_CAPACITY, 1)
    assert event_types(capped, waiting.id) == ["run.created", "lease.claimed", "capacity.waiting"]


def test_a_claim_that_failed_after_its_take_is_made_again_with_its_slots(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim whose first turn fails unexpectedly after its slots were taken is rolled back,
    slots and all, and made again alone at the same epoch: that claim takes its slots anew
    rather than taking them for held."""
    w = worker(capped, tmp_path)
    run = start(capped, "capped")
    prepared = w.executor._prepared
    failures = [RuntimeError("the first turn's preparation failed")]

    def failing_once(*args: Any) -> Any:
        if failures:
            raise failures.pop()
        return prepared(*args)

    monkeypatch.setattr(w.executor, "_prepared", failing_once)
    found = claim(w, run)
    assert not failures and found[1] is None  # claimed alone, the turn not begun
    w._run_claim(*found)
    assert status(capped, run) == RunStatus.COMPLETED
    types = event_types(capped, run)
    assert types.count("capacity.slot_taken") == 1
    assert types.index("capacity.slot_taken") < types.index("turn.started")


def test_a_slot_taken_is_stamped_no_earlier_than_its_count(capped: Store, tmp_path: Path) -> None:
    """``capacity.slot_taken`` says when its slots were counted (``taken_at``: no earlier than
    the count, so after the end of any claim whose slot it reuses), sent with the claim's write
    or counted first."""
    w = worker(capped, tmp_path)
    run = start(capped, "capped")
    before = time.time()
    claim(w, run)
    after = time.time()
    (taken,) = [e for e in capped.runs.events(run.id, 0, 100) if e.type == "capacity.slot_taken"]
    assert taken.payload["limits"] == ["workflow:capped"] and taken.payload["epoch"] == 1
    assert before <= float(taken.payload["taken_at"]) <= after


def test_a_cap_that_does_not_bind_costs_a_claim_no_round_trip(
    capped: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the take (the keys' locks, then the count and write of the slots) goes in
    the pipeline of the claim's own write: runs under a cap that does not bind send as many
    round trips as runs under none (counted on the wire, as ``bench capacity`` counts them)."""
    if capped.dialect != "postgresql":
        pytest.skip("round trips are PostgreSQL's")
    monkeypatch.setattr(leases, "FAIR_SHARE", leases.FAIR_WINDOW + 1)  # a look per second
    w = worker(capped, tmp_path)
    # the first runs of each read what is cached after, and have psycopg prepare statements
    # (preparing one is a round trip of its own outside a pipeline)
    for _ in range(6):
        start(capped, "free"), start(capped, "capped")
    w.run_until_idle()

    def round_trips(workflow: str) -> int:
        for _ in range(3):
            start(capped, workflow)
        counter = CommitCounter()
        counter.trace_round_trips(capped.engine, tmp_path / workflow)
        try:
            assert len(w.run_until_idle()) == 3
        finally:
            counter.stop_tracing()
        return counter.round_trips()

    free = round_trips("free")
    assert round_trips("capped") == free


def test_a_dead_workers_slot_comes_back_with_its_lease(capped: Store, tmp_path: Path) -> None:
    dead, alive = worker(capped, tmp_path, "dead"), worker(capped, tmp_path, "alive")
    one, two, three = (start(capped, "capped") for _ in range(3))
    claim(dead, one)
    claim(dead, two)  # the dead worker holds both slots and never ends its turns
    claim(alive, three)
    assert status(capped, three) == RunStatus.WAITING_FOR_CAPACITY
    # the leases have not expired: a look for waiters to wake finds no free slot
    assert wake_free(capped, ["workflow:capped"]) == 0

    later = capped.now() + timedelta(seconds=alive.lease_seconds + 1)
    capped.clock = lambda: later
    assert wake_free(capped, ["workflow:capped"]) == 0  # expired, not yet taken over
    taken = alive._claim(one.id)  # the takeover moves the slot to the new claim
    assert taken is not None and status(capped, one) == RunStatus.RUNNING
    assert capped.runs.get(one.id).lease_owner == "alive"
    assert wake_free(capped, ["workflow:capped"]) == 0
    alive._run_claim(*taken)
    assert status(capped, one) == RunStatus.COMPLETED
    assert status(capped, three) == RunStatus.QUEUED


def test_an_agents_cap_and_its_pause(capped: Store, tmp_path: Path) -> None:
    w = worker(capped, tmp_path)
    a, b = start(capped, "carried"), start(capped, "carried")
    held = claim(w, a)
    claim(w, b)  # agent.porter declares concurrency = 1
    assert capped.runs.get(b.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "concurrency", "limit": "agent:porter", "max": 1, "in_use": 1},
    }
    w._run_claim(*held)
    w.run_until_idle()
    assert status(capped, b) == RunStatus.COMPLETED

    capped.capacity.set("agent:clerk", by="user:test", paused=True)
    paused, free = start(capped, "capped"), start(capped, "carried")
    w.run_until_idle()
    assert status(capped, free) == RunStatus.COMPLETED  # other work goes on
    assert capped.runs.get(paused.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "paused", "limit": "agent:clerk"},
    }
    capped.capacity.set("agent:clerk", by="user:test", paused=False)
    assert wake_free(capped, ["agent:clerk"]) == 1
    w.run_until_idle()
    assert status(capped, paused) == RunStatus.COMPLETED


def test_an_agents_view_shows_only_the_callers_scopes(capped: Store, tmp_path: Path) -> None:
    """``agents show`` lists the slots, waiting runs and requests of runs in the caller's
    scopes only: a caller of scope ``east`` learns nothing of ``default``'s runs."""
    w = worker(capped, tmp_path)
    east = service.Caller("user:eve", False, Grant.of(["operator"], ["east"]))
    holder, waiter = start(capped, "carried"), start(capped, "carried")
    claim(w, holder)  # holds agent:porter's one slot
    claim(w, waiter)  # waits for it
    everywhere = service.show_actor(capped, "agent", "porter", service.CLI)
    assert [s.run_id for s in everywhere.slots] == [holder.id]
    assert everywhere.waiting_for_capacity == [waiter.id]
    seen = service.show_actor(capped, "agent", "porter", east)
    assert (seen.runs, seen.slots, seen.waiting_for_capacity) == ([], [], [])

    mine = service.create_objective(capped, service.StartObjective("carried", {}), east).run
    assert mine is not None
    claim(w, mine)
    seen = service.show_actor(capped, "agent", "porter", east)
    assert seen.slots == [] and seen.waiting_for_capacity == [mine.id]


def test_runs_without_caps_take_no_slot(capped: Store, tmp_path: Path) -> None:
    run = start(capped, "free")
    worker(capped, tmp_path).run_until_idle()
    assert status(capped, run) == RunStatus.COMPLETED
    assert "capacity.slot_taken" not in event_types(capped, run)


def test_a_scopes_cap_set_by_an_operator(capped: Store, tmp_path: Path) -> None:
    w = worker(capped, tmp_path)
    capped.capacity.set("scope:default", by="user:test", max_slots=1)
    one, two = start(capped, "free"), start(capped, "free")
    held = claim(w, one)
    claim(w, two)
    assert capped.runs.get(two.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "concurrency", "limit": "scope:default", "max": 1, "in_use": 1},
    }
    w._run_claim(*held)
    w.run_until_idle()
    assert status(capped, two) == RunStatus.COMPLETED


def test_a_waker_locks_the_run_before_its_wait(capped: Store, tmp_path: Path) -> None:
    """One lock order (invariant 15): waking a run locks its row first, then its wait, and
    holds no key's lock or row meanwhile, so a claim (the run, then the keys) never waits for
    it in a cycle."""
    if capped.dialect != "postgresql":
        pytest.skip("SQLite takes one database-wide write lock: there is no row lock order")
    capped.capacity.set("agent:clerk", by="user:test", paused=True)
    run = start(capped, "capped")
    worker(capped, tmp_path).run_until_idle()
    assert status(capped, run) == RunStatus.WAITING_FOR_CAPACITY
    capped.capacity.set("agent:clerk", by="user:test", paused=False)

    def waiting_locks() -> int:
        with capped.engine.connect() as conn:
            query = sa.text("SELECT count(*) FROM pg_locks WHERE NOT granted")
            return int(conn.execute(query).one()[0])

    blocker = capped.engine.connect()
    tx = blocker.begin()
    blocker.execute(sa.text("SELECT id FROM runs WHERE id = :id FOR UPDATE"), {"id": run.id})
    before = waiting_locks()
    thread = threading.Thread(target=wake_free, args=(capped, ["agent:clerk"]))
    thread.start()
    try:
        eventually(lambda: waiting_locks() > before)  # the waker waits for the run
        with capped.engine.connect() as other, other.begin():
            other.execute(sa.text("SET LOCAL lock_timeout = '100ms'"))
            for table, column, value in (
                ("capacity_waits", "run_id", run.id),
                ("capacity_limits", "key", "agent:clerk"),
            ):
                other.execute(
                    sa.text(f"SELECT 1 FROM {table} WHERE {column} = :v FOR UPDATE"), {"v": value}
                )
            assert key_lock_is_free(other, "agent:clerk")
    finally:
        tx.rollback()
        blocker.close()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert status(capped, run) == RunStatus.QUEUED


def key_lock_is_free(conn: sa.Connection, key: str) -> bool:
    """Whether ``conn`` can take ``key``'s advisory lock now (held until its transaction ends)."""
    query = sa.text("SELECT pg_try_advisory_xact_lock(:space, :id)")
    return bool(conn.execute(query, {"space": LOCK_SPACE, "id": lock_ids([key])[0]}).scalar_one())


def test_a_take_holds_its_keys_locks_and_writes_no_row_lock(capped: Store) -> None:
    """A take locks its keys with transaction advisory locks, held until its transaction ends,
    and leaves the keys' rows unlocked: locking a row writes it (and the WAL) on every claim."""
    if capped.dialect != "postgresql":
        pytest.skip("SQLite takes one database-wide write lock: no key is locked on its own")
    run = start(capped, "free")
    with capped.engine.begin() as conn:
        conn.execute(sa.text("UPDATE runs SET status = 'running', epoch = 1 WHERE id = :id"),
                     {"id": run.id})  # fmt: skip
    caps = {"key:a": 5, "key:b": 5}
    with capped.engine.begin() as conn:  # the first take records the caps in the keys' rows
        assert capped.capacity.take(conn, run.id, 1, caps, capped.now()) is None
    with capped.engine.connect() as holder, holder.begin():
        assert capped.capacity.take(holder, run.id, 1, caps, capped.now()) is None
        with capped.engine.connect() as other, other.begin():
            other.execute(sa.text("SET LOCAL lock_timeout = '100ms'"))
            rows = other.execute(
                sa.text("SELECT key FROM capacity_limits WHERE key IN ('key:a', 'key:b') "
                        "FOR UPDATE NOWAIT")
            ).all()  # fmt: skip
            assert len(rows) == 2
            assert not key_lock_is_free(other, "key:a")
            assert not key_lock_is_free(other, "key:b")
    with capped.engine.connect() as other, other.begin():
        assert key_lock_is_free(other, "key:a") and key_lock_is_free(other, "key:b")


def test_keys_are_locked_in_one_order() -> None:
    """Every taker takes its keys' locks sorted by their ids, each once, whatever the order
    of the keys it was given."""
    ids = lock_ids(["workflow:b", "scope:a", "agent:c", "scope:a"])
    assert ids == sorted(ids) and len(ids) == 3
    assert lock_ids(["agent:c", "workflow:b", "scope:a"]) == ids
    assert all(-(2**31) <= i < 2**31 for i in [*ids, LOCK_SPACE])


def test_a_take_that_waited_for_a_keys_lock_counts_what_its_holder_took(
    capped: Store, tmp_path: Path
) -> None:
    """A take counts the slots in a statement of its own, after it holds the keys' locks:
    under READ COMMITTED that statement's snapshot is taken once the lock's holder has
    committed, so it sees the slot the holder took (one statement locking and counting
    would count from a snapshot taken before it waited, and let both in)."""
    if capped.dialect != "postgresql":
        pytest.skip("SQLite takes one database-wide write lock: nothing waits for a key's row")
    first, second = start(capped, "free"), start(capped, "free")
    with capped.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE runs SET status = 'running', epoch = 1 WHERE id IN (:a, :b)"),
            {"a": first.id, "b": second.id},
        )

    def waiting_locks() -> int:
        with capped.engine.connect() as conn:
            query = sa.text("SELECT count(*) FROM pg_locks WHERE NOT granted")
            return int(conn.execute(query).one()[0])

    capped.capacity.set("scope:warm", by="user:test", max_slots=1)  # the key's row exists
    with capped.engine.begin() as conn:
        assert capped.capacity.take(conn, first.id, 1, {"key:k": 1}, capped.now()) is None
        conn.execute(sa.text("DELETE FROM capacity_slots"))  # the row stays, no slot counts
    found: list[Any] = []
    holder = capped.engine.connect()
    tx = holder.begin()
    assert capped.capacity.take(holder, first.id, 1, {"key:k": 1}, capped.now()) is None
    before = waiting_locks()

    def second_take() -> None:
        with capped.engine.begin() as conn:
            found.append(capped.capacity.take(conn, second.id, 1, {"key:k": 1}, capped.now()))

    thread = threading.Thread(target=second_take)
    thread.start()
    try:
        eventually(lambda: waiting_locks() > before)  # the second take waits for the key
    finally:
        tx.commit()
        holder.close()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(found) == 1 and found[0] is not None
    assert (found[0].key, found[0].max_slots, found[0].in_use) == ("key:k", 1, 1)


def test_a_cap_changed_by_a_new_version_holds_for_runs_pinned_to_older_ones(
    capped: Store, tmp_path: Path
) -> None:
    """A cap is the workflow's as a resource: runs pinned to the version that declared 2 count
    against the 1 the active version declares, and against 2 again once a later version
    raises it (read by every worker's periodic look)."""
    first, second = start(capped, "capped"), start(capped, "capped")
    text = (DEFS / "capacity.hcl").read_text(encoding="utf-8")

    def deploy(cap: int) -> None:
        folder = tmp_path / f"cap{cap}"
        folder.mkdir()
        changed = text.replace("  concurrency = 2\n", f"  concurrency = {cap}\n")
        assert changed != text or cap == 2
        (folder / "capacity.hcl").write_text(changed + f"# version {cap}\n", encoding="utf-8")
        register(capped, compile_files(folder / "capacity.hcl"))

    deploy(1)
    active = capped.definitions.active_version("capped")
    assert active is not None and active.digest != first.workflow_digest
    w = worker(capped, tmp_path)
    claim(w, first)
    claim(w, second)
    assert status(capped, second) == RunStatus.WAITING_FOR_CAPACITY
    assert capped.runs.get(second.id).waiting == {
        "kind": "capacity",
        "waits_for": {"kind": "concurrency", "limit": "workflow:capped", "max": 1, "in_use": 1},
    }
    deploy(3)
    w.capacity._next = 0.0  # the worker's next periodic look, now
    assert w.capacity.poll() == 1  # a slot of 3 is free: the waiting run is woken
    claim(w, second)
    assert capped.runs.get(second.id).status == RunStatus.RUNNING
