"""``plan_ask`` and ``start_ask`` on both backends: the agent's model, on a local chat server,
picks the workflow and its inputs; the confirmed plan starts an objective with the prompt as
its goal, and nothing starts otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.access import Forbidden, Grant
from openseal.runtime.service.asks import AskInputsInvalid, NoFittingWorkflow
from openseal.runtime.store import Store
from tests.asks.support import FITTING, PROMPT, factory, plan, procurement_documents, sent
from tests.runtime.providers.chat_server import ChatServer

ASK = service.Ask(PROMPT, agent="release_writer")


def test_a_picked_and_confirmed_plan_starts_the_prompt_as_an_objective(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    chat.reply(plan("release_note", FITTING))
    planned = service.plan_ask(store, ASK, service.CLI, factory(tmp_path))
    assert (planned.owner, planned.workflow, planned.inputs) == (
        "agent.release_writer", "release_note", FITTING,
    )  # fmt: skip
    assert planned.model_calls == 1
    assert service.list_objectives(store) == []  # planning starts nothing
    (request,) = chat.requests
    told = sent(request)
    assert PROMPT in told[-1]["content"]
    assert "release_note" in told[0]["content"]  # the workflows it may start, with their inputs

    created = service.start_ask(store, planned, service.CLI, "ask-1")
    assert created.created and created.run is not None
    assert created.objective.goal == PROMPT
    assert created.objective.workflow_name == "release_note"
    assert created.objective.inputs["release"]["version"] == "2.4"
    again = service.start_ask(store, planned, service.CLI, "ask-1")
    assert (again.created, again.objective.id) == (False, created.objective.id)


def test_inputs_that_do_not_fit_go_back_to_the_model_once(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    chat.reply(plan("release_note", {"release": {"version": "2.4"}}), plan("release_note", FITTING))
    planned = service.plan_ask(store, ASK, service.CLI, factory(tmp_path))
    assert planned.inputs == FITTING and planned.model_calls == 2
    repair = sent(chat.requests[1])[-1]["content"]
    assert "do not fit" in repair and "since" in repair


def test_inputs_that_still_do_not_fit_start_nothing(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    chat.reply(plan("release_note", {"release": {"version": 24}}))
    with pytest.raises(AskInputsInvalid, match="still do not fit"):
        service.plan_ask(store, ASK, service.CLI, factory(tmp_path))
    assert len(chat.requests) == 2


@pytest.mark.parametrize("picked", ["none", "procure_laptops"])
def test_a_prompt_that_fits_no_allowed_workflow_starts_nothing(
    store: Store, chat: ChatServer, tmp_path: Path, picked: str
) -> None:
    chat.reply(plan(picked, {}, "nothing here buys laptops"))
    ask = service.Ask("buy ten laptops", agent="release_writer")
    with pytest.raises(NoFittingWorkflow) as raised:
        service.plan_ask(store, ask, service.CLI, factory(tmp_path))
    assert raised.value.code == "no_fitting_workflow"
    assert "nothing was started" in str(raised.value)
    assert service.list_objectives(store) == []


def test_an_owner_with_no_workflow_is_answered_without_a_model_call(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    with pytest.raises(NoFittingWorkflow, match=r"team\.procurement may start"):
        service.plan_ask(store, service.Ask(PROMPT, team="procurement"), service.CLI)
    assert chat.requests == []


def test_a_team_plans_with_its_first_roles_model(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    service.register_documents(store, procurement_documents(tmp_path, chat), actor="user:test")
    order = {"request": {"item": "laptop", "quantity": 10, "budget": 12000}}
    chat.reply(plan("procure_laptops", order))
    ask = service.Ask("Ten laptops, 12000 at most", team="procurement")
    planned = service.plan_ask(store, ask, service.CLI, factory(tmp_path))
    assert (planned.owner, planned.workflow, planned.candidates) == (
        "team.procurement", "procure_laptops", ("procure_laptops",),
    )  # fmt: skip
    (request,) = chat.requests
    assert request.body["model"] == "planner-model-1"
    assert "release_note" not in sent(request)[0]["content"]  # the writer's, not the team's
    created = service.start_ask(store, planned, service.CLI)
    assert created.objective.workflow_name == "procure_laptops"
    assert created.objective.goal == "Ten laptops, 12000 at most"


def test_a_caller_without_the_scope_is_refused_before_the_model_is_asked(
    store: Store, chat: ChatServer, tmp_path: Path
) -> None:
    bob = service.Caller("user:bob", local=False, grant=Grant.of(["operator"], ["ops"]))
    ask = service.Ask(PROMPT, agent="release_writer", scope="default")
    with pytest.raises(Forbidden):
        service.plan_ask(store, ask, bob, factory(tmp_path))
    assert chat.requests == []
    chat.reply(plan("release_note", FITTING))
    planned = service.plan_ask(store, service.Ask(PROMPT, agent="release_writer"), service.CLI,
                               factory(tmp_path))  # fmt: skip
    with pytest.raises(Forbidden):
        service.start_ask(store, service.AskPlan(**{**planned.to_dict(), "scope": "default",
                                                   "candidates": ()}), bob)  # fmt: skip
    assert service.list_objectives(store) == []


def test_a_confirmation_of_a_workflow_the_owner_may_not_start_is_refused(store: Store) -> None:
    forged = service.AskPlan(PROMPT, "team.procurement", "release_note", FITTING, "")
    with pytest.raises(NoFittingWorkflow):
        service.start_ask(store, forged, service.CLI)
    assert service.list_objectives(store) == []


def test_naming_both_or_neither_owner_is_a_usage_error(store: Store) -> None:
    from openseal.errors import UsageError

    for ask in (service.Ask(PROMPT), service.Ask(PROMPT, team="t", agent="a")):
        with pytest.raises(UsageError, match="one of them"):
            service.plan_ask(store, ask, service.CLI)
