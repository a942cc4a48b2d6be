"""The peer system's node/edge HCL workflows, planned onto the same executor."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.runbook_pipeline import prepare
from openseal.runbooks.executor import run
from tests.skills.server import Server

TRIAGE = Path(__file__).parent / "inputs" / "order_triage.hcl"


def _plan(path: Path = TRIAGE):  # type: ignore[no-untyped-def]
    prepared = prepare(path)
    assert prepared.plan is not None, [d.to_dict() for d in prepared.diagnostics]
    return prepared.plan


def test_nodes_map_to_steps_and_edges_to_dependencies() -> None:
    plan = _plan()
    assert plan.name == "order_triage" and plan.concurrency == 2
    assert plan.levels() == [["start"], ["fetch"], ["item_total", "urgent"], ["page", "queue"]]
    page = plan.steps["page"]
    assert page.uses == "http" and page.needs == ("fetch",)
    assert [(e.source, e.condition is not None) for e in page.edges] == [("urgent", True)]


def test_an_edge_condition_chooses_the_branch(server: Server) -> None:
    plan = _plan()
    urgent = run(plan, {"base_url": server.url, "order_id": "urgent-7"})
    assert urgent.ok, urgent.error
    assert urgent.steps["page"].status == "succeeded"
    assert urgent.steps["queue"].status == "skipped"
    assert urgent.steps["queue"].error == "no incoming edge fired (from `urgent`)"
    posted = [r for r in server.requests if r.method == "POST"]
    assert [r.body for r in posted] == [{"order": "urgent-7", "level": "page"}]
    # Outputs of the steps nothing depends on.
    assert urgent.outputs["item_total"] == 6
    assert set(urgent.outputs) == {"item_total", "page"}

    server.requests.clear()
    calm = run(plan, {"base_url": server.url, "order_id": "routine-1"})
    assert calm.ok, calm.error
    assert calm.steps["page"].status == "skipped"
    assert calm.outputs["queue"] == {"order": "routine-1", "level": "queue"}
    assert [r.method for r in server.requests] == ["GET"]
    assert server.requests[0].path == "/orders/routine-1"


def _diagnostics(tmp_path: Path, body: str) -> list[tuple[str, int, int, str]]:
    path = tmp_path / "flow.hcl"
    path.write_text(f'workflow "w" {{\n{body}\n}}\n')
    prepared = prepare(path)
    assert prepared.plan is None
    return [(d.code, d.span.line, d.span.column, d.message) for d in prepared.diagnostics]


def test_missing_edge_endpoint_is_located(tmp_path: Path) -> None:
    found = _diagnostics(tmp_path, '  node manual "start" {}\n  edge "start" "fetc" {}')
    assert found == [("OS407", 3, 16, "edge endpoint `fetc` is not a node of this workflow")]


def test_duplicate_node_ids_are_located_with_the_first(tmp_path: Path) -> None:
    path = tmp_path / "flow.hcl"
    path.write_text('workflow "w" {\n  node manual "a" {}\n  node set "a" {}\n}\n')
    prepared = prepare(path)
    [duplicate] = prepared.diagnostics
    assert (duplicate.code, duplicate.span.line, duplicate.span.column) == ("OS203", 3, 12)
    assert duplicate.related[0].span.line == 2


def test_cycles_are_located_errors(tmp_path: Path) -> None:
    found = _diagnostics(
        tmp_path,
        """  node set "a" {}
  node set "b" {}
  edge "a" "b" {}
  edge "b" "a" {}""",
    )
    assert [(c, line) for c, line, _, _ in found] == [("OS406", 5)]
    assert "a → b → a" in found[0][3]


def test_unknown_node_type_and_attribute(tmp_path: Path) -> None:
    found = _diagnostics(
        tmp_path,
        """  node htp "a" {}
  node http "b" {
    uri = "x"
  }""",
    )
    codes = {(c, line) for c, line, _, _ in found}
    assert ("OS104", 2) in codes  # unknown type `htp`
    assert ("OS101", 4) in codes  # unknown attribute `uri`
    assert ("OS102", 3) in codes  # `url` missing


def test_unknown_reference_in_a_node(tmp_path: Path) -> None:
    found = _diagnostics(
        tmp_path,
        """  node manual "a" {}
  node transform "b" {
    expression = "nope.output"
  }
  edge "a" "b" {}""",
    )
    assert [(c, line) for c, line, _, _ in found] == [("OS201", 4)]


@pytest.mark.parametrize("value", ['"fail_fast"', '"continue"'])
def test_workflow_settings_are_read(tmp_path: Path, value: str) -> None:
    path = tmp_path / "flow.hcl"
    path.write_text(f'workflow "w" {{\n  on_failure = {value}\n  node manual "a" {{}}\n}}\n')
    plan = _plan(path)
    assert plan.on_failure == value.strip('"')


def test_the_peer_systems_attribute_names_are_read() -> None:
    result = run(_plan(Path(__file__).parent / "inputs" / "peer_names.hcl"), {})
    assert result.ok, result.error
    assert result.steps["vendors"].output == {
        "quotes": [
            {"vendor": "a", "price": 3},
            {"vendor": "b", "price": 1},
            {"vendor": "c", "price": 2},
        ]
    }
    assert result.steps["cheap"].output == [
        {"vendor": "b", "price": 1},
        {"vendor": "c", "price": 2},
    ]
    assert result.steps["ranked"].output == [
        {"vendor": "c", "price": 2},
        {"vendor": "b", "price": 1},
    ]
    assert result.outputs == {"summary": {"total": 3, "note": "total 3 from c"}}


def test_what_the_peer_refuses_is_refused_where_it_is_written(tmp_path: Path) -> None:
    found = _diagnostics(
        tmp_path,
        """  node aggregate "a" {
    items     = [1, 2]
    operation = "median"
  }
  node aggregate "b" {
    items     = [1, 2]
    op        = "sum"
    operation = "sum"
  }
  node sort "c" {
    items = [2, 1]
    order = "descending"
  }
  node sort "d" {
    items = [2, 1]
    order = input.order
  }
  node set "e" {
    variable = "x"
  }
  node set "f" {
    variable  = "x"
    value     = 1
    variables = { y = 2 }
  }
  node filter "g" {
    items = [1]
  }
  node set "h" {
    variable = "not a name"
    value    = 1
  }""",
    )
    assert [(code, line, column) for code, line, column, _ in found] == [
        ("OS104", 4, 17),  # operation "median"
        ("OS006", 9, 5),  # op and operation
        ("OS104", 13, 13),  # order "descending"
        ("OS104", 17, 13),  # order not a literal
        ("OS102", 20, 5),  # variable without value
        ("OS006", 23, 5),  # variable and variables
        ("OS102", 27, 15),  # filter without condition
        ("OS104", 31, 17),  # variable not a name (the string's text starts after its quote)
    ]
