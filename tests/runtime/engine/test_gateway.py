"""The gateway's checks, on compiled documents (pinned versions as a run sees them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from openseal.compiler.lang.evaluate import evaluate
from openseal.runtime import service
from openseal.runtime.actions.skill_documents import skill_spec
from openseal.runtime.compiled import CompiledWorkflow
from openseal.runtime.engine.gateway import (
    GatewayDecision,
    SkillRequest,
    agent_max_risk,
    check_budget,
    check_call,
    check_run,
    risk,
)
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from tests.runtime.engine_support import PROCUREMENT, compile_files, register
from tests.runtime.gateway_support import Document, doctored, plain, tools_workflow

RESEARCHER = "team.procurement.role.researcher"
SEARCH = {"item": "laptop", "quantity": 10}


class Catalog:
    """Documents by digest, standing in for the store-backed catalog."""

    def __init__(self, documents: list[Document]) -> None:
        self.documents = {d.digest.removeprefix("sha256:"): d.document for d in documents}

    def document(self, digest: str) -> dict[str, Any]:
        return self.documents[digest.removeprefix("sha256:")]


def workflow(documents: list[Document], name: str | None = None) -> CompiledWorkflow:
    """The workflow ``name`` (or the only one, or ``tools``) of ``documents``."""
    found = [d for d in documents if d.kind == "workflow"]
    if len(found) > 1:
        found = [d for d in found if d.name == (name or "tools")]
    [only] = found
    return CompiledWorkflow(only.name, only.digest, only.document, Catalog(documents))


@pytest.fixture(scope="module")
def procurement() -> list[Document]:
    return [plain(d) for d in compile_files(PROCUREMENT)]


@pytest.fixture
def tools(tmp_path: Path) -> list[Document]:
    return tools_workflow(tmp_path)


def search(arguments: dict[str, Any] = SEARCH, *, actor: str = RESEARCHER) -> SkillRequest:
    return SkillRequest("search_vendors", arguments, actor, ("search_vendors",))


def test_a_granted_call_is_allowed_and_names_the_binding(procurement: list[Document]) -> None:
    decision = check_call(workflow(procurement), search())
    assert decision == GatewayDecision(True, None, "", "researcher_searches_vendors")


def test_a_grant_to_the_whole_team_does_not_cover_a_member(procurement: list[Document]) -> None:
    def to_the_team(document: dict[str, Any]) -> None:
        for grant in document["skills"]["search_vendors"]["grants"]:
            grant["grantee"] = "team.procurement"

    decision = check_call(
        workflow(doctored(procurement, "workflow.procure_laptops", to_the_team)), search()
    )
    assert (decision.allowed, decision.reason_code) == (False, "not_granted")
    assert decision.reason == f"skill `search_vendors` is not granted to `{RESEARCHER}`"


def test_a_grant_to_the_roles_agent_covers_the_role(procurement: list[Document]) -> None:
    def to_the_agent(document: dict[str, Any]) -> None:
        for grant in document["skills"]["search_vendors"]["grants"]:
            grant["grantee"] = "agent.researcher"

    assert check_call(
        workflow(doctored(procurement, "workflow.procure_laptops", to_the_agent)), search()
    ).allowed


def test_another_member_has_no_grant(procurement: list[Document]) -> None:
    decision = check_call(workflow(procurement), search(actor="team.procurement.role.buyer"))
    assert decision.reason_code == "not_granted"


def test_a_granted_skill_the_turn_does_not_list_is_not_allowed(procurement: list[Document]) -> None:
    request = SkillRequest("search_vendors", SEARCH, RESEARCHER, ())
    decision = check_call(workflow(procurement), request)
    assert decision.reason_code == "not_allowed"


def test_an_effect_skill_is_refused_from_a_tool_call_whatever_its_grant(
    procurement: list[Document],
) -> None:
    order = {
        "vendor": "northwind",
        "quantity": 10,
        "total": 11490,
        "currency": "EUR",
        "destination": "O4",
    }
    request = SkillRequest(
        "submit_purchase_order", order, "team.procurement.role.buyer", ("submit_purchase_order",)
    )
    decision = check_call(workflow(procurement), request)
    assert decision.reason_code == "effect_requires_proposal"
    assert decision.reason == (
        "`submit_purchase_order` has effect `external`; it runs only through a proposal and an "
        "approved action"
    )


def test_a_binding_risk_cap_below_the_effect_is_refused(tools: list[Document]) -> None:
    def cap(document: dict[str, Any]) -> None:
        document["skills"]["ship"]["grants"][0]["max_risk"] = "write"

    request = SkillRequest("ship", {"item": "x", "quantity": 1}, "agent.clerk", ("quote", "ship"))
    decision = check_call(workflow(doctored(tools, "workflow.tools", cap)), request)
    assert decision.reason_code == "above_binding_risk"
    assert (
        decision.reason
        == '`ship` has effect `external`, above `max_risk = "write"` of binding `clerk_ships`'
    )


def test_one_fitting_grant_is_enough(tools: list[Document]) -> None:
    def second_grant(document: dict[str, Any]) -> None:
        grants = document["skills"]["quote"]["grants"]
        grants.append({**grants[0], "granted_by": "clerk_quotes_bulk", "constraints": []})

    wf = workflow(doctored(tools, "workflow.tools", second_grant))
    bulk = SkillRequest("quote", {"item": "x", "quantity": 500}, "agent.clerk", ("quote",))
    small = SkillRequest("quote", {"item": "x", "quantity": 5}, "agent.clerk", ("quote",))
    assert check_call(wf, bulk).granted_by == "clerk_quotes_bulk"
    assert check_call(wf, small).granted_by == "clerk_quotes"
    assert check_call(workflow(tools), bulk).reason_code == "constraint_violated"


def test_a_constraint_that_cannot_be_evaluated_refuses(tools: list[Document]) -> None:
    def odd(document: dict[str, Any]) -> None:
        document["skills"]["quote"]["grants"][0]["constraints"] = [
            {"node": "binary", "op": "<=",
             "left": {"node": "ref", "root": "args", "path": ["item"]},
             "right": {"node": "literal", "value": 3}}
        ]  # fmt: skip

    request = SkillRequest("quote", {"item": "x", "quantity": 1}, "agent.clerk", ("quote",))
    decision = check_call(workflow(doctored(tools, "workflow.tools", odd)), request)
    assert decision.reason_code == "constraint_violated"
    assert "cannot be checked" in decision.reason


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"item": "laptop"}, "'quantity' is a required property"),
        ({"item": "laptop", "quantity": "10"}, "quantity: '10' is not of type 'number'"),
        ({"item": "laptop", "quantity": 10, "sku": "x"}, "Additional properties are not allowed"),
        ({"$malformed_arguments": "{item: laptop"}, "Additional properties are not allowed"),
    ],
)
def test_arguments_must_match_the_input_schema(
    procurement: list[Document], arguments: dict[str, Any], problem: str
) -> None:
    decision = check_call(workflow(procurement), search(arguments))
    assert decision.reason_code == "invalid_arguments"
    assert problem in decision.reason


def test_an_unknown_skill_is_refused(procurement: list[Document]) -> None:
    request = SkillRequest("rm_rf", {}, RESEARCHER, ("rm_rf",))
    assert check_call(workflow(procurement), request).reason_code == "unknown_skill"


def test_risk_ceilings_of_agents_and_roles(
    procurement: list[Document], tools: list[Document]
) -> None:
    assert agent_max_risk(workflow(procurement), RESEARCHER) == "read"
    assert agent_max_risk(workflow(procurement), "team.procurement.role.buyer") == "external"
    assert agent_max_risk(workflow(tools), "agent.clerk") == "external"
    assert agent_max_risk(workflow(procurement), "team.procurement") is None
    assert risk("read") < risk("write") < risk("external") < risk("destructive") < risk("mystery")


def test_budget_one_more_tool_call_must_fit() -> None:
    assert check_budget({"tool_calls": 2}, {"tool_calls": 1}).allowed
    refused = check_budget({"tool_calls": 2}, {"tool_calls": 2})
    assert (refused.reason_code, refused.reason) == (
        "budget_exhausted",
        "budget exhausted: tool_calls would reach 3 of 2",
    )
    assert check_budget({}, {"tool_calls": 99}).allowed


def test_only_a_running_run_in_the_proposing_state_may_call(store: Store, tmp_path: Path) -> None:
    register(store, tools_workflow(tmp_path))  # type: ignore[arg-type]
    run = service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run
    canceled = service.cancel_run(store, service.RunCommand(run.id, "test"), service.CLI).run
    decision = check_run(canceled, "ask")
    assert (decision.allowed, decision.reason_code) == (False, "run_not_running")
    assert "is canceled" in decision.reason
    running = dataclasses.replace(canceled, status=RunStatus.RUNNING, current_state="ask")
    assert check_run(running, "ask").allowed
    assert check_run(running, "check").reason_code == "run_not_running"
    paused = dataclasses.replace(running, status=RunStatus.PAUSED)
    assert check_run(paused, "ask").reason_code == "run_not_running"


def test_a_compiled_skill_reads_back_for_its_adapter(procurement: list[Document]) -> None:
    [document] = [
        d.document for d in procurement if d.kind == "skill" and d.name == "search_vendors"
    ]
    spec = skill_spec(document)
    assert (spec.effect, spec.credential, spec.timeout) == ("read", "procurement_api", 10.0)
    assert spec.adapter.http is not None and spec.adapter.http.method == "GET"
    scope = {"args": SEARCH, "config": {"procurement_url": "http://sim"}}
    assert evaluate(spec.adapter.http.url, scope) == "http://sim/vendors?item=laptop&quantity=10"
    [order] = [
        d.document for d in procurement if d.kind == "skill" and d.name == "submit_purchase_order"
    ]
    lookup = skill_spec(order).idempotency
    assert lookup is not None and lookup.lookup is not None and lookup.lookup.http is not None
