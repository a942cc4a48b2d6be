"""A skill's ``concurrency``: the most calls in flight to its destination, in HCL and YAML with
one digest, located diagnostics for values it refuses, and raising or removing it widens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openseal.compiler.output.diff import diff_documents
from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import compile_texts, write_project

HCL = """skill "check_stock" {
  description = "Check the stock."
  effect      = "read"
  concurrency = CAP

  adapter "http" {
    url = "https://example.org/stock"
  }
}
"""

YAML = """skill:
  check_stock:
    description: Check the stock.
    effect: read
    concurrency: CAP
    adapter:
      http:
        url: https://example.org/stock
"""


def _compiled(tmp_path: Path, name: str, text: str) -> CompiledDocument:
    result = compile_texts(tmp_path / name.replace(".", "_"), {name: text})
    return result.documents["skill.check_stock"]


def test_a_skill_cap_is_the_same_version_from_both_syntaxes(tmp_path: Path) -> None:
    hcl = _compiled(tmp_path, "s.hcl", HCL.replace("CAP", "2"))
    yaml = _compiled(tmp_path, "s.yaml", YAML.replace("CAP", "2"))
    assert hcl.document["spec"]["concurrency"] == 2
    assert hcl.digest == yaml.digest
    other = _compiled(tmp_path, "t.hcl", HCL.replace("CAP", "3"))
    assert other.digest != hcl.digest


def test_a_skill_without_a_cap_keeps_its_digest(tmp_path: Path) -> None:
    plain = _compiled(tmp_path, "p.hcl", HCL.replace("  concurrency = CAP\n", ""))
    assert "concurrency" not in plain.document["spec"]
    yaml = _compiled(tmp_path, "p.yaml", YAML.replace("    concurrency: CAP\n", ""))
    assert plain.digest == yaml.digest


@pytest.mark.parametrize(
    ("syntax", "value", "code", "column", "message"),
    [
        ("hcl", "0", "OS104", 17, "greater than or equal to 1"),
        ("hcl", "2.5", "OS104", 17, "fractional part"),
        ("hcl", '"two"', "OS104", 17, "valid integer"),
        ("hcl", "2000000", "OS104", 17, "less than or equal to 1000000"),
        ("yaml", "-3", "OS104", 18, "greater than or equal to 1"),
        ("yaml", "[2]", "OS103", 18, "valid integer"),
    ],
)
def test_a_bad_cap_is_a_located_diagnostic_with_a_hint(
    tmp_path: Path, syntax: str, value: str, code: str, column: int, message: str
) -> None:
    text = (HCL if syntax == "hcl" else YAML).replace("CAP", value)
    name = f"s.{syntax}"
    result = compile_paths([write_project(tmp_path, {name: text})])
    assert [d.code for d in result.diagnostics] == [code]
    found = result.diagnostics[0]
    assert message in found.message and "`concurrency`" in found.message
    assert found.span.file.endswith(name)
    assert (found.span.line, found.span.column) == (4 if syntax == "hcl" else 5, column)
    assert found.suggestion is not None and "whole number of at least 1" in found.suggestion


def test_raising_or_removing_a_skill_cap_widens_lowering_narrows(tmp_path: Path) -> None:
    def version(name: str, cap: str | None) -> dict[str, Any]:
        text = HCL.replace("  concurrency = CAP\n", "") if cap is None else HCL.replace("CAP", cap)
        found = _compiled(tmp_path, f"{name}.hcl", text)
        return {"skill.check_stock": found.document}

    two, three, none = version("two", "2"), version("three", "3"), version("none", None)
    lowered = diff_documents(three, two)
    assert [(c.kind, c.before, c.after, c.widening) for c in lowered.changes] == [
        ("concurrency_lowered", 3, 2, False)
    ]
    assert not lowered.risk_widening
    raised = diff_documents(two, three)
    assert [c.kind for c in raised.changes] == ["concurrency_raised"] and raised.risk_widening
    removed = diff_documents(two, none)
    assert [(c.kind, c.before, c.after) for c in removed.changes] == [
        ("concurrency_raised", 2, None)
    ]
    assert removed.risk_widening
    added = diff_documents(none, two)
    assert [c.kind for c in added.changes] == ["concurrency_lowered"]
    assert not added.risk_widening
