"""A cancel that reaches child runs is finished by any worker: canceling a parent (or closing
an agent request) cancels its children after its own commit, one transaction each; when the
process stops in between, the children it did not reach are canceled by the next worker that
looks (openseal.runtime.engine.cascade), never left running. On SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.engine import cascade as engine_cascade
from openseal.runtime.engine.cascade import Cascade
from openseal.runtime.engine.worker import Worker
from openseal.runtime.faults import CANCEL_POINT, DIR_ENV, POINT_ENV
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from tests.runtime.engine.states.test_spawn import _children, _deploy, _start, _worker
from tests.runtime.engine.test_delegation import (
    CHECK,
    PICK,
    REQUEST,
    _step,
    _until_delegated,
    budget,
    kinds,
)
from tests.runtime.engine.test_worker_process import LAUNCH, finish, spawn, store_env
from tests.runtime.engine_support import assert_gap_free, engine, scripted
from tests.runtime.quickstart_support import kill
from tests.runtime.support import Backend, eventually

pytestmark = pytest.mark.slow_on_postgresql

__all__ = ["budget", "kinds"]  # the fixtures, used by name

#: generous: a process starts in seconds even on a loaded machine
HANG_GUARD = 180.0


class Stopped(BaseException):
    """Stands for the canceling process dying right after its own commit."""


def stop_after_commit(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cancel_run`` commits the run it is asked for and stops before any child."""
    cancel: Callable[..., Run] = engine_cascade.cancel_run
    depth = 0

    def once(on: Store, run_id: str, actor: str, reason: str | None = None, **kw: Any) -> Run:
        nonlocal depth
        if depth:
            raise Stopped(run_id)
        depth += 1
        try:
            return cancel(on, run_id, actor, reason, **kw)
        finally:
            depth -= 1

    monkeypatch.setattr(engine_cascade, "cancel_run", once)


def waiting_parent(store: Store, tmp_path: Path, *, detach: bool = False) -> Run:
    setting = 'expires_in = "2h"\n      detach     = true' if detach else 'expires_in = "2h"'
    _deploy(store, tmp_path, **{'expires_in = "2h"': setting})
    run = _start(store, ["slow", "hang", "done"])
    _worker(store, tmp_path).run_until_idle()
    assert store.runs.get(run.id).status == RunStatus.WAITING_FOR_DEPENDENCY
    return run


def test_a_worker_cancels_the_children_a_stopped_cancel_left_running(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = waiting_parent(store, tmp_path)
    with monkeypatch.context() as patched:
        stop_after_commit(store, patched)
        with pytest.raises(Stopped):
            engine_cascade.cancel_run(store, run.id, "user:ann", "no longer needed")
    assert store.runs.get(run.id).status == RunStatus.CANCELED  # committed whole
    left = {label: c.status for label, c in _children(store, run).items()}
    assert left == {"a": RunStatus.SLEEPING, "b": RunStatus.WAITING_FOR_EVENT,
                    "c": RunStatus.COMPLETED}  # fmt: skip

    # a worker process's loop looks when it starts
    Worker(_worker(store, tmp_path), mode="until_idle").run()

    children = _children(store, run)
    assert {label: c.status for label, c in children.items()} == {
        "a": RunStatus.CANCELED, "b": RunStatus.CANCELED, "c": RunStatus.COMPLETED,
    }  # fmt: skip
    for label in ("a", "b"):
        (event,) = [
            e for e in store.runs.events(children[label].id, 0, 1000) if e.type == "run.canceled"
        ]
        assert (event.actor, event.payload["reason"]) == (
            f"run:{run.id}", f"caller run {run.id} was canceled"
        )  # fmt: skip
        assert_gap_free(store, children[label].id)
    assert Cascade(store).finish() == []  # nothing left to do


def test_children_that_detach_are_left_running(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = waiting_parent(store, tmp_path, detach=True)
    engine_cascade.cancel_run(store, run.id, "user:ann", "no longer needed")
    assert Cascade(store).finish() == []
    statuses = {label: c.status for label, c in _children(store, run).items()}
    assert statuses["a"] == RunStatus.SLEEPING and statuses["b"] == RunStatus.WAITING_FOR_EVENT


def test_a_look_is_due_at_start_and_then_every_interval(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cascade = Cascade(store, every=3600)
    assert cascade.poll() == []  # the first look, with nothing to do
    run = waiting_parent(store, tmp_path)
    with monkeypatch.context() as patched:
        stop_after_commit(store, patched)
        with pytest.raises(Stopped):
            engine_cascade.cancel_run(store, run.id, "user:ann", "no longer needed")
    assert cascade.poll() == []  # not due yet: no look
    assert len(cascade.finish()) == 2


def test_the_child_of_a_canceled_request_is_canceled_by_a_worker(
    budget: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, _ = scripted(tmp_path, {"pick": [PICK], "check": [CHECK]})
    run = service.create_objective(
        budget, service.StartObjective("buy_with_budget", REQUEST), service.CLI
    ).run
    worker = engine(budget, provider)
    request = _until_delegated(budget, worker, run)
    child = str(request.child_run_id)
    with monkeypatch.context() as patched:
        stop_after_commit(budget, patched)
        with pytest.raises(Stopped):
            service.cancel_run(budget, service.RunCommand(run.id, reason="not needed"), service.CLI)
    assert budget.agent_requests.get(request.id).status == S.CANCELED
    assert budget.runs.get(child).status == RunStatus.QUEUED  # not reached

    assert Cascade(budget).finish() == [child]
    assert budget.runs.get(child).status == RunStatus.CANCELED
    (event,) = [e for e in budget.runs.events(child, 0, 1000) if e.type == "run.canceled"]
    assert event.payload["reason"] == f"agent request {request.id} canceled"
    worker.run_until_idle()
    assert budget.runs.get(run.id).status == RunStatus.CANCELED


def test_the_child_a_question_let_go_of_is_canceled_by_a_worker(
    kinds: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider, _ = scripted(tmp_path, {"helper": [{"output": {"count": 10}}]})
    run = service.create_objective(kinds, service.StartObjective("ask_helper", {}), service.CLI).run
    worker = engine(kinds, provider)
    request = _until_delegated(kinds, worker, run)
    first_child = str(request.child_run_id)
    with monkeypatch.context() as patched:

        def stopped(*args: Any, **kw: Any) -> Run:
            raise Stopped(args[1])

        patched.setattr(engine_cascade, "cancel_run", stopped)  # it stops after the commit
        with pytest.raises(Stopped):
            _step(kinds, request, "ask", text="Which office?")
    asked = kinds.agent_requests.get(request.id)
    assert (asked.status, asked.child_run_id) == (S.CLARIFICATION_REQUESTED, None)
    assert kinds.runs.get(first_child).status == RunStatus.QUEUED  # not reached

    assert Cascade(kinds).finish() == [first_child]
    (event,) = [e for e in kinds.runs.events(first_child, 0, 1000) if e.type == "run.canceled"]
    assert (event.actor, event.payload["reason"]) == (
        f"run:{run.id}", f"no agent request of run {run.id} needs it any more"
    )  # fmt: skip
    # the request goes on as before: answered, a new child does the work
    answered = _step(kinds, request, "clarify", value="O4")
    assert answered.child_run_id not in (None, first_child)
    worker.run_until_idle()
    assert kinds.runs.get(run.id).status == RunStatus.COMPLETED
    assert Cascade(kinds).finish() == []


@pytest.mark.slow
def test_sigkill_after_a_cancel_commits_then_a_worker_process_cancels_the_children(
    store: Store, backend: Backend, tmp_path: Path
) -> None:
    """``openseal runs cancel`` killed between its commit and its children; a worker process
    started afterwards cancels them."""
    run = waiting_parent(store, tmp_path)
    (tmp_path / "responses.yaml").write_text("{}", encoding="utf-8")
    env = {**store_env(backend), POINT_ENV: CANCEL_POINT, DIR_ENV: str(tmp_path)}
    command = [sys.executable, "-c", LAUNCH, "runs", "cancel", run.id,
               "--home", str(backend.home), "--reason", "no longer needed"]  # fmt: skip
    with (tmp_path / "cancel.log").open("wb") as log:
        canceler = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    reached = tmp_path / f"{CANCEL_POINT}.reached"
    try:
        eventually(lambda: reached.exists() or canceler.poll() is not None, timeout=HANG_GUARD)
        assert canceler.poll() is None, (tmp_path / "cancel.log").read_text(encoding="utf-8")
        eventually(lambda: reached.read_text(encoding="utf-8"), timeout=HANG_GUARD)
    finally:
        kill(canceler)
    assert reached.read_text(encoding="utf-8") == run.id
    assert store.runs.get(run.id).status == RunStatus.CANCELED  # committed before the kill
    left = {label: c.status for label, c in _children(store, run).items()}
    assert left["a"] == RunStatus.SLEEPING and left["b"] == RunStatus.WAITING_FOR_EVENT

    worker = spawn(backend, tmp_path, "--until-idle", "--poll-interval", "0.05")
    assert finish(worker) == 0, (tmp_path / "w.log").read_text(encoding="utf-8")
    children = _children(store, run)
    assert {label: c.status for label, c in children.items()} == {
        "a": RunStatus.CANCELED, "b": RunStatus.CANCELED, "c": RunStatus.COMPLETED,
    }  # fmt: skip
    for child in children.values():
        assert_gap_free(store, child.id)
