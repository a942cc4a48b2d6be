"""A model profile's shared rate limit and an endpoint's ``429``, through the engine, on
SQLite and PostgreSQL: a local chat-completions server answers; two stores stand for two
worker processes sharing one database. (Real worker processes: ``test_rate_limit_workers``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import retry
from openseal.runtime.providers.base import ModelRequest, ModelResponse
from openseal.runtime.providers.openai_provider import (
    OpenAIProvider,
    reset_seconds,
    used_up_for,
)
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime import gateway_skills
from tests.runtime.providers import test_lost_replies as lost_replies
from tests.runtime.providers.chat_server import ChatServer, Reply
from tests.runtime.providers.test_lost_replies import ANSWERS, Clock, deploy
from tests.runtime.support import Backend

pytestmark = pytest.mark.slow_on_postgresql

KEY = "model:scripted"  # the profile of the gateway tests' ``tools`` workflow


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "BASE_DELAY", 0.01)


def _two(backend: Backend, clock: Clock) -> tuple[Store, Store]:
    one, other = backend.open(), backend.open()
    one.clock = other.clock = clock
    return one, other


def _start(store: Store) -> str:
    return service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run.id


def test_a_429_holds_back_every_worker_for_the_endpoint(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    one, other = _two(backend, clock)
    first = deploy(one, tmp_path, server)
    server.reply(Reply.status(429, "slow down", headers={"Retry-After": "120"}), *ANSWERS)
    Engine(one, worker_id="one").run_until_idle()
    assert len(server.requests) == 1
    assert one.runs.get(first).status == RunStatus.SLEEPING

    # Another worker's run, due at once, sends nothing before the endpoint's wait is over.
    clock.advance(60)
    second = _start(other)
    assert other.rate_limits.held_back(KEY) == 60.0
    Engine(other, worker_id="other").step()
    assert len(server.requests) == 1
    held = other.runs.get(second)
    assert held.status == RunStatus.SLEEPING and held.waiting is not None
    assert held.waiting["code"] == "over_rate_limit"
    assert held.wake_at is not None and held.wake_at >= clock.now + timedelta(seconds=60)
    assert held.budget_used == {"turns": 1}  # nothing was sent: no model call spent


def test_an_endpoint_that_says_it_has_no_room_left_holds_back_every_worker(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    one, other = _two(backend, clock)
    deploy(one, tmp_path, server)
    used_up = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30s"}
    first, *rest = ANSWERS
    server.reply(Reply(first.code, first.body, {**first.headers, **used_up}), *rest)
    Engine(one, worker_id="one").step()
    assert len(server.requests) == 1
    assert other.rate_limits.held_back(KEY) == 90.0


def test_a_declared_limit_sleeps_the_run_that_would_wait_longer_than_a_turn(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    one, _ = _two(backend, clock)
    limit = '  rate_limit {\n    requests = 2\n    per      = "1m"\n  }\n'
    run_id = deploy(one, tmp_path, server, price=limit)
    server.reply(*ANSWERS)
    Engine(one, worker_id="one").run_until_idle()
    # two calls at once (the burst), the third 30 s later: the run sleeps, holding no lease
    assert len(server.requests) == 2
    run = one.runs.get(run_id)
    assert run.status == RunStatus.SLEEPING and run.lease_owner is None
    assert run.waiting is not None and run.waiting["code"] == "over_rate_limit"
    assert run.wake_at is not None and run.wake_at >= clock.now + timedelta(seconds=30)
    clock.advance(30 + retry.MAX_DELAY)
    Engine(one, worker_id="one").run_until_idle()
    assert one.runs.get(run_id).status == RunStatus.COMPLETED
    assert len(server.requests) == 3


def test_a_token_limit_takes_the_estimate_and_keeps_what_the_endpoint_reported(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    one, _ = _two(backend, clock)
    limit = '  rate_limit {\n    tokens = 100000\n    per    = "1m"\n  }\n'
    run_id = deploy(one, tmp_path, server, price=limit)
    server.reply(*ANSWERS)
    Engine(one, worker_id="one").run_until_idle()
    assert one.runs.get(run_id).status == RunStatus.COMPLETED
    # three calls of 15 reported tokens each: 45 tokens of 100,000 a minute are used, so the
    # bucket is 45 tokens' time (0.027 s) ahead of the clock
    ahead = one.rate_limits.due_in(f"{KEY}:tokens")
    assert ahead == pytest.approx(45 * 60 / 100_000, abs=1e-5)  # epoch seconds as doubles


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("17", 17.0)],
)
def test_reset_headers_are_read_in_seconds(value: str, seconds: float) -> None:
    assert reset_seconds(value) == pytest.approx(seconds)


def test_only_a_used_up_limit_holds_back() -> None:
    assert used_up_for({"x-ratelimit-remaining-requests": "3"}) is None
    both = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "2s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "7s",
    }
    assert used_up_for(both) == 7.0
    assert used_up_for({"x-ratelimit-remaining-tokens": "0"}) == 1.0  # no reset given
    assert reset_seconds("soon") is None


def test_a_skill_call_takes_its_turn_in_the_skill_s_shared_limit(
    backend: Backend,
    tmp_path: Path,
    server: ChatServer,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, other = _two(backend, clock)
    text = (lost_replies.DEFS / "tools.hcl.in").read_text(encoding="utf-8")
    limited = text.replace(
        '    entry_point = "tests.runtime.gateway_skills:quote"\n  }\n',
        '    entry_point = "tests.runtime.gateway_skills:quote"\n  }\n'
        '  rate_limit {\n    requests = 1\n    per      = "1h"\n  }\n',
    )
    assert limited != text
    (tmp_path / "defs_in").mkdir()
    (tmp_path / "defs_in" / "tools.hcl.in").write_text(limited, encoding="utf-8")
    monkeypatch.setattr(lost_replies, "DEFS", tmp_path / "defs_in")
    monkeypatch.setenv(gateway_skills.LOG_ENV, str(tmp_path / "skills.jsonl"))
    run_id = deploy(one, tmp_path, server)
    server.reply(*ANSWERS)
    assert other.rate_limits.due_in("skill:quote") == 0.0
    Engine(one, worker_id="one").run_until_idle()
    assert one.runs.get(run_id).status == RunStatus.COMPLETED
    assert len(gateway_skills.calls(tmp_path / "skills.jsonl")) == 1
    # the one call took the hour's one request: every worker's next call waits an hour
    assert other.rate_limits.due_in("skill:quote") == 3600.0


@pytest.mark.parametrize("batch_size", [1, None])
def test_a_call_takes_its_place_with_its_reservation_where_the_store_allows(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock,
    monkeypatch: pytest.MonkeyPatch, batch_size: int | None,
) -> None:  # fmt: skip
    one, _ = _two(backend, clock)
    limit = '  rate_limit {\n    requests = 100\n    per      = "1m"\n  }\n'
    run_id = deploy(one, tmp_path, server, price=limit)
    server.reply(*ANSWERS)
    database = one.rate_limits._store
    alone = database.write_alone
    transactions: list[str] = []

    def counted() -> Any:
        transactions.append("alone")
        return alone()

    monkeypatch.setattr(database, "write_alone", counted)
    Engine(one, worker_id="one", batch_size=batch_size).run_until_idle()
    assert one.runs.get(run_id).status == RunStatus.COMPLETED
    # three calls took three places (0.6 s each) — in the transactions that reserved the
    # calls, but on PostgreSQL in a batch of group commit (its default), where each is a
    # short transaction of its own
    assert one.rate_limits.due_in(KEY) == pytest.approx(3 * 0.6, abs=1e-5)
    batched = backend.name == "postgresql" and batch_size is None
    assert len(transactions) == (3 if batched else 0)


class Crash(BaseException):
    """The worker dies after the call's place is taken, before the call is sent."""


def test_a_worker_that_dies_before_sending_has_spent_its_place(
    backend: Backend, tmp_path: Path, server: ChatServer, clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    one, other = _two(backend, clock)
    limit = '  rate_limit {\n    requests = 2\n    per      = "1h"\n  }\n'
    run_id = deploy(one, tmp_path, server, price=limit)
    server.reply(*ANSWERS)
    send = OpenAIProvider.complete

    def dies(self: OpenAIProvider, request: ModelRequest) -> ModelResponse:
        raise Crash(request.agent)

    monkeypatch.setattr(OpenAIProvider, "complete", dies)
    dead = Engine(one, worker_id="dead")
    with pytest.raises(Crash):
        dead.step(run_id)
    assert server.requests == []
    # the place (one of two an hour, 30 minutes of the clock) is spent with the call's
    # reservation: the limit errs towards sending less, never more
    assert other.rate_limits.due_in(KEY) == pytest.approx(1800, abs=1e-5)
    assert other.runs.get(run_id).budget_used["model_calls"] == 1  # held for the call

    monkeypatch.setattr(OpenAIProvider, "complete", send)
    clock.advance(dead.lease_seconds + 1)
    Engine(other, worker_id="other").run_until_idle()
    # the takeover counts the dead worker's call as spent, takes a new place and sends it;
    # the next call would wait half an hour: the run sleeps
    assert len(server.requests) == 1
    run = other.runs.get(run_id)
    assert run.status == RunStatus.SLEEPING
    assert run.waiting is not None and run.waiting["code"] == "over_rate_limit"
    assert run.budget_used["model_calls"] == 2
