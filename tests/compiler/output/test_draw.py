from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from openseal.compiler.analysis.build import Graphs, build
from openseal.compiler.analysis.ir import Analysis, WorkflowGraph
from openseal.compiler.load import load_definitions
from openseal.compiler.output import draw
from openseal.compiler.output.draw import DrawError, GraphvizNotFound, to_dot, to_mermaid, to_svg
from openseal.errors import OpenSealError
from tests.golden_helper import assert_golden

ROOT = Path(__file__).resolve().parents[3]
PROCUREMENT = ROOT / "definitions/procurement"
ALL_KINDS = ROOT / "tests/golden/draw/inputs/all_kinds.hcl"
RUNBOOK = ROOT / "tests/golden/graph/inputs/valid_runbook.yaml"


def graphs_of(path: Path) -> Graphs:
    loaded = load_definitions([path])
    assert loaded.ok, loaded.diagnostics
    return build(Analysis({d.key: d for d in loaded.definitions}))


def procurement(syntax: str = "hcl") -> WorkflowGraph:
    return graphs_of(PROCUREMENT / syntax).workflows["procure_laptops"]


def test_golden_mermaid_procurement() -> None:
    assert_golden(to_mermaid(procurement()), "draw/procure_laptops.mmd")


def test_golden_dot_procurement() -> None:
    assert_golden(to_dot(procurement()), "draw/procure_laptops.dot")


def test_golden_every_state_kind() -> None:
    workflow = graphs_of(ALL_KINDS).workflows["every_kind"]
    assert_golden(to_mermaid(workflow), "draw/every_kind.mmd")
    assert_golden(to_dot(workflow), "draw/every_kind.dot")


def test_golden_runbook() -> None:
    runbook = graphs_of(RUNBOOK).runbooks["fan_in"]
    assert_golden(to_mermaid(runbook), "draw/fan_in.mmd")
    assert_golden(to_dot(runbook), "draw/fan_in.dot")


@pytest.mark.parametrize("render", [to_mermaid, to_dot])
def test_hcl_and_yaml_draw_the_same(render: Callable[[WorkflowGraph], str]) -> None:
    assert render(procurement("hcl")) == render(procurement("yaml"))


def test_approval_is_a_highlighted_human_checkpoint() -> None:
    mermaid = to_mermaid(procurement())
    assert 's_review{{"review<br/>approval: proposal.order<br/>human checkpoint (requester)"}}' in (
        mermaid
    )
    assert "class s_review approval" in mermaid
    assert "classDef approval fill:#fde68a,stroke:#b45309,stroke-width:3px" in mermaid
    review = next(line for line in to_dot(procurement()).splitlines() if "s_review [" in line)
    assert 'shape="hexagon"' in review and 'penwidth="3"' in review


def test_edges_are_labelled_with_events_and_guards() -> None:
    mermaid = to_mermaid(procurement())
    guard = "state.research.output.unit_price * input.request.quantity #lt;= input.request.budget"
    assert f's_check_budget -->|"1: when {guard}"| s_draft' in mermaid
    assert 's_check_budget -->|"2: otherwise"| s_over_budget' in mermaid
    assert 's_review -->|"approved"| s_submit' in mermaid
    assert "s_draft --> s_review" in mermaid  # `next` needs no label
    assert "start --> s_research" in mermaid


def test_labels_are_escaped() -> None:
    workflow = graphs_of(ALL_KINDS).workflows["every_kind"]
    mermaid = to_mermaid(workflow)
    assert "#quot;say \\#quot;#lt;hi#gt;\\#quot; #amp; #35;1#quot;" in mermaid
    assert '"<hi>' not in mermaid
    dot = to_dot(workflow)
    assert '[label="1: when input.name == \\"say \\\\\\"<hi>\\\\\\" & #1\\""]' in dot


def test_svg_without_graphviz_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draw.shutil, "which", lambda _name: None)
    with pytest.raises(GraphvizNotFound) as caught:
        to_svg(procurement())
    assert isinstance(caught.value, OpenSealError)
    message = str(caught.value)
    assert "`graphviz`" in message and "apt-get install graphviz" in message
    assert "brew install graphviz" in message


def test_svg_reports_a_failing_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    false = shutil.which("false")
    if false is None:
        pytest.skip("no `false` program")
    monkeypatch.setattr(draw.shutil, "which", lambda _name: false)
    with pytest.raises(DrawError, match="could not draw `procure_laptops`: exit status 1"):
        to_svg(procurement())


@pytest.mark.usefixtures("graphviz_dot")
def test_svg_with_graphviz() -> None:
    svg = to_svg(procurement())
    assert b"<svg" in svg and b"human checkpoint" in svg


def test_work_handed_to_other_runs_is_drawn_dashed() -> None:
    workflow = graphs_of(ALL_KINDS).workflows["every_kind"]
    mermaid = to_mermaid(workflow)
    assert 's_gather -.->|"child north, south"| x_workflow_regional_report' in mermaid
    assert 's_gather -.->|"child audit"| x_workflow_audit_trail' in mermaid
    assert 's_ask_team -.->|"delegates"| x_team_legal' in mermaid
    assert 'x_workflow_regional_report["workflow regional_report"]' in mermaid
    dot = to_dot(workflow)
    assert 's_gather -> x_workflow_audit_trail [label="child audit", style="dashed"];' in dot
