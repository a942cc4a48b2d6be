"""A type error about a plain value (a number, a bool, a list or map of them) points at the
value where it is written, in HCL and YAML, not at the definition's first line."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import AGENT, BINDING, MODEL, SKILL

HCL = """workflow "answer" {
  owner = agent.helper
  start = state.look
  state "look" {
    action {
      skill = skill.lookup
      args  = { q = VALUE }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""

YAML = """workflow:
  answer:
    owner: agent.helper
    start: state.look
    state:
      look:
        action:
          skill: skill.lookup
          args: {q: VALUE}
        next: state.done
      done: {end: completed}
"""


@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
@pytest.mark.parametrize(
    ("value", "shown"), [("true", "bool"), ("5", "number"), ("[1, 2]", "list(number)")]
)
def test_a_type_error_on_a_plain_value_points_at_the_value(
    tmp_path: Path, syntax: str, value: str, shown: str
) -> None:
    (tmp_path / "all.hcl").write_text("\n".join([MODEL, SKILL, AGENT, BINDING]))
    text = (HCL if syntax == "hcl" else YAML).replace("VALUE", value)
    (tmp_path / f"workflow.{syntax}").write_text(text)
    found = [d for d in compile_paths([tmp_path]).diagnostics if d.code == "OS301"]
    assert len(found) == 1, found
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if "q" in row)
    row = text.splitlines()[line - 1]
    assert found[0].span.file.endswith(f"workflow.{syntax}")
    assert (found[0].span.line, found[0].span.column) == (line, row.index(value) + 1)
    assert found[0].message == f"`{value}` is {shown}, but `q` expects string"
