"""The example skills declare exactly what the procurement simulator returns."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from openseal.compiler.definitions.specs import SkillSpec
from openseal.compiler.lang import types as ty
from openseal.compiler.load import load_definitions
from openseal.simulator.procurement import ProcurementSimulator

EXAMPLES = Path(__file__).resolve().parents[2] / "definitions" / "procurement"


def output_type(syntax: str, skill: str) -> ty.TypeExpr:
    result = load_definitions([EXAMPLES / syntax])
    spec = next(d.spec for d in result.definitions if d.key == f"skill.{skill}")
    assert isinstance(spec, SkillSpec) and spec.output is not None
    return spec.output


@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
def test_search_and_order_responses_conform(syntax: str) -> None:
    with ProcurementSimulator() as sim:
        search = httpx.get(f"{sim.url}/vendors", params={"item": "laptop", "quantity": 10})
        order = httpx.post(
            f"{sim.url}/orders",
            headers={"Idempotency-Key": "run:order"},
            json={"vendor": "northwind", "quantity": 10, "total": 11490.0,
                  "currency": "EUR", "destination": "O4"},
        )  # fmt: skip
    assert ty.conforms(search.json(), output_type(syntax, "search_vendors")) == []
    assert ty.conforms(order.json(), output_type(syntax, "submit_purchase_order")) == []
