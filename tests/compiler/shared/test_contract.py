"""The compiled contract (:mod:`openseal.contract`) matches what ``emit`` writes.

Every compiled example validates against the committed schemas, whose objects are closed, so
a key ``emit`` writes that the contract does not declare fails here; and the contract's state
settings name exactly the fields of the definition model they are dumped from.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from openseal.compiler.definitions import specs
from openseal.compiler.pipeline import compile_paths
from openseal.contract import (
    STATE_SETTINGS,
    AdapterSettings,
    ApprovalPolicySettings,
    HttpSettings,
    IdempotencySettings,
    ProposalStepSettings,
    PythonSettings,
    RateLimitSettings,
    RetrySettings,
    RunbookSettings,
    SkillSettings,
    SpendSettings,
    WorkSettings,
)

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "schemas"
#: compiled examples: the shipped definitions and the runtime tests' fixtures
SOURCES = [
    ROOT / "definitions",
    ROOT / "tests" / "runtime" / "engine_defs" / "kinds.hcl",
    ROOT / "tests" / "runtime" / "engine_defs" / "pure.hcl",
    ROOT / "tests" / "runtime" / "revocation_defs" / "notes_v2.hcl",
]


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def validate(document: object, schema: str) -> None:
    _validator(schema).validate(document)


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    found = []
    for source in SOURCES:
        result = compile_paths([source])
        assert result.ok, [(d.code, d.message) for d in result.diagnostics]
        found.extend(doc.document for doc in result.documents.values())
    for path in sorted((ROOT / "tests" / "golden" / "compiled").rglob("*.json")):
        found.append(json.loads(path.read_text(encoding="utf-8")))
    return found


@pytest.fixture(scope="module")
def workflows(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in documents if d["kind"] == "workflow"]


def test_every_compiled_example_validates(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        validate(document, f"compiled-{document['kind']}.schema.json")


def test_the_examples_use_every_state_kind(workflows: list[dict[str, Any]]) -> None:
    kinds = {s["kind"] for w in workflows for s in w["graph"]["states"].values()}
    assert kinds == set(STATE_SETTINGS)


def test_every_graph_validates_on_its_own(workflows: list[dict[str, Any]]) -> None:
    for workflow in workflows:
        validate(workflow["graph"], "compiled-graph.schema.json")


def _a_state(workflows: list[dict[str, Any]], kind: str) -> tuple[dict[str, Any], str]:
    for workflow in workflows:
        for name, state in workflow["graph"]["states"].items():
            if state["kind"] == kind:
                return copy.deepcopy(workflow), name
    raise AssertionError(f"no example of a {kind} state")


@pytest.mark.parametrize("kind", sorted(STATE_SETTINGS))
def test_a_key_the_contract_does_not_declare_is_refused(
    workflows: list[dict[str, Any]], kind: str
) -> None:
    workflow, name = _a_state(workflows, kind)
    config = workflow["graph"]["states"][name]["config"]
    if kind == "proposal":  # settings by proposal name: the step is what is closed
        config = next(iter(config.values()))
    config["undeclared"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate(workflow, "compiled-workflow.schema.json")


@pytest.mark.parametrize(
    ("kind", "other"), [("turn", "approval"), ("approval", "action"), ("end", "decision")]
)
def test_settings_of_another_kind_are_refused(
    workflows: list[dict[str, Any]], kind: str, other: str
) -> None:
    workflow, name = _a_state(workflows, kind)
    workflow["graph"]["states"][name]["kind"] = other
    with pytest.raises(jsonschema.ValidationError):
        validate(workflow["graph"], "compiled-graph.schema.json")


def _keys(shape: Any) -> set[str]:
    return set(shape.__required_keys__) | set(shape.__optional_keys__)


#: each settings shape of the contract → the definition model ``emit`` dumps into it
DUMPED_FROM: dict[Any, type[BaseModel]] = {
    STATE_SETTINGS["turn"]: specs.Turn,
    STATE_SETTINGS["action"]: specs.Action,
    STATE_SETTINGS["approval"]: specs.Approval,
    STATE_SETTINGS["decision"]: specs.Decision,
    STATE_SETTINGS["transform"]: specs.Transform,
    STATE_SETTINGS["wait"]: specs.Wait,
    STATE_SETTINGS["delegate"]: specs.Delegate,
    STATE_SETTINGS["parallel"]: specs.Parallel,
    STATE_SETTINGS["for_each"]: specs.ForEach,
    ProposalStepSettings: specs.ProposalStep,
    SpendSettings: specs.Spend,
    WorkSettings: specs.BranchWork,
    SkillSettings: specs.SkillSpec,
    AdapterSettings: specs.Adapter,
    HttpSettings: specs.HttpAdapter,
    PythonSettings: specs.PythonAdapter,
    RunbookSettings: specs.RunbookAdapter,
    RetrySettings: specs.Retry,
    RateLimitSettings: specs.RateLimit,
    IdempotencySettings: specs.Idempotency,
    ApprovalPolicySettings: specs.ApprovalPolicy,
}


@pytest.mark.parametrize("shape", list(DUMPED_FROM), ids=lambda s: s.__name__)
def test_settings_name_exactly_the_fields_of_the_definition_model(shape: Any) -> None:
    """A field added to a state's definition model is written by ``emit``: the contract
    (and so the runtime's view of it) must declare it too."""
    assert _keys(shape) == set(DUMPED_FROM[shape].model_fields)


def test_every_state_kind_has_settings() -> None:
    assert set(STATE_SETTINGS) == {*specs.STATE_KINDS, "end"}


def test_every_compiled_skill_has_the_contract_s_shape(documents: list[dict[str, Any]]) -> None:
    """What ``emit`` writes for a skill is what the runtime reads as ``SkillSettings``."""
    skills = [d["spec"] for d in documents if d["kind"] == "skill"]
    adapters = [s["adapter"] for s in skills] + [
        s["idempotency"]["lookup"] for s in skills if (s["idempotency"] or {}).get("lookup")
    ]
    assert {"http", "python"} <= {kind for a in adapters for kind, v in a.items() if v}
    for spec in skills:
        # absent when not declared
        assert set(spec) | {"rate_limit", "concurrency"} == _keys(SkillSettings)
        assert set(spec["retry"]) == _keys(RetrySettings)
        if spec["idempotency"] is not None:
            # ``window`` is written only where a skill declares one
            assert set(spec["idempotency"]) | {"window"} == _keys(IdempotencySettings)
    for adapter in adapters:
        assert set(adapter) == _keys(AdapterSettings)
        if adapter["http"] is not None:
            assert set(adapter["http"]) == _keys(HttpSettings)
        if adapter["python"] is not None:
            assert set(adapter["python"]) == _keys(PythonSettings)
