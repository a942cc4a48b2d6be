"""A skill's shared rate limit puts a run to sleep, holding no worker, when its call's place is
further off than a turn waits: an action's dispatch (the action stays admitted, not sent) and a
read in a turn (its hold of the budget given back). An action that then finds its skill's
concurrency cap full gives its place back. Both backends; the store's clock is moved by the
test, so waits are checked exactly, without sleeping."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.generate import PREAMBLE_HCL
from bench.runtime_support import ACTION_WORKFLOW, RUNTIME_PREAMBLE
from openseal.compiler.pipeline import compile_paths
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import retry
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import Claim, Store
from openseal.runtime.store.tables import schema
from tests.runtime import gateway_skills
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.providers import test_lost_replies as lost_replies
from tests.runtime.providers.chat_server import ChatServer
from tests.runtime.providers.test_lost_replies import ANSWERS, Clock, deploy

HOUR = 3600.0
LIMIT = '  rate_limit {\n    requests = 1\n    per      = "1h"\n  }\n'


@pytest.fixture
def clock(store: Store) -> Clock:
    moved = Clock()
    store.clock = moved
    return moved


def _actions(store: Store, run_id: str) -> list[tuple[str, int]]:
    table = schema.actions
    with store.read() as conn:
        rows = conn.execute(
            sa.select(table.c.status, table.c.attempts).where(table.c.run_id == run_id)
        )
        return [(str(status), int(attempts)) for status, attempts in rows]


def _asleep_for_the_limit(store: Store, run_id: str, clock: Clock) -> None:
    run = store.runs.get(run_id)
    assert run.status == RunStatus.SLEEPING and run.lease_owner is None
    assert run.waiting is not None and run.waiting["code"] == "over_rate_limit"
    assert run.wake_at is not None
    assert clock.now + timedelta(seconds=HOUR - 1) <= run.wake_at
    assert run.wake_at <= clock.now + timedelta(seconds=HOUR + 1)


def test_an_action_over_its_skills_limit_sleeps_admitted_and_is_sent_when_due(
    store: Store, tmp_path: Path, clock: Clock
) -> None:
    limited = RUNTIME_PREAMBLE.replace(
        '  description = "Record something (a no-op that counts as a write)."\n',
        '  description = "Record something (a no-op that counts as a write)."\n' + LIMIT,
        1,
    )
    assert limited != RUNTIME_PREAMBLE
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "project.hcl").write_text(
        PREAMBLE_HCL + "\n" + limited + "\n" + ACTION_WORKFLOW, encoding="utf-8"
    )
    compiled = compile_paths([tmp_path / "project"])
    assert compiled.ok, compiled.diagnostics
    service.register_documents(store, list(compiled.documents.values()))

    def start(n: int) -> str:
        created = service.create_objective(
            store, service.StartObjective("three_steps", {"n": n}), service.CLI
        )
        assert created.run is not None
        return created.run.id

    first = start(1)
    Engine(store, worker_id="w1").run_until_idle()
    assert store.runs.get(first).status == RunStatus.COMPLETED
    assert _actions(store, first) == [(str(ActionStatus.SUCCEEDED), 1)]

    # the hour's one call is spent: the next action waits for it asleep, admitted, not sent
    second = start(2)
    Engine(store, worker_id="w1").run_until_idle()
    _asleep_for_the_limit(store, second, clock)
    assert _actions(store, second) == [(str(ActionStatus.ADMITTED), 0)]

    clock.advance(HOUR + retry.MAX_DELAY)
    Engine(store, worker_id="w2").run_until_idle()
    assert store.runs.get(second).status == RunStatus.COMPLETED
    assert _actions(store, second) == [(str(ActionStatus.SUCCEEDED), 1)]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def test_a_read_over_its_skills_limit_sleeps_the_run_and_gives_its_budget_back(
    store: Store,
    tmp_path: Path,
    server: ChatServer,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (lost_replies.DEFS / "tools.hcl.in").read_text(encoding="utf-8")
    limited = text.replace(
        '    entry_point = "tests.runtime.gateway_skills:quote"\n  }\n',
        '    entry_point = "tests.runtime.gateway_skills:quote"\n  }\n' + LIMIT,
    )
    assert limited != text
    (tmp_path / "defs_in").mkdir()
    (tmp_path / "defs_in" / "tools.hcl.in").write_text(limited, encoding="utf-8")
    monkeypatch.setattr(lost_replies, "DEFS", tmp_path / "defs_in")
    monkeypatch.setenv(gateway_skills.LOG_ENV, str(tmp_path / "skills.jsonl"))
    first = deploy(store, tmp_path, server)
    server.reply(*ANSWERS, *ANSWERS)
    Engine(store, worker_id="w1").run_until_idle()
    assert store.runs.get(first).status == RunStatus.COMPLETED
    assert len(gateway_skills.calls(tmp_path / "skills.jsonl")) == 1

    second = service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run.id
    Engine(store, worker_id="w1").run_until_idle()
    _asleep_for_the_limit(store, second, clock)
    assert len(gateway_skills.calls(tmp_path / "skills.jsonl")) == 1
    held = store.runs.get(second).budget_used
    assert not held.get("reserved"), held  # the call's hold was given back
    assert held.get("tool_calls", 0) == 0

    clock.advance(HOUR + retry.MAX_DELAY)
    Engine(store, worker_id="w2").run_until_idle()
    assert store.runs.get(second).status == RunStatus.COMPLETED
    assert len(gateway_skills.calls(tmp_path / "skills.jsonl")) == 2


class Crash(BaseException):
    """The worker dies right after its action was marked dispatched (before the call)."""


def _crash_after_dispatch(point: str, claim: Claim) -> None:
    if point == "action.dispatched":
        raise Crash(claim.run_id)


def test_a_call_that_finds_its_skills_cap_full_gives_its_place_back(
    store: Store, tmp_path: Path, clock: Clock
) -> None:
    # ``fragile`` lets one call be in flight, and now five an hour (one each 12 minutes)
    text = (DEFS / "skill_capacity.hcl").read_text(encoding="utf-8")
    fragile = '  adapter "python" {\n    entry_point = "tests.runtime.capacity_skills:fragile"'
    limit = '  rate_limit {\n    requests = 5\n    per      = "1h"\n  }\n'
    limited = text.replace(fragile, limit + fragile)
    assert limited != text
    (tmp_path / "capped.hcl").write_text(limited, encoding="utf-8")
    register(store, compile_files(tmp_path / "capped.hcl"))
    interval = HOUR / 5

    def start(n: int) -> str:
        created = service.create_objective(
            store, service.StartObjective("fragile_orders", {"n": n}), service.CLI
        )
        assert created.run is not None
        return created.run.id

    # a worker takes its place and its slot, and dies before the call: both stay spent
    first, second = start(1), start(2)
    with pytest.raises(Crash):
        Engine(store, worker_id="dead", hook=_crash_after_dispatch).step(first)
    assert store.rate_limits.due_in("skill:fragile") == pytest.approx(interval)

    # the next call takes a place, finds the cap full and waits for a slot, not sent: the
    # place is given back, so the limit does not count a call that never went
    Engine(store, worker_id="alive").step(second)
    waiting = store.runs.get(second)
    assert waiting.status == RunStatus.WAITING_FOR_CAPACITY
    assert _actions(store, second) == [(str(ActionStatus.ADMITTED), 0)]
    assert store.rate_limits.due_in("skill:fragile") == pytest.approx(interval)
