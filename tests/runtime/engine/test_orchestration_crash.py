"""Orchestration's commit points with real worker processes (both backends): SIGKILL a worker
where a child's end settles its parent's join (``dependency.settle``) and where a failed run's
end creates its objective's retry (``objective.retry``), before the commit and after it, then
let a fresh worker finish; and cut a worker's PostgreSQL connections there through a proxy.

Whatever the point: the transaction committed whole or not at all; the join settles once (the
parent waits once, leaves its ``spawn`` state once, with each child's own outputs; any and
quorum neither wake it twice nor lose the wake-up); each failed attempt has exactly one next run
(attempts 1, 2, 3, each created by the end before it); every run ends, every turn is closed and
every run's events are gap-free.
"""

from __future__ import annotations

import itertools
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.runtime import service
from openseal.runtime.faults import DIR_ENV, POINT_ENV
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, ObjectiveStatus, RunStatus
from openseal.runtime.store import (
    DATABASE_URL_ENV,
    Event,
    NewObjective,
    Run,
    Store,
)
from openseal.runtime.store.testing import COMMIT_POINTS
from tests.faultproxy import TcpProxy
from tests.runtime.engine.test_worker_process import spawn
from tests.runtime.engine_support import DEFS, assert_gap_free, compile_files, register
from tests.runtime.quickstart_support import kill, stop
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow

#: each join's workflow: how its three children end (``slow`` after a turn of its own, with the
#: worker holding its lease; ``done`` in the claim that starts it) and how many it needs
JOINS = {
    "all_of": (["done", "done", "slow"], 3),
    "any_of": (["slow", "done", "slow"], 1),
    "two_of": (["done", "slow", "done"], 2),
}
#: each child's input ``n`` (its output ``doubled`` is twice that)
N = {"a": 1, "b": 2, "c": 3}
#: generous: a worker process starts in seconds even on a loaded machine
HANG_GUARD = 180.0


@pytest.fixture
def settling(backend: Backend, tmp_path: Path) -> Store:
    store = backend.open()
    register(store, compile_files(DEFS / "settling.hcl"))
    (tmp_path / "responses.yaml").write_text("{}", encoding="utf-8")
    return store


def start(store: Store, workflow: str, inputs: dict[str, object]) -> NewObjective:
    request = service.StartObjective(workflow, inputs)  # type: ignore[arg-type]
    return service.create_objective(store, request, service.CLI)


def worker(
    backend: Backend, tmp: Path, name: str, *, point: str | None = None, **env: str
) -> subprocess.Popen[bytes]:
    if point is not None:
        env.update({POINT_ENV: point, DIR_ENV: str(tmp)})
    return spawn(
        backend, tmp, "--worker-id", name, "--lease-seconds", "1", "--poll-interval", "0.05",
        env=env, log=name,
    )  # fmt: skip


def blocked_at(tmp: Path, point: str, process: subprocess.Popen[bytes], name: str) -> Path:
    """Wait until worker ``name`` blocks at ``point``; the file naming the run it ended."""
    reached = tmp / f"{point}.reached"
    eventually(lambda: reached.exists() or process.poll() is not None, timeout=HANG_GUARD)
    assert process.poll() is None, (tmp / f"{name}.log").read_text(encoding="utf-8")
    eventually(lambda: reached.read_text(encoding="utf-8"), timeout=HANG_GUARD)  # written
    return reached


def crash_at(backend: Backend, tmp: Path, point: str) -> str:
    """SIGKILL a worker blocked at ``point``; the id of the run whose end reached it."""
    doomed = worker(backend, tmp, "doomed", point=point)
    try:
        reached = blocked_at(tmp, point, doomed, "doomed")
    finally:
        kill(doomed)
    return reached.read_text(encoding="utf-8")


def rescue(backend: Backend, tmp: Path, finished: Callable[[], bool]) -> None:
    """A fresh worker (the killed one's leases expire within a second) works until done."""
    rescuer = worker(backend, tmp, "rescuer")
    try:
        eventually(finished, timeout=HANG_GUARD)
    finally:
        code = stop(rescuer)
    assert code == 0


# -- what must hold -------------------------------------------------------------------------


def settled_events(store: Store, parent_id: str) -> list[Event]:
    return [
        e
        for e in store.runs.events(parent_id, 0, 10_000)
        if e.type == "dependency.child_ended" and "settled" in e.payload
    ]


def assert_ended_cleanly(store: Store, run_id: str) -> None:
    """The run ended; no turn was lost or left open; its events are gap-free."""
    assert store.runs.get(run_id).status in TERMINAL_RUN_STATUSES
    turns, _ = store.runs.turns(run_id)
    assert [t.seq for t in turns] == list(range(1, len(turns) + 1))
    assert all(t.status != "running" for t in turns), [(t.seq, t.status) for t in turns]
    assert_gap_free(store, run_id)


def assert_joined_once(store: Store, parent_id: str, needed: int) -> None:
    """The join settled once and the parent continued once, with each child's own outputs."""
    parent = store.runs.get(parent_id)
    assert parent.status == RunStatus.COMPLETED
    (group,) = store.dependencies.of_run(parent_id)
    assert group.status == "done"
    events = store.runs.events(parent_id, 0, 10_000)
    types = [e.type for e in events]
    assert types.count("wait.dependency") == 1  # never woken before the join was met
    assert [e.payload["to"] for e in events if e.type == "state.advanced"] == ["done"]
    (settled,) = settled_events(store, parent_id)
    assert settled.payload["settled"] == "done"
    ended = [e.payload["child_run_id"] for e in events if e.type == "dependency.child_ended"]
    assert sorted(ended) == sorted(m.run_id for m in group.members)  # each child once

    summary = parent.context["states"]["fan"]
    assert summary["completed"] >= needed
    for member in group.members:
        child = store.runs.get(member.run_id)
        shown = summary["children"][member.label]
        assert (shown["run_id"], shown["status"]) == (child.id, child.status)
        if child.status == RunStatus.COMPLETED:
            assert shown["outputs"] == child.context["outputs"] == {"doubled": 2 * N[member.label]}
        else:  # a leftover the join no longer waited for
            assert child.status == RunStatus.CANCELED and shown["outputs"] is None
        assert_ended_cleanly(store, child.id)
    assert_ended_cleanly(store, parent_id)


def attempts(store: Store, objective_id: str) -> list[Run]:
    found = store.runs.query(objective_id=objective_id, limit=1000)
    return sorted((r for r in found if r.parent_run_id is None), key=lambda r: r.attempt)


def assert_one_run_per_attempt(store: Store, objective_id: str) -> None:
    """Attempts 1, 2, 3, no more: each failed attempt's end created exactly the next one."""
    objective = store.objectives.get(objective_id)
    assert (objective.status, objective.attempts) == (ObjectiveStatus.FAILED, 3)
    runs = attempts(store, objective_id)
    assert [(r.attempt, r.status) for r in runs] == [(n, RunStatus.FAILED) for n in (1, 2, 3)]
    for earlier, later in itertools.pairwise(runs):
        ended = store.runs.events(earlier.id, 0, 10_000)[-1]
        assert ended.type == "run.failed"
        assert ended.payload["objective"]["retry"]["run_id"] == later.id
        created = store.runs.events(later.id, 0, 1)[0]
        assert (created.type, created.payload["retry_of"]) == ("run.created", earlier.id)
    last = store.runs.events(runs[-1].id, 0, 10_000)[-1]
    assert last.payload["objective"]["status"] == ObjectiveStatus.FAILED
    for run in runs:
        assert_ended_cleanly(store, run.id)


def objective_failed(store: Store, objective_id: str) -> Callable[[], bool]:
    return lambda: store.objectives.get(objective_id).status == ObjectiveStatus.FAILED


def parent_completed(store: Store, parent_id: str) -> Callable[[], bool]:
    return lambda: store.runs.get(parent_id).status == RunStatus.COMPLETED


# -- the join -------------------------------------------------------------------------------


def assert_join_commit(store: Store, parent_id: str, child_id: str, *, committed: bool) -> None:
    """The transaction that ended ``child_id`` committed whole (the child ended, the join
    settled by it, the parent woken), or nothing of it did."""
    (group,) = store.dependencies.of_run(parent_id)
    assert child_id in {m.run_id for m in group.members}
    child, parent = store.runs.get(child_id), store.runs.get(parent_id)
    assert parent.status == RunStatus.WAITING_FOR_DEPENDENCY
    if committed:
        assert child.status == RunStatus.COMPLETED
        assert group.status == "done"
        (settled,) = settled_events(store, parent_id)
        assert settled.payload["child_run_id"] == child_id
        assert parent.wake_at is not None
    else:
        assert child.status not in TERMINAL_RUN_STATUSES
        assert group.status == "open"
        assert settled_events(store, parent_id) == []
        assert parent.wake_at is None


@pytest.mark.parametrize("committed", [False, True], ids=["before_commit", "committed"])
@pytest.mark.parametrize("workflow", sorted(JOINS))
def test_sigkill_where_a_childs_end_settles_the_join_then_the_parent_continues_once(
    settling: Store, backend: Backend, tmp_path: Path, workflow: str, committed: bool
) -> None:
    modes, needed = JOINS[workflow]
    parent = start(settling, workflow, {"modes": modes}).run
    point = "dependency.settle.committed" if committed else "dependency.settle"
    child_id = crash_at(backend, tmp_path, point)
    assert_join_commit(settling, parent.id, child_id, committed=committed)

    rescue(backend, tmp_path, parent_completed(settling, parent.id))
    assert_joined_once(settling, parent.id, needed)
    assert settling.runs.get(child_id).status == RunStatus.COMPLETED


# -- the retry ------------------------------------------------------------------------------


def assert_retry_commit(store: Store, objective_id: str, ended_id: str, *, committed: bool) -> None:
    """The transaction that ended attempt 1 committed whole (it failed, attempt 2 exists and
    the objective counts it), or nothing of it did."""
    runs = [(r.id, r.attempt, r.status) for r in attempts(store, objective_id)]
    objective = store.objectives.get(objective_id)
    if committed:
        assert runs[0] == (ended_id, 1, RunStatus.FAILED)
        assert [(n, status) for _, n, status in runs[1:]] == [(2, RunStatus.SLEEPING)]
        assert objective.attempts == 2
    else:
        assert runs == [(ended_id, 1, RunStatus.RUNNING)]
        assert objective.attempts == 1
    assert objective.status == ObjectiveStatus.ACTIVE


@pytest.mark.parametrize("committed", [False, True], ids=["before_commit", "committed"])
def test_sigkill_where_a_failed_runs_end_creates_its_retry_then_each_attempt_has_one_run(
    settling: Store, backend: Backend, tmp_path: Path, committed: bool
) -> None:
    created = start(settling, "flaky", {})
    point = "objective.retry.committed" if committed else "objective.retry"
    ended_id = crash_at(backend, tmp_path, point)
    assert ended_id == created.run.id  # the first attempt's end
    assert_retry_commit(settling, created.objective.id, ended_id, committed=committed)

    rescue(backend, tmp_path, objective_failed(settling, created.objective.id))
    assert_one_run_per_attempt(settling, created.objective.id)


# -- a cut connection -----------------------------------------------------------------------


#: where the worker's connections are cut: at the point, before its commit; once it sent the
#: commit and the server committed, the answer lost on the way; after the commit
CUTS = ("before_commit", "commit_answer_lost", "committed")


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_a_connection_cut_at_the_commit_point_commits_all_or_nothing_and_the_worker_recovers(
    settling: Store, backend: Backend, tmp_path: Path, point: str, cut: str
) -> None:
    """The worker's connections go through a proxy; at the point the test cuts them all and
    refuses new ones, lets the worker go on (its commit fails, or what follows it), checks
    what committed through its own connection, then lets the worker reconnect."""
    assert backend.url is not None
    join, committed = point == "dependency.settle", cut != "before_commit"
    if join:
        created = start(settling, "all_of", {"modes": JOINS["all_of"][0]})
        finished = parent_completed(settling, created.run.id)
    else:
        created = start(settling, "flaky", {})
        finished = objective_failed(settling, created.objective.id)

    def check(ended_id: str, *, committed: bool) -> bool:
        if join:
            assert_join_commit(settling, created.run.id, ended_id, committed=committed)
        else:
            assert ended_id == created.run.id
            assert_retry_commit(settling, created.objective.id, ended_id, committed=committed)
        return True

    proxy, url = TcpProxy.for_url(backend.url)
    options = quote(f"-csearch_path={backend.pg_schema}")
    blocking = f"{point}.committed" if cut == "committed" else point
    with proxy:
        through = worker(
            backend, tmp_path, "w", point=blocking,
            **{DATABASE_URL_ENV: f"{url}?options={options}"},
        )  # fmt: skip
        try:
            reached = blocked_at(tmp_path, blocking, through, "w")
            ended_id = reached.read_text(encoding="utf-8")
            if cut == "commit_answer_lost":
                proxy.mute()
                (tmp_path / f"{blocking}.release").touch()
                # the server committed; the worker still waits for the answer
                eventually(lambda: _holds(lambda: check(ended_id, committed=True)))
            proxy.refuse()
            assert proxy.sever() >= 1
            proxy.mute(False)
            (tmp_path / f"{blocking}.release").touch()
            eventually(lambda: proxy.refused > 0, timeout=HANG_GUARD)  # it met the cut
            check(ended_id, committed=committed)
            proxy.refuse(False)
            eventually(finished, timeout=HANG_GUARD)
        finally:
            proxy.refuse(False)
            code = stop(through)
    assert code == 0
    if join:
        assert_joined_once(settling, created.run.id, JOINS["all_of"][1])
    else:
        assert_one_run_per_attempt(settling, created.objective.id)


def _holds(check: Callable[[], bool]) -> bool:
    """Whether ``check`` passes now (for polling a state that is about to be reached)."""
    try:
        return check()
    except AssertionError:
        return False
