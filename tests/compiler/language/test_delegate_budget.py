"""A ``delegate``'s ``budget``: both syntaxes, one digest; unknown keys, negative amounts and
more than the caller has are located errors; a delegate without one keeps its digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import CompileResult, compile_paths
from tests.compiler.compile_support import compile_texts, project_text, write_project

ASK_HCL = """
workflow "ask" {
  owner = agent.helper
  start = state.ask
  budget {
    turns       = 10
    model_calls = 20
  }
  state "ask" {
    delegate {
      to     = agent.helper
      goal   = "Count the laptops"
      output = object({ count = number })
      budget {
        model_calls = 5
        tokens      = 4000
      }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""

ASK_YAML = """
workflow:
  ask:
    owner: agent.helper
    start: state.ask
    budget: {turns: 10, model_calls: 20}
    state:
      ask:
        delegate:
          to: agent.helper
          goal: Count the laptops
          output: object({ count = number })
          budget: {model_calls: 5, tokens: 4000}
        next: state.done
      done: {end: completed}
"""

#: the line of ``model_calls = 5`` in ASK_HCL
CARVE_LINE = 15


def _compile(root: Path, text: str) -> CompileResult:
    return compile_paths([write_project(root, {"p.hcl": project_text(), "t.hcl": text})])


def test_a_carved_budget_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    hcl = compile_texts(tmp_path / "hcl", {"p.hcl": project_text(), "t.hcl": ASK_HCL})
    yaml = compile_texts(tmp_path / "yaml", {"p.hcl": project_text(), "t.yaml": ASK_YAML})
    assert hcl.documents["workflow.ask"].digest == yaml.documents["workflow.ask"].digest
    document = hcl.documents["workflow.ask"].document
    config = document["graph"]["states"]["ask"]["config"]
    assert config["budget"] == {"model_calls": 5, "tokens": 4000}
    assert document["spec"]["state"]["ask"]["delegate"]["budget"] == config["budget"]


def test_a_delegate_without_a_budget_keeps_its_document(tmp_path: Path) -> None:
    lines = ASK_HCL.splitlines(keepends=True)
    without = "".join(lines[: CARVE_LINE - 2] + lines[CARVE_LINE + 2 :])
    assert "budget {\n        model_calls" not in without
    result = compile_texts(tmp_path, {"p.hcl": project_text(), "t.hcl": without})
    document = result.documents["workflow.ask"].document
    assert "budget" not in document["graph"]["states"]["ask"]["config"]
    assert "budget" not in document["spec"]["state"]["ask"]["delegate"]


@pytest.mark.parametrize(
    ("setting", "code", "message"),
    [
        ("model_calls = -1", "OS104", "greater than or equal to 0"),
        ("model_cals  = 5", "OS101", "model_cals"),
        ("spend       = 5", "OS101", "spend"),
        ("model_calls = 25", "OS512", "more than the workflow's `budget.model_calls` (20)"),
    ],
)
def test_a_carved_budget_is_checked_at_its_line(
    tmp_path: Path, setting: str, code: str, message: str
) -> None:
    result = _compile(tmp_path, ASK_HCL.replace("model_calls = 5", setting))
    found = [(d.code, d.span.line, d.message) for d in result.diagnostics]
    assert len(found) == 1, found
    assert found[0][:2] == (code, CARVE_LINE), found
    assert message in found[0][2]


def test_more_than_the_owner_agent_has_is_refused_too(tmp_path: Path) -> None:
    project = project_text().replace(
        'max_risk     = "read"\n', 'max_risk     = "read"\n  budget {\n    tokens = 3000\n  }\n'
    )
    result = compile_paths([write_project(tmp_path, {"p.hcl": project, "t.hcl": ASK_HCL})])
    found = [(d.code, d.span.line, d.message, d.suggestion) for d in result.diagnostics]
    assert [(code, line) for code, line, *_ in found] == [("OS512", CARVE_LINE + 1)], found
    assert "more than its owner `agent.helper`'s `budget.tokens` (3000)" in found[0][2]
    assert found[0][3] == "carve at most 3000, or raise its owner `agent.helper`'s `budget.tokens`"
