"""A compiled skill's settings read as what the adapters call: expressions and types decoded,
and settings without the contract's shape refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from openseal.compiler import compile_paths, expr, types
from openseal.contract import SkillSettings
from openseal.skills import Skill

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def submit() -> dict[str, Any]:
    result = compile_paths([ROOT / "definitions" / "procurement" / "hcl"])
    assert result.ok
    return dict(result.documents["skill.submit_purchase_order"].document["spec"])


def test_a_compiled_skill_reads_back_decoded(submit: dict[str, Any]) -> None:
    skill = Skill.from_settings(cast(SkillSettings, submit))
    assert skill.effect == submit["effect"] and skill.timeout == float(submit["timeout"])
    assert skill.adapter.kind == "http" and skill.adapter.http is not None
    assert expr.to_json(skill.adapter.http.url) == submit["adapter"]["http"]["url"]
    assert skill.input is not None and types.to_json(skill.input) == submit["input"]
    assert skill.idempotency is not None
    assert skill.idempotency.key_header == submit["idempotency"]["key_header"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda s: s.pop("adapter"),
        lambda s: s.update(adapter={"http": None, "python": None, "runbook": None}),
        lambda s: s["adapter"]["http"].update(url={"node": "nonsense"}),
        lambda s: s.update(input={"type": "nonsense"}),
    ],
    ids=["no adapter", "none chosen", "bad expression", "bad type"],
)
def test_settings_without_the_contract_s_shape_are_refused(
    submit: dict[str, Any], damage: Any
) -> None:
    settings = {**submit, "adapter": {**submit["adapter"], "http": dict(submit["adapter"]["http"])}}
    damage(settings)
    with pytest.raises(
        (KeyError, TypeError, ValueError, expr.ExpressionFormatError, types.TypeFormatError)
    ):
        Skill.from_settings(cast(SkillSettings, settings))
