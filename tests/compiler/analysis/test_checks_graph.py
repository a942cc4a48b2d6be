from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.analysis.build import build
from openseal.compiler.analysis.checks import CHECKS
from openseal.compiler.analysis.checks import graph as checks
from openseal.compiler.analysis.checks.graph import GRAPH_CHECKS, Check
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.load import LoadResult, load_definitions
from openseal.compiler.output.render_diagnostics import render_human
from openseal.compiler.pipeline import compile_paths
from tests.golden_helper import assert_golden

ROOT = Path(__file__).resolve().parents[3]
INPUTS = Path("tests/golden/graph/inputs")

#: (check, its code, input file); the golden is the same name with ``.txt``
CASES: list[tuple[Check, str, str]] = [
    (checks.check_initial_state, "OS401", "os401_initial_state.hcl"),
    (checks.check_unreachable_states, "OS402", "os402_unreachable_states.hcl"),
    (checks.check_end_reachable, "OS403", "os403_end_reachable.hcl"),
    (checks.check_no_transitions_out_of_end, "OS404", "os404_no_transitions_out_of_end.hcl"),
    (checks.check_ambiguous_transitions, "OS405", "os405_ambiguous_transitions.hcl"),
    (checks.check_runbook_cycles, "OS406", "os406_runbook_cycles.hcl"),
    (checks.check_transition_targets, "OS407", "os407_transition_targets.hcl"),
    (checks.check_events_match_kind, "OS408", "os408_events_match_kind.hcl"),
    (checks.check_fanout_work, "OS409", "os409_fanout_work.hcl"),
    (checks.check_workflow_cycles, "OS410", "os410_workflow_cycles.hcl"),
    (checks.check_workflow_cycles, "OS410", "os410_workflow_cycles.yaml"),
    (checks.check_budget_covers_shortest_path, "OS507", "os507_budget_covers_shortest_path.hcl"),
]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Spans name files relative to the working directory; keep goldens machine-independent.
    monkeypatch.chdir(ROOT)


def load(*paths: Path) -> tuple[LoadResult, Analysis]:
    loaded = load_definitions(list(paths))
    assert loaded.ok, loaded.diagnostics
    return loaded, Analysis({d.key: d for d in loaded.definitions})


def run_graph_checks(analysis: Analysis) -> list[Diagnostic]:
    graphs = build(analysis)
    return [d for check in GRAPH_CHECKS for d in check(analysis, graphs)]


@pytest.mark.parametrize(("check", "code", "name"), CASES, ids=[c[2] for c in CASES])
def test_golden_graph_check(check: Check, code: str, name: str) -> None:
    loaded, analysis = load(INPUTS / name)
    found = check(analysis, build(analysis))
    assert found, f"{check.__name__} found nothing in {name}"
    assert {d.code for d in found} == {code}
    # No other graph check piles on: each mistake is reported once, by its own check.
    assert sorted(run_graph_checks(analysis), key=str) == sorted(found, key=str)
    text = render_human(found, loaded.sources, color=False, file_count=1)
    suffix = "_yaml.txt" if name.endswith(".yaml") and code == "OS410" else ".txt"
    assert_golden(text, f"graph/{Path(name).stem}{suffix}")


@pytest.mark.parametrize(
    "example",
    [
        "definitions/procurement/hcl",
        "definitions/procurement/yaml",
        "definitions/release_note/hcl",
        "definitions/release_note/yaml",
    ],
)
def test_examples_have_no_graph_diagnostics(example: str) -> None:
    _, analysis = load(Path(example))
    assert analysis.of_kind("workflow")
    assert run_graph_checks(analysis) == []


def test_valid_runbook_has_no_graph_diagnostics() -> None:
    _, analysis = load(INPUTS / "valid_runbook.yaml")
    assert run_graph_checks(analysis) == []


def test_checks_run_graph_checks_first_and_each_once() -> None:
    assert CHECKS[: len(GRAPH_CHECKS)] == GRAPH_CHECKS
    assert len(set(CHECKS)) == len(CHECKS)


def test_start_typo_suggests_the_state() -> None:
    _, analysis = load(INPUTS / "os401_initial_state.hcl")
    found = checks.check_initial_state(analysis, build(analysis))
    assert [d.suggestion for d in found] == ["did you mean `state.first`?", None]


def test_cycle_names_every_step_in_order() -> None:
    _, analysis = load(INPUTS / "os406_runbook_cycles.hcl")
    messages = [d.message for d in checks.check_runbook_cycles(analysis, build(analysis))]
    assert any("fetch → shape → publish → fetch" in m for m in messages)
    assert any("wait_for_self → wait_for_self" in m for m in messages)
    assert not any("independent" in m for m in messages)


def test_budget_reports_the_shortest_path() -> None:
    _, analysis = load(INPUTS / "os507_budget_covers_shortest_path.hcl")
    found = checks.check_budget_covers_shortest_path(analysis, build(analysis))
    assert len(found) == 2
    calls, turns = sorted(found, key=lambda d: d.message)
    assert "first → pick → done" in calls.message and "needs 1 model call" in calls.message
    assert "needs 2 turns" in turns.message


def test_yaml_points_at_the_state_key() -> None:
    _, analysis = load(INPUTS / "os402_unreachable_states.yaml")
    [found] = checks.check_unreachable_states(analysis, build(analysis))
    assert (found.span.line, found.span.column) == (11, 7)
    assert found.span.end_column == 13


def _bounded_only(path: Path, tmp_path: Path) -> Path:
    """The input with the unbounded cycles taken out: the agent, `ask`, `w1` and `w2`."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".hcl":
        text = text.replace('  workflow     = "ask"\n', "")
        start, end = text.index("# w1 spawns w2"), text.index("# A cycle with a bound")
        text = text[:start] + text[end:]
    else:
        text = text.replace(", workflow: ask}", "}")
        start, end = text.index("  w1:\n"), text.index("  b1:\n")
        text = text[:start] + text[end:]
    out = tmp_path / path.suffix.lstrip(".") / path.name
    out.parent.mkdir()
    out.write_text(text, encoding="utf-8")
    return out


def test_a_bounded_cycle_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    digests = []
    for name in ("os410_workflow_cycles.hcl", "os410_workflow_cycles.yaml"):
        result = compile_paths([_bounded_only(INPUTS / name, tmp_path)])
        assert result.ok, result.diagnostics
        b1, b2 = result.documents["workflow.b1"], result.documents["workflow.b2"]
        assert b1.document["spec"]["max_depth"] == 4
        assert "max_depth" not in b2.document["spec"]  # undeclared: not in the document
        digests.append((b1.digest, b2.digest))
    assert digests[0] == digests[1]


@pytest.mark.parametrize("depth", ["1", "17", '"deep"'])
def test_max_depth_outside_its_range_is_refused_where_it_is_written(
    tmp_path: Path, depth: str
) -> None:
    text = (
        (INPUTS / "os410_workflow_cycles.hcl")
        .read_text()
        .replace("max_depth = 4", f"max_depth = {depth}")
    )
    (tmp_path / "all.hcl").write_text(text)
    result = compile_paths([tmp_path / "all.hcl"])
    found = [d for d in result.diagnostics if "max_depth" in d.message]
    assert [(d.code, d.span.line) for d in found] == [("OS104", 72)], result.diagnostics
    assert found[0].message.startswith("`max_depth`")
