"""Child runs and fan-in: a ``spawn`` state starts child runs of deployed workflows, waits
in ``waiting_for_dependency`` holding no lease, and leaves when all, any or a quorum of them
completed — or when that can no longer happen, or at the deadline. Canceling the parent
cancels the children in flight unless they detach. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from openseal.cli.client import record
from openseal.runtime import service
from openseal.runtime.engine.cascade import cancel_run
from openseal.runtime.engine.engine import Engine
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from openseal.wire import jsonable
from tests.runtime.engine_support import (
    DEFS,
    assert_gap_free,
    compile_files,
    engine,
    register,
    scripted,
)

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

QUORUM = 'join       = "quorum"\n      quorum     = 2'


def _deploy(store: Store, tmp_path: Path, join: str = QUORUM, **replace: str) -> None:
    text = (DEFS / "kinds.hcl").read_text(encoding="utf-8").replace(QUORUM, join)
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "kinds.hcl"
    path.write_text(text, encoding="utf-8")
    register(store, compile_files(path))


def _start(store: Store, modes: list[str]) -> Run:
    started = service.create_objective(
        store, service.StartObjective("gather", {"modes": modes}), service.CLI
    )
    return started.run


def _worker(store: Store, tmp_path: Path) -> Engine:
    provider, _ = scripted(tmp_path, {})
    return engine(store, provider)


def _children(store: Store, run: Run) -> dict[str, Run]:
    (group,) = store.dependencies.of_run(run.id)
    return {m.label: store.runs.get(m.run_id) for m in group.members}


@pytest.mark.parametrize(
    ("join", "modes", "end", "completed", "canceled"),
    [
        ('join       = "all"', ["done", "done", "done"], "done", 3, []),
        ('join       = "all"', ["done", "fail", "slow"], "failed", 1, ["c"]),
        ('join       = "any"', ["slow", "done", "hang"], "done", 1, ["a", "c"]),
        ('join       = "any"', ["fail", "fail", "fail"], "failed", 0, []),
        (QUORUM, ["done", "hang", "done"], "done", 2, ["b"]),
        (QUORUM, ["fail", "hang", "fail"], "failed", 0, ["b"]),
    ],
)
def test_fan_in_leaves_by_the_join(
    store: Store,
    tmp_path: Path,
    join: str,
    modes: list[str],
    end: str,
    completed: int,
    canceled: list[str],
) -> None:
    _deploy(store, tmp_path, join)
    run = _start(store, modes)
    _worker(store, tmp_path).run_until_idle()

    parent = store.runs.get(run.id)
    assert parent.current_state == end
    assert parent.status == (RunStatus.COMPLETED if end == "done" else RunStatus.FAILED)
    output = parent.context["states"]["fan"]
    assert output["completed"] == completed
    children = _children(store, run)
    assert sorted(label for label, c in children.items() if c.status == RunStatus.CANCELED) == (
        canceled
    )
    for label, child in children.items():
        assert child.parent_run_id == run.id
        assert output["children"][label]["run_id"] == child.id
        if child.status == RunStatus.COMPLETED:
            assert output["children"][label]["outputs"] == {"doubled": 2 * "abc".index(label) + 2}
    if end == "done":
        assert parent.context["states"]["sum"] == completed
    (group,) = store.dependencies.of_run(run.id)
    assert group.status == end
    # the parent was woken once: one child's end settled the group
    settled = [e for e in store.runs.events(run.id, 0, 1000) if "settled" in e.payload]
    assert [e.payload["settled"] for e in settled] == [end]
    assert_gap_free(store, run.id)


def test_the_parent_waits_holding_no_lease_and_children_are_pinned(
    store: Store, tmp_path: Path
) -> None:
    _deploy(store, tmp_path)
    run = _start(store, ["hang", "hang", "done"])
    _worker(store, tmp_path).run_until_idle()
    parent = store.runs.get(run.id)
    assert parent.status == RunStatus.WAITING_FOR_DEPENDENCY
    assert parent.lease_owner is None and parent.wake_at is not None
    assert parent.waiting is not None and parent.waiting["kind"] == "dependency"
    active = store.definitions.active_version("job")
    assert active is not None
    children = _children(store, run)
    assert {c.workflow_digest for c in children.values()} == {active.digest}
    assert children["a"].context["inputs"] == {"n": 1, "mode": "hang"}
    assert children["c"].status == RunStatus.COMPLETED


def test_the_deadline_expires_the_group(store: Store, tmp_path: Path) -> None:
    _deploy(store, tmp_path)
    run = _start(store, ["done", "hang", "hang"])
    worker = _worker(store, tmp_path)
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_DEPENDENCY
    real_clock = store.clock
    store.clock = lambda: real_clock() + timedelta(hours=2, seconds=1)
    worker.run_until_idle()
    parent = store.runs.get(run.id)
    assert (parent.status, parent.current_state) == (RunStatus.FAILED, "expired")
    assert parent.context["states"]["fan"]["completed"] == 1
    children = _children(store, run)
    assert [c.status for c in children.values()] == [
        RunStatus.COMPLETED, RunStatus.CANCELED, RunStatus.CANCELED,
    ]  # fmt: skip
    assert store.dependencies.of_run(run.id)[0].status == "expired"


@pytest.mark.parametrize("detach", [False, True])
def test_a_parent_canceled_with_children_in_flight(
    store: Store, tmp_path: Path, detach: bool
) -> None:
    setting = 'expires_in = "2h"\n      detach     = true' if detach else 'expires_in = "2h"'
    _deploy(store, tmp_path, **{'expires_in = "2h"': setting})
    run = _start(store, ["slow", "hang", "done"])
    worker = _worker(store, tmp_path)
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_DEPENDENCY

    canceled = cancel_run(store, run.id, "user:ann", "no longer needed")
    assert canceled.status == RunStatus.CANCELED
    children = _children(store, run)
    in_flight = sorted(c.id for label, c in children.items() if label != "c")
    (event,) = [e for e in store.runs.events(run.id, 0, 1000) if e.type == "run.canceled"]
    assert event.payload["canceled_children"] == ([] if detach else in_flight)
    expected = (
        {RunStatus.CANCELED} if not detach else {RunStatus.SLEEPING, RunStatus.WAITING_FOR_EVENT}
    )
    assert {c.status for label, c in children.items() if label != "c"} == expected
    assert children["c"].status == RunStatus.COMPLETED
    assert store.dependencies.of_run(run.id)[0].status == "canceled"
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.CANCELED
    assert_gap_free(store, run.id)


JOB_TAKING_TEXT = """
model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "job" {
  owner = agent.clerk
  start = state.finished
  input "n" {
    type = string
  }
  state "finished" {
    end = "completed"
  }
}
"""


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        ("not deployed", "child c: no workflow 'not_deployed' is deployed"),
        (
            "inputs",
            "child a: the inputs do not fit workflow job: "
            "Additional properties are not allowed ('mode' was unexpected)",
        ),
    ],
)
def test_a_child_that_cannot_start_fails_the_group_and_starts_none(
    store: Store, tmp_path: Path, broken: str, reason: str
) -> None:
    if broken == "not deployed":
        child_c = 'child "c" {\n        workflow = "job"'
        _deploy(store, tmp_path, **{child_c: child_c.replace('"job"', '"not_deployed"')})
    else:  # a newer version of job, deployed on its own, takes other inputs
        _deploy(store, tmp_path)
        (tmp_path / "job").mkdir()
        (tmp_path / "job" / "job.hcl").write_text(JOB_TAKING_TEXT, encoding="utf-8")
        register(store, compile_files(tmp_path / "job" / "job.hcl"))
    run = _start(store, ["done", "done", "done"])
    _worker(store, tmp_path).run_until_idle()
    parent = store.runs.get(run.id)
    assert (parent.status, parent.current_state) == (RunStatus.FAILED, "failed")
    (group,) = store.dependencies.of_run(run.id)
    assert group.members == () and group.reason == reason
    assert store.dependencies.children_of(run.id) == []


def test_runs_show_has_the_tree(store: Store, tmp_path: Path) -> None:
    _deploy(store, tmp_path)
    run = _start(store, ["done", "hang", "fail"])
    _worker(store, tmp_path).run_until_idle()
    view = service.show_run(store, run.id)
    assert view.reason is not None and "dependency group" in view.reason
    tree = {c.via: (c.status, c.workflow, c.children) for c in view.children}
    assert tree == {
        "spawn fan.a (quorum 2: open)": ("completed", "job", ()),
        "spawn fan.b (quorum 2: open)": ("waiting_for_event", "job", ()),
        "spawn fan.c (quorum 2: open)": ("failed", "job", ()),
    }
    child = service.show_run(store, view.children[0].run_id)
    assert child.run.parent_run_id == run.id and child.children == ()
    # the API's answer, read back by the CLI as a client of a server, has the same tree
    assert record(service.RunView, jsonable(view)).children == view.children


def test_a_parent_paused_while_its_children_finish_continues_when_resumed(
    store: Store, tmp_path: Path
) -> None:
    _deploy(store, tmp_path)
    run = _start(store, ["done", "done", "hang"])
    worker = _worker(store, tmp_path)
    while store.runs.get(run.id).status != RunStatus.WAITING_FOR_DEPENDENCY:
        assert worker.step() is not None
    store.runs.pause(run.id, "user:ann")
    worker.run_until_idle()  # the children run; the join is met while the parent is paused
    assert store.dependencies.of_run(run.id)[0].status == "done"
    assert store.runs.get(run.id).status == RunStatus.PAUSED
    store.runs.resume(run.id, "user:ann")
    worker.run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.COMPLETED
