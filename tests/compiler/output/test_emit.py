"""Emit: golden compiled documents for every example, graphs, grants, runbook levels.

Regenerate the golden files after an intended change with::

    OPENSEAL_UPDATE_GOLDEN=1 .venv/bin/pytest tests/compiler/output/test_emit.py

(or ``make golden``) and review the diff before committing.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import networkx as nx
import pytest

from openseal.canonical import canonical_bytes, pretty, sha256_digest
from openseal.compiler.analysis.build import build
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.load import load_definitions
from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.output.emit import API_VERSION, _dependency_order, emit
from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import (
    AGENT,
    BINDING,
    MODEL,
    SKILL,
    compile_texts,
    write_project,
)
from tests.golden_helper import GOLDEN, assert_golden

EXAMPLES = Path(__file__).resolve().parents[3] / "definitions"
CASES = [
    (example, syntax)
    for example in sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    for syntax in ("hcl", "yaml")
    if (EXAMPLES / example / syntax).is_dir()
]


@pytest.mark.parametrize(("example", "syntax"), CASES)
def test_golden_compiled_documents(example: str, syntax: str) -> None:
    result = compile_paths([EXAMPLES / example / syntax])
    assert result.ok, [d.message for d in result.diagnostics]
    for key, doc in sorted(result.documents.items()):
        # Both syntaxes compare against one file: twins must compile identically.
        assert_golden(pretty(doc.document), f"compiled/{example}/{key}.json")
    expected = {p.stem for p in (GOLDEN / "compiled" / example).glob("*.json")}
    assert set(result.documents) == expected, "stale or missing golden files"


def test_every_example_is_covered() -> None:
    assert {example for example, _ in CASES} >= {"procurement", "release_note"}


def test_document_frame_and_digest() -> None:
    result = compile_paths([EXAMPLES / "release_note" / "hcl"])
    for key, doc in result.documents.items():
        assert doc.key == key
        assert doc.document["apiVersion"] == API_VERSION
        assert (doc.document["kind"], doc.document["name"]) == (doc.kind, doc.name)
        assert doc.canonical == canonical_bytes(doc.document)
        assert doc.digest == sha256_digest(doc.canonical)
        text = doc.canonical.decode()
        assert '"line"' not in text and ".hcl" not in text  # no spans, no file paths


def test_workflow_graph_skills_and_dependencies() -> None:
    result = compile_paths([EXAMPLES / "procurement" / "hcl"])
    workflow = result.documents["workflow.procure_laptops"].document
    graph = workflow["graph"]
    assert graph["initial"] == "research"
    assert graph["ends"] == {"done": "completed", "over_budget": "failed", "rejected": "canceled"}
    branch = [t for t in graph["transitions"] if t["from"] == "check_budget"]
    assert [(t["order"], t["to"], t["guard"] is None) for t in branch] == [
        (0, "draft", False),
        (1, "over_budget", True),
    ]
    assert branch[0]["guard"]["node"] == "binary"
    review = {t["event"]: t["to"] for t in graph["transitions"] if t["from"] == "review"}
    assert review == {
        "approved": "submit",
        "rejected": "rejected",
        "changes_requested": "research",
        "expired": "rejected",
    }
    assert graph["states"]["review"]["config"]["expires_in"] == 72 * 3600
    skills = workflow["skills"]
    assert skills["submit_purchase_order"]["grants"][0]["granted_by"] == "buyer_submits_orders"
    assert skills["submit_purchase_order"]["grants"][0]["grantee"] == "team.procurement.role.buyer"
    assert skills["search_vendors"]["effect"] == "read"
    deps = workflow["dependencies"]
    for key in ("team.procurement", "skill.search_vendors", "binding.buyer_submits_orders"):
        assert deps[key] == result.documents[key].digest
    assert skills["search_vendors"]["digest"] == result.documents["skill.search_vendors"].digest
    assert workflow["inputs"]["required"] == ["request"]
    assert workflow["inputs"]["properties"]["request"]["type"] == "object"
    assert workflow["outputs"]["properties"]["order_id"] == {"type": "string"}
    assert workflow["budgets"]["workflow"]["turns"] == 10
    assert workflow["budgets"]["owner"]["spend"] == 250000
    assert workflow["budgets"]["owner"]["period"] == 30 * 86400


def test_agent_instructions_from_a_file_are_in_the_document() -> None:
    result = compile_paths([EXAMPLES / "procurement" / "yaml"])
    prompt = (EXAMPLES / "procurement" / "prompts" / "researcher.md").read_text(encoding="utf-8")
    assert result.documents["agent.researcher"].document["spec"]["instructions"] == prompt


RUNBOOK = """runbook "rb" {
  input "q" {
    type = string
  }
  output "answer" {
    value = step.b.output
  }
  step "a" {
    skill = skill.lookup
    args  = { q = input.q }
  }
  step "b" {
    uses = "transform"
    args = { x = step.a.output.answer }
  }
  step "c" {
    uses = "set"
    args = { y = input.q }
  }
  step "d" {
    uses       = "merge"
    depends_on = [step.b, step.c]
  }
}
"""


def test_runbook_graph_has_edges_and_parallel_levels(tmp_path: Path) -> None:
    result = compile_texts(tmp_path, {"all.hcl": "\n".join([MODEL, SKILL, RUNBOOK])})
    document = result.documents["runbook.rb"].document
    graph = document["graph"]
    assert graph["edges"] == [["a", "b"], ["b", "d"], ["c", "d"]]
    assert graph["levels"] == [["a", "c"], ["b"], ["d"]]
    assert graph["steps"]["a"]["kind"] == "skill" and graph["steps"]["b"]["kind"] == "builtin"
    assert document["skills"] == {
        "lookup": {"digest": result.documents["skill.lookup"].digest, "effect": "read"}
    }
    assert document["dependencies"] == {"skill.lookup": result.documents["skill.lookup"].digest}
    assert document["inputs"]["properties"]["q"] == {"type": "string"}


def _emit_only(path: Path) -> dict[str, str]:
    loaded = load_definitions([path])
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    analysis = Analysis({d.key: d for d in loaded.definitions})
    return {k: d.digest for k, d in emit(analysis, build(analysis)).items()}


def test_a_skill_runbook_cycle_is_emitted_and_still_content_addressed(tmp_path: Path) -> None:
    wrapper = """skill "wrapped" {
  description = "Runs a runbook that calls this skill again."
  effect      = "read"
  adapter "runbook" {
    runbook = runbook.loop
  }
}
runbook "loop" {
  step "again" {
    skill = skill.wrapped
  }
}
"""
    path = tmp_path / "cycle.hcl"
    path.write_text(wrapper, encoding="utf-8")
    first = _emit_only(path)
    assert set(first) == {"skill.wrapped", "runbook.loop"}
    assert _emit_only(path) == first
    path.write_text(wrapper.replace("calls this skill again", "loops"), encoding="utf-8")
    second = _emit_only(path)
    assert second["skill.wrapped"] != first["skill.wrapped"]
    assert second["runbook.loop"] != first["runbook.loop"]


def test_dependency_order_puts_models_before_agents_before_workflows(tmp_path: Path) -> None:
    result = compile_texts(tmp_path, {"all.hcl": "\n".join([MODEL, SKILL, AGENT, BINDING])})
    agent = result.documents["agent.helper"].document
    assert agent["dependencies"] == {"model.m": result.documents["model.m"].digest}
    binding = result.documents["binding.helper_looks_up"].document
    assert set(binding["dependencies"]) == {"skill.lookup", "agent.helper"}
    assert json.loads(pretty(agent)) == agent


def test_a_model_price_is_emitted_the_same_from_both_syntaxes(tmp_path: Path) -> None:
    hcl = """
model "priced" {
  model = "m"
  price {
    currency           = "EUR"
    input_per_million  = 2.5
    output_per_million = 10
  }
}
"""
    yaml = """
model:
  priced:
    model: m
    price: {currency: EUR, input_per_million: 2.5, output_per_million: 10}
"""
    from_hcl = compile_texts(tmp_path / "h", {"m.hcl": hcl})
    from_yaml = compile_texts(tmp_path / "y", {"m.yaml": yaml})
    assert from_hcl.ok and from_yaml.ok
    doc = from_hcl.documents["model.priced"]
    assert doc.document["spec"]["price"] == {
        "currency": "EUR",
        "input_per_million": 2.5,
        "output_per_million": 10,
    }
    assert doc.digest == from_yaml.documents["model.priced"].digest


def test_a_model_without_a_price_keeps_its_document_free_of_one(tmp_path: Path) -> None:
    # profiles compiled before prices existed keep their digests
    result = compile_texts(tmp_path, {"m.hcl": 'model "plain" {\n  model = "m"\n}\n'})
    assert result.ok
    assert "price" not in result.documents["model.plain"].document["spec"]


def _procurement_with(tmp_path: Path, syntax: str, old: str, new: str) -> CompiledDocument:
    root = Path(__file__).resolve().parents[3] / "definitions" / "procurement"
    shutil.copytree(root, tmp_path / "procurement")
    (tmp_path / "procurement" / ".git").mkdir()  # a repository root: file("../prompts/...")
    copy = tmp_path / "procurement" / syntax
    workflow = copy / ("workflow.hcl" if syntax == "hcl" else "workflow.yaml")
    text = workflow.read_text(encoding="utf-8")
    assert old in text
    workflow.write_text(text.replace(old, new), encoding="utf-8")
    result = compile_paths([copy])
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    return result.documents["workflow.procure_laptops"]


def test_separation_of_duties_is_compiled_into_the_approval_state(tmp_path: Path) -> None:
    """Written in HCL or YAML (one digest), else on because the order spends."""
    hcl = ('expires_in = "72h"', 'expires_in = "72h"\n      separation_of_duties = false')
    yml = ("expires_in: 72h", "expires_in: 72h\n          separation_of_duties: false")
    off = [_procurement_with(tmp_path / s, s, *edit) for s, edit in (("hcl", hcl), ("yaml", yml))]
    assert off[0].digest == off[1].digest
    assert off[0].document["graph"]["states"]["review"]["config"]["separation_of_duties"] is False
    default = _procurement_with(tmp_path / "default", "hcl", hcl[0], hcl[0])
    assert default.document["graph"]["states"]["review"]["config"]["separation_of_duties"] is True


def test_rate_limits_are_emitted_the_same_from_both_syntaxes(tmp_path: Path) -> None:
    hcl = """
model "limited" {
  model = "m"
  rate_limit {
    requests = 60
    tokens   = 90000
    per      = "1m"
    burst    = 5
  }
}
"""
    yaml = """
model:
  limited:
    model: m
    rate_limit: {requests: 60, tokens: 90000, per: 1m, burst: 5}
"""
    from_hcl = compile_texts(tmp_path / "h", {"m.hcl": hcl})
    from_yaml = compile_texts(tmp_path / "y", {"m.yaml": yaml})
    assert from_hcl.ok and from_yaml.ok
    doc = from_hcl.documents["model.limited"]
    assert doc.document["spec"]["rate_limit"] == {
        "requests": 60,
        "tokens": 90000,
        "per": 60.0,
        "burst": 5,
    }
    assert doc.digest == from_yaml.documents["model.limited"].digest


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ('rate_limit {\n    per = "1m"\n  }', "limits `requests`, `tokens` or both"),
        ('rate_limit {\n    requests = 5\n    per = "0s"\n  }', "positive duration"),
        ('rate_limit {\n    tokens = 5\n    per = "1m"\n    burst = 2\n  }', "set `requests`"),
    ],
)
def test_a_model_rate_limit_that_limits_nothing_is_a_diagnostic(
    tmp_path: Path, block: str, message: str
) -> None:
    text = f'model "m" {{\n  model = "m"\n  {block}\n}}\n'
    result = compile_paths([write_project(tmp_path, {"m.hcl": text})])
    assert [d.code for d in result.diagnostics] == ["OS104"]
    assert message in result.diagnostics[0].message


def test_a_skill_rate_limit_counts_calls_not_tokens(tmp_path: Path) -> None:
    skill = """
skill "lookup" {
  description = "d"
  effect      = "read"
  adapter {
    python { entry_point = "m:f" }
  }
  rate_limit {
    requests = 10
    per      = "1s"
    tokens   = 5
  }
}
"""
    result = compile_paths([write_project(tmp_path, {"s.hcl": skill})])
    assert [d.code for d in result.diagnostics] == ["OS101"]
    assert "unknown key `tokens`" in result.diagnostics[0].message
    fine = compile_texts(tmp_path / "ok", {"s.hcl": skill.replace("    tokens   = 5\n", "")})
    assert fine.ok
    spec = fine.documents["skill.lookup"].document["spec"]
    assert spec["rate_limit"] == {"requests": 10, "per": 1.0, "burst": None}


def test_a_workflow_queue_bound_is_emitted_only_when_declared(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2] / "runtime" / "engine_defs" / "small.hcl.in"
    text = root.read_text(encoding="utf-8").replace("FACTOR", "1").replace("MODEL_CALLS", "5")
    text = text.replace("ON_EXHAUSTED", "needs_attention")
    plain = compile_texts(tmp_path / "plain", {"small.hcl": text})
    assert "max_queued" not in plain.documents["workflow.small"].document["spec"]
    bounded = text.replace("  start = state.ask\n", "  start = state.ask\n  max_queued = 50\n")
    with_bound = compile_texts(tmp_path / "bounded", {"small.hcl": bounded})
    document = with_bound.documents["workflow.small"]
    assert document.document["spec"]["max_queued"] == 50
    assert document.digest != plain.documents["workflow.small"].digest


def _order_by_condensation(dependencies: dict[str, set[str]]) -> list[list[str]]:
    graph = nx.DiGraph()
    graph.add_nodes_from(dependencies)
    graph.add_edges_from((dep, key) for key, deps in dependencies.items() for dep in deps)
    condensed = nx.condensation(graph)
    members = {node: sorted(condensed.nodes[node]["members"]) for node in condensed.nodes}
    order = nx.lexicographical_topological_sort(condensed, key=lambda node: members[node][0])
    return [members[node] for node in order]


def test_documents_are_built_in_the_order_a_condensed_graph_gives() -> None:
    # cycles, chains, diamonds and lone keys, in random shapes
    chance = random.Random(7)
    for _ in range(500):
        keys = list(dict.fromkeys(f"skill.k{chance.randint(0, 60)}" for _ in range(25)))
        density = chance.random() * 0.3
        dependencies = {
            key: {dep for dep in keys if dep != key and chance.random() < density} for key in keys
        }
        assert _dependency_order(dependencies) == _order_by_condensation(dependencies)
    assert _dependency_order({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"], ["c"]]
