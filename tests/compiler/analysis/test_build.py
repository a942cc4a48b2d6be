from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.analysis.build import Graphs, build
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.lang import expr as ex
from openseal.compiler.load import load_definitions

ROOT = Path(__file__).resolve().parents[3]
INPUTS = ROOT / "tests/golden/graph/inputs"


def analyse(path: Path) -> Analysis:
    loaded = load_definitions([path])
    assert loaded.ok, loaded.diagnostics
    return Analysis({d.key: d for d in loaded.definitions})


def graphs_of(path: Path) -> Graphs:
    return build(analyse(path))


def edges(graphs: Graphs, name: str) -> list[tuple[str, str, str, str | None, int]]:
    return [
        (t.source, t.target, t.event, ex.to_source(t.guard) if t.guard else None, t.order)
        for t in graphs.workflows[name].transitions
    ]


def test_procurement_states_and_kinds() -> None:
    workflow = graphs_of(ROOT / "definitions/procurement/hcl").workflows["procure_laptops"]
    assert workflow.start == "research"
    assert workflow.ends == {"done": "completed", "over_budget": "failed", "rejected": "canceled"}
    kinds = dict(workflow.graph.nodes(data="kind"))
    assert kinds == {
        "check_budget": "decision",
        "done": "end",
        "draft": "proposal",
        "over_budget": "end",
        "rejected": "end",
        "research": "turn",
        "review": "approval",
        "submit": "action",
    }
    assert workflow.graph.nodes["rejected"]["outcome"] == "canceled"
    assert "outcome" not in workflow.graph.nodes["review"]
    # sorted insertion order, so everything drawn or emitted from it is reproducible
    assert list(workflow.graph.nodes) == sorted(workflow.graph.nodes)


def test_procurement_transitions_carry_events_guards_and_order() -> None:
    guard = "state.research.output.unit_price * input.request.quantity <= input.request.budget"
    assert edges(graphs_of(ROOT / "definitions/procurement/hcl"), "procure_laptops") == [
        ("check_budget", "draft", "done", guard, 0),
        ("check_budget", "over_budget", "done", None, 1),
        ("draft", "review", "done", None, 0),
        ("research", "check_budget", "done", None, 0),
        ("review", "submit", "approved", None, 0),
        ("review", "research", "changes_requested", None, 0),
        ("review", "rejected", "expired", None, 0),
        ("review", "rejected", "rejected", None, 0),
        ("submit", "done", "done", None, 0),
    ]


def test_networkx_edges_hold_every_transition_between_two_states() -> None:
    workflow = graphs_of(ROOT / "definitions/procurement/hcl").workflows["procure_laptops"]
    events = [t.event for t in workflow.graph.edges["review", "rejected"]["transitions"]]
    assert events == ["expired", "rejected"]


def test_transition_spans_point_at_the_target_reference() -> None:
    workflow = graphs_of(ROOT / "definitions/procurement/hcl").workflows["procure_laptops"]
    first = workflow.transitions[0]
    source = (ROOT / first.span.file).read_text().splitlines()[first.span.line - 1]
    assert source[first.span.column - 1 : first.span.end_column - 1] == "state.draft"


@pytest.mark.parametrize("example", ["procurement", "release_note", "budget_check"])
def test_hcl_and_yaml_build_the_same_graph(example: str) -> None:
    hcl = graphs_of(ROOT / f"definitions/{example}/hcl")
    yaml = graphs_of(ROOT / f"definitions/{example}/yaml")
    assert hcl.workflows.keys() == yaml.workflows.keys()
    for name in hcl.workflows:
        assert edges(hcl, name) == edges(yaml, name)
        assert list(hcl.workflows[name].graph.nodes(data=True)) == list(
            yaml.workflows[name].graph.nodes(data=True)
        )


def test_release_note_graph() -> None:
    graphs = graphs_of(ROOT / "definitions/release_note/yaml")
    assert list(graphs.workflows) == ["release_note"]
    assert graphs.runbooks == {}
    assert ("review", "draft", "changes_requested", None, 0) in edges(graphs, "release_note")


def test_unknown_targets_are_left_out() -> None:
    graphs = graphs_of(INPUTS / "os407_transition_targets.hcl")
    workflow = graphs.workflows["typos"]
    assert edges(graphs, "typos") == [("review", "done", "rejected", None, 0)]
    assert set(workflow.graph.nodes) == {"first", "review", "done"}


def test_unknown_start_is_none() -> None:
    graphs = graphs_of(INPUTS / "os401_initial_state.hcl")
    assert graphs.workflows["misspelt_start"].start is None
    assert graphs.workflows["start_not_a_state"].start is None


def test_runbook_edges_come_from_references_and_depends_on() -> None:
    runbook = graphs_of(INPUTS / "valid_runbook.yaml").runbooks["fan_in"]
    assert list(runbook.steps) == ["count", "fetch", "label", "publish"]
    assert sorted(runbook.graph.edges) == [
        ("count", "publish"),  # args reference step.count
        ("fetch", "count"),  # args reference step.fetch
        ("fetch", "label"),  # `when` references step.fetch
        ("label", "publish"),  # depends_on
    ]
    [why] = runbook.graph.edges["label", "publish"]["refs"]
    assert why.dotted == "step.label"
    assert runbook.graph.nodes["publish"]["kind"] == "skill"
    assert runbook.graph.nodes["fetch"]["kind"] == "builtin"


def test_runbook_cycles_and_unknown_steps_do_not_break_build() -> None:
    cyclic = graphs_of(INPUTS / "os406_runbook_cycles.hcl").runbooks["circular"]
    assert ("wait_for_self", "wait_for_self") in cyclic.graph.edges
    missing = graphs_of(INPUTS / "os407_transition_targets.hcl").runbooks["missing_steps"]
    assert sorted(missing.graph.edges) == [("fetch", "shape")]


def test_build_is_deterministic() -> None:
    analysis = analyse(ROOT / "definitions/procurement/yaml")
    first, second = build(analysis), build(analysis)
    assert first.workflows["procure_laptops"] == second.workflows["procure_laptops"]
    assert list(first.workflows["procure_laptops"].graph.edges) == list(
        second.workflows["procure_laptops"].graph.edges
    )
