"""Lost replies at the model endpoint, through the engine, on SQLite and PostgreSQL.

A local chat-completions server (real sockets, the official client) loses replies the ways a
real endpoint does: the connection dropped after the request was read, a ``502``, an answer
that never comes within the timeout, a stream cut in the middle of a tool call, a storm of
``429``. Each time the turn is retried within the run's budgets, the attempt that may have
been paid for is counted, nothing is recorded twice, and the run goes on or sleeps — it never
needs attention for a passing fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from openseal.observability import metrics
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import retry
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime import gateway_skills
from tests.runtime.engine_support import assert_conforms, compile_files, event_types, register
from tests.runtime.gateway_support import DEFS, activities
from tests.runtime.providers.chat_server import ChatServer, Reply, completion, stream_chunks
from tests.runtime.support import Backend

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

QUOTE = {"id": "call_q", "name": "quote", "arguments": '{"item": "laptop", "quantity": 10}'}
#: the three answers of a run of the ``tools`` workflow: a tool call, the output, the check
ANSWERS = (
    Reply.ok(completion(tool_calls=[QUOTE])),
    Reply.ok(completion('{"unit_price": 1149}')),
    Reply.ok(completion('{"ok": true}')),
)
#: tokens the scripted answers report (10 in, 5 out each)
TOKENS = 15


class Clock:
    """The store's clock, moved by the test: waits are checked exactly, without sleeping."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(backend: Backend, clock: Clock) -> Store:
    store = backend.open()
    store.clock = clock
    return store


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Backoff steps of milliseconds, so retries inside a turn do not slow the suite."""
    monkeypatch.setattr(retry, "BASE_DELAY", 0.01)
    monkeypatch.setenv(gateway_skills.LOG_ENV, str(tmp_path / "skills.jsonl"))


def deploy(
    store: Store,
    tmp: Path,
    server: ChatServer,
    *,
    model_calls: int = 20,
    price: str = "",
    **parameters: Any,
) -> str:
    """The gateway tests' ``tools`` workflow with its model served by ``server`` (and
    ``price``, a ``price { ... }`` block, in its model profile)."""
    text = (DEFS / "tools.hcl.in").read_text(encoding="utf-8").replace("TOOL_CALLS", "5")
    text = text.replace("model_calls = 20", f"model_calls = {model_calls}")
    settings = {"timeout": 5, **parameters}
    body = ", ".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    text = text.replace(
        'provider = "scripted"\n  model    = "test-model"',
        f'provider   = "openai"\n  base_url   = "{server.base_url}"\n'
        f'  model      = "qwen2.5"\n  parameters = {{ {body} }}\n{price}',
    )
    folder = tmp / "defs"
    folder.mkdir(exist_ok=True)
    (folder / "tools.hcl").write_text(text, encoding="utf-8")
    register(store, compile_files(folder / "tools.hcl"))
    return service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run.id


def work(store: Store) -> None:
    Engine(store, worker_id="w").run_until_idle()


def failures(store: Store, run_id: str) -> list[dict[str, Any]]:
    return [e.payload for e in store.runs.events(run_id, 0, 10_000) if e.type == "activity.failed"]


def assert_recorded_once(store: Store, run_id: str) -> None:
    recorded = [
        e.payload["activity_id"]
        for e in store.runs.events(run_id, 0, 10_000)
        if e.type == "activity.recorded"
    ]
    assert len(recorded) == len(set(recorded))
    assert sorted(recorded) == sorted(activities(store, run_id))


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (Reply.dropped(), "reply_lost"),
        (Reply.status(502, "bad gateway"), "model_unavailable"),
        (Reply(200, b"{}", {"Content-Type": "application/json"}, delay=30), "model_timeout"),
    ],
    ids=["dropped", "502", "hang"],
)
def test_a_reply_lost_after_the_request_was_sent_is_retried_and_its_cost_counted(
    timed: Store, tmp_path: Path, server: ChatServer, fault: Reply, code: str
) -> None:
    run_id = deploy(timed, tmp_path, server, timeout=1)
    server.reply(fault, *ANSWERS)
    work(timed)

    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    assert len(server.requests) == 4  # the lost attempt, then the three answers
    assert server.requests[0].body == server.requests[1].body  # the same call, again
    assert_recorded_once(timed, run_id)
    assert len(gateway_skills.calls(tmp_path / "skills.jsonl")) == 1
    [failed] = failures(timed, run_id)
    assert failed["activity_id"] == "ask:1:model:1"
    assert failed["code"] == code
    # the endpoint may have billed the lost attempt: it is one more model call, and its
    # tokens are estimated (its prompt; no output arrived)
    lost_tokens = failed["spent"]["tokens"]
    assert failed["spent"]["model_calls"] == 1 and lost_tokens > 0 and failed["estimated"]
    assert run.budget_used == {
        "turns": 2,
        "model_calls": 4,
        "tool_calls": 1,
        "tokens": 3 * TOKENS + lost_tokens,
    }
    assert "run.needs_attention" not in event_types(timed, run_id)


def test_a_stream_cut_mid_tool_call_is_retried_and_the_partial_call_never_recorded(
    timed: Store, tmp_path: Path, server: ChatServer
) -> None:
    run_id = deploy(timed, tmp_path, server, stream=True)
    whole = stream_chunks(tool_calls=[QUOTE], piece=6)
    cut = Reply.stream(whole, cut_after=4)  # the arguments stop after `{"item": "la`
    server.reply(
        cut,
        Reply.stream(whole),
        Reply.stream(stream_chunks('{"unit_price": 1149}')),
        Reply.stream(stream_chunks('{"ok": true}')),
    )
    work(timed)

    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    assert all(r.body["stream"] is True for r in server.requests)
    assert len(server.requests) == 4
    recorded = activities(timed, run_id)["ask:1:model:1"]
    assert recorded["tool_calls"] == [
        {"id": "call_q", "name": "quote", "arguments": {"item": "laptop", "quantity": 10}}
    ]
    skills = gateway_skills.calls(tmp_path / "skills.jsonl")
    assert skills == [{"skill": "quote", "arguments": {"item": "laptop", "quantity": 10}}]
    assert_recorded_once(timed, run_id)
    [failed] = failures(timed, run_id)
    assert failed["code"] == "stream_interrupted" and failed["estimated"]
    assert failed["spent"]["model_calls"] == 1
    assert run.budget_used["model_calls"] == 4
    assert run.budget_used["tokens"] == 3 * TOKENS + failed["spent"]["tokens"]


def test_a_429_storm_sleeps_the_run_as_long_as_retry_after_asks_and_costs_no_model_call(
    timed: Store, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    run_id = deploy(timed, tmp_path, server)
    limited = Reply.status(429, "slow down", headers={"Retry-After": "120"})
    server.reply(limited, limited, limited, *ANSWERS)
    started = clock.now
    work(timed)

    sleeping = assert_conforms(timed.runs.get(run_id))
    assert sleeping.status == RunStatus.SLEEPING
    assert sleeping.lease_owner is None
    assert sleeping.wake_at == started + timedelta(seconds=120)
    assert sleeping.waiting is not None
    assert sleeping.waiting["kind"] == "retry" and sleeping.waiting["code"] == "rate_limited"
    assert sleeping.waiting["retries"] == 1 and "429" in sleeping.waiting["fault"]
    assert sleeping.budget_used == {"turns": 1}  # a refused request costs no model call
    assert len(server.requests) == 1  # a long Retry-After is not waited for inside the turn

    clock.advance(119)
    work(timed)
    assert len(server.requests) == 1  # not before the endpoint said

    for attempt in (2, 3):
        clock.advance(1)  # due now: the storm goes on
        work(timed)
        again = timed.runs.get(run_id)
        assert again.status == RunStatus.SLEEPING and again.waiting is not None
        assert again.waiting["retries"] == attempt
        clock.advance(119)

    clock.advance(1)
    work(timed)
    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    assert len(server.requests) == 6
    assert run.budget_used == {"turns": 2, "model_calls": 3, "tool_calls": 1, "tokens": 45}
    assert [f["spent"] for f in failures(timed, run_id)] == [{}, {}, {}]
    assert "run.needs_attention" not in event_types(timed, run_id)
    assert_recorded_once(timed, run_id)


def test_short_waits_are_spent_inside_the_turn_honouring_retry_after(
    timed: Store, tmp_path: Path, server: ChatServer
) -> None:
    run_id = deploy(timed, tmp_path, server, max_retries=2)
    limited = Reply.status(429, "slow down", headers={"retry-after-ms": "20"})
    server.reply(limited, Reply.status(503, "overloaded"), *ANSWERS)
    work(timed)

    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    assert "turn.retry_scheduled" not in event_types(timed, run_id)  # never slept
    assert [f["code"] for f in failures(timed, run_id)] == ["rate_limited", "model_unavailable"]
    assert run.budget_used["model_calls"] == 3  # neither refusal was a model call


def test_lost_replies_are_retried_only_within_the_model_calls_budget(
    timed: Store, tmp_path: Path, server: ChatServer, clock: Clock
) -> None:
    run_id = deploy(timed, tmp_path, server, model_calls=3, max_retries=1)
    server.reply(Reply.status(502, "bad gateway"))  # for ever
    work(timed)
    sleeping = timed.runs.get(run_id)
    assert sleeping.status == RunStatus.SLEEPING  # two attempts, then a wait: no attention
    assert sleeping.budget_used["model_calls"] == 2

    clock.advance(retry.MAX_DELAY)
    work(timed)
    stopped = timed.runs.get(run_id)
    assert len(server.requests) == 3  # the third attempt used the last model call
    assert stopped.status == RunStatus.NEEDS_ATTENTION
    assert stopped.waiting is not None
    assert stopped.waiting["reason"] == "budget exhausted: model_calls would reach 4 of 3"
    assert stopped.budget_used["model_calls"] == 3
    assert "in_flight" not in stopped.budget_used
    assert activities(timed, run_id) == {}  # nothing was answered, nothing recorded


# -- what calls cost -------------------------------------------------------------------

PRICE = """
  price {
    currency           = "EUR"
    input_per_million  = 2.5
    output_per_million = 10
  }
"""


def test_a_priced_profile_counts_what_every_call_cost_lost_attempts_included(
    timed: Store, tmp_path: Path, server: ChatServer
) -> None:
    cost_before = _metric_cost("EUR")
    run_id = deploy(timed, tmp_path, server, timeout=1, price=PRICE)
    server.reply(Reply.dropped(), *ANSWERS)
    work(timed)

    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    [failed] = failures(timed, run_id)
    lost_tokens = failed["spent"]["tokens"]
    # per answer 10 input tokens at 2.5 and 5 output tokens at 10 (per million): 75 millionths;
    # the lost attempt's estimated prompt at the input price
    lost = round(lost_tokens * 2.5)
    assert failed["spent"]["model_cost_micros.EUR"] == lost
    assert run.budget_used["model_cost_micros.EUR"] == 3 * 75 + lost
    view = service.show_run(timed, run_id)
    assert view.model_cost == {"EUR": (3 * 75 + lost) / 1_000_000}
    # /metrics counts the calls that were made, the lost one included
    assert _metric_cost("EUR") - cost_before == pytest.approx((3 * 75 + lost) / 1_000_000)


def test_a_profile_without_prices_counts_no_cost(
    timed: Store, tmp_path: Path, server: ChatServer
) -> None:
    run_id = deploy(timed, tmp_path, server)
    server.reply(*ANSWERS)
    work(timed)

    run = timed.runs.get(run_id)
    assert run.status == RunStatus.COMPLETED, run.waiting
    assert not [key for key in run.budget_used if key.startswith("model_cost")]
    assert service.show_run(timed, run_id).model_cost == {}


def _metric_cost(currency: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "openseal_model_cost_total",
        {"model": "qwen2.5", "team": "", "workflow": "tools", "currency": currency},
    )
    return value or 0.0
