"""Budget reservations: reserve before a call, settle or release after, and close what a lost
claim left open (pure functions, then through the engine on SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime import service
from openseal.runtime.engine import budgets
from openseal.runtime.providers import ModelRequest, ModelResponse, ScriptedProvider
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine_support import engine, event_types, register, small_workflow

LIMITS = {"model_calls": 2, "tokens": 100}


def test_a_reservation_counts_at_once_and_settles_to_what_was_spent() -> None:
    used = budgets.reserve({"turns": 1}, "a:1:model:1", {"model_calls": 1}, epoch=3)
    assert used["model_calls"] == 1
    assert budgets.held(used, "a:1:model:1") == {"model_calls": 1}
    # a second reservation sees the first: the budget's last call goes to one of them
    used = budgets.reserve(used, "a:1:model:2", {"model_calls": 1}, epoch=3)
    assert budgets.refusal(LIMITS, used, {"model_calls": 1}) == (
        "budget exhausted: model_calls would reach 3 of 2"
    )
    used = budgets.settle(used, "a:1:model:1", {"model_calls": 1, "tokens": 40})
    used = budgets.settle(used, "a:1:model:2", {})  # released: the call did not happen
    assert used == {"turns": 1, "model_calls": 1, "tokens": 40}


def test_a_spent_token_budget_refuses_the_next_call_even_though_it_costs_no_tokens() -> None:
    used = {"model_calls": 1, "tokens": 130}
    assert budgets.exceeded(LIMITS, used, {"model_calls": 1}) is None
    assert budgets.refusal(LIMITS, used, {"model_calls": 1}) == (
        "budget exhausted: tokens used 130 of 100"
    )


def test_only_holds_of_earlier_claims_are_abandoned() -> None:
    used = budgets.reserve({}, "old", {"model_calls": 1}, epoch=1)
    used = budgets.reserve(used, "mine", {"model_calls": 1}, epoch=2)
    assert budgets.abandoned(used, 2) == ["old"]
    assert budgets.abandoned(used, 3) == ["mine", "old"]


class Broken:
    """A model whose first call fails with a bug (not a model error): the outcome of that
    call is unknown to the engine, so its reservation stays open."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.failed = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        if not self.failed:
            self.failed = True
            raise RuntimeError("provider bug")
        return self.inner.complete(request)


def test_a_reservation_left_open_is_counted_and_closed_by_the_next_claim(
    store: Store, tmp_path: Path
) -> None:
    register(store, small_workflow(tmp_path, model_calls=10))
    scripted = ScriptedProvider({"ask": [{"output": {"pick": 8}, "usage": {"input_tokens": 7}}]})
    run = service.create_objective(
        store, service.StartObjective("small", {"n": 5}), service.CLI
    ).run
    worker = engine(store, Broken(scripted))  # type: ignore[arg-type]
    worker.run_until_idle()

    stuck = store.runs.get(run.id)
    assert stuck.status == RunStatus.NEEDS_ATTENTION
    assert stuck.budget_used["model_calls"] == 1  # the call may have been made
    assert budgets.held(stuck.budget_used, "ask:1:model:1") == {"model_calls": 1}

    service.intervene(store, service.Intervention(run.id, "provider fixed, retry"), service.CLI)
    worker.run_until_idle()

    done = store.runs.get(run.id)
    assert done.status == RunStatus.WAITING_FOR_EVENT
    lost = [e.payload for e in store.runs.events(run.id, 0, 10_000) if e.type == "activity.lost"]
    assert lost == [{"activity_id": "ask:1:model:1", "spent": {"model_calls": 1}}]
    assert "in_flight" not in done.budget_used
    assert done.budget_used["model_calls"] == 2
    assert done.budget_used["tokens"] == 7
    assert event_types(store, run.id).count("budget.reserved") == 2
