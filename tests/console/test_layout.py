"""The console's graph layout, from the compiled procurement workflow (no browser)."""

from __future__ import annotations

from typing import Any

import pytest

from openseal.api.console.layout import Drawing, describe, lay_out
from openseal.quickstart import compile_definitions
from tests.console.support import DEFINITIONS


@pytest.fixture(scope="module")
def graph() -> dict[str, Any]:
    [workflow] = [d for d in compile_definitions(DEFINITIONS) if d.kind == "workflow"]
    found: dict[str, Any] = workflow.document["graph"]
    return found


@pytest.fixture(scope="module")
def drawing(graph: dict[str, Any]) -> Drawing:
    return lay_out(graph)


def test_every_state_is_drawn_once_inside_the_picture_and_none_overlap(
    graph: dict[str, Any], drawing: Drawing
) -> None:
    assert sorted(n.name for n in drawing.nodes) == sorted(graph["states"])
    for node in drawing.nodes:
        assert node.x >= 0 and node.x + node.width <= drawing.width
        assert node.y >= 0 and node.y + node.height <= drawing.height
    for a in drawing.nodes:
        for b in drawing.nodes:
            if a is not b:
                apart = (
                    a.x + a.width <= b.x or b.x + b.width <= a.x
                    or a.y + a.height <= b.y or b.y + b.height <= a.y
                )  # fmt: skip
                assert apart, (a.name, b.name)


def test_the_flow_goes_down_and_the_loop_goes_back_up(drawing: Drawing) -> None:
    y = {n.name: n.y for n in drawing.nodes}
    assert drawing.initial == "research"
    assert y["research"] == min(y.values())
    assert y["research"] < y["check_budget"] < y["draft"] < y["review"] < y["submit"] < y["done"]
    edges = {(e.source, e.target): e for e in drawing.edges}
    assert edges[("review", "research")].back is True
    assert edges[("review", "research")].label == "changes_requested"
    assert not edges[("review", "submit")].back
    assert edges[("review", "submit")].label == "approved"
    guarded = [e.label for e in drawing.edges if e.source == "check_budget"]
    assert any(label.startswith("when ") and "unit_price" in label for label in guarded)
    for edge in drawing.edges:
        assert set(edge.path) <= set("MC0123456789. -"), edge.path


def test_states_are_labelled_as_openseal_graph_labels_them(drawing: Drawing) -> None:
    lines = {n.name: n.lines for n in drawing.nodes}
    assert lines["research"] == ("research", "turn: team.procurement.role.researcher")
    assert lines["draft"] == ("draft", "proposal: order", "skill: skill.submit_purchase_order")
    assert lines["review"][1] == "approval: proposal.order"
    assert lines["review"][2].startswith("human checkpoint")
    assert lines["done"] == ("done", "end: completed")
    assert describe("wait", {"timer": 60.0}) == ("wait: timer 60s",)
    assert describe("decision", {}) == ("decision",)


def test_a_graph_with_nothing_in_it_still_lays_out() -> None:
    empty = lay_out({})
    assert empty.nodes == () and empty.edges == () and empty.width > 0
    looped = lay_out({
        "initial": "a",
        "states": {"a": {"kind": "turn", "config": {}}, "b": {"kind": "turn", "config": {}}},
        "transitions": [{"from": "a", "to": "b", "event": "done"},
                        {"from": "b", "to": "a", "event": "again"},
                        {"from": "a", "to": "ghost", "event": "done"}],
    })  # fmt: skip
    assert [(e.source, e.target, e.back) for e in looped.edges] == [
        ("a", "b", False), ("b", "a", True),
    ]  # fmt: skip
