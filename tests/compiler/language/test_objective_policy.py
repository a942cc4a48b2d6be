"""A workflow's ``objective`` block: both syntaxes, one digest; its success criterion reads
``input`` and the declared ``output`` and must be a bool; a workflow without one keeps the
digest it had before the block existed."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import CompileResult, compile_paths

HCL = """
model "m" {
  provider = "scripted"
  model    = "m"
}

agent "buyer" {
  model        = model.m
  instructions = "Buy within the budget."
}

workflow "quote" {
  owner = agent.buyer
  start = state.quote
  input "budget" {
    type = number
  }
  output "total" {
    type  = number
    value = state.quote.output.total
  }
  objective {
    priority = 10
    success  = SUCCESS
    retry {
      max_attempts = 3
      backoff      = "10m"
    }
  }
  state "quote" {
    transform {
      output = { total = 11490 }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""

YAML = """
model:
  m: {provider: scripted, model: m}
agent:
  buyer: {model: model.m, instructions: Buy within the budget.}
workflow:
  quote:
    owner: agent.buyer
    start: state.quote
    input:
      budget: {type: number}
    output:
      total: {type: number, value: "${state.quote.output.total}"}
    objective:
      priority: 10
      success: "${output.total <= input.budget}"
      retry: {max_attempts: 3, backoff: 10m}
    state:
      quote:
        transform:
          output: {total: 11490}
        next: state.done
      done: {end: completed}
"""


def compile_text(tmp_path: Path, name: str, text: str) -> CompileResult:
    folder = tmp_path / name.split(".")[0]
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    return compile_paths([folder])


def test_the_objective_block_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    hcl = compile_text(tmp_path, "a.hcl", HCL.replace("SUCCESS", "output.total <= input.budget"))
    yaml = compile_text(tmp_path, "b.yaml", YAML)
    assert hcl.ok and yaml.ok, [d.message for d in (*hcl.diagnostics, *yaml.diagnostics)]
    quote = hcl.documents["workflow.quote"]
    assert quote.digest == yaml.documents["workflow.quote"].digest
    policy = quote.document["spec"]["objective"]
    assert policy["priority"] == 10
    assert policy["retry"] == {"max_attempts": 3, "backoff": 600, "max_backoff": 3600}
    assert policy["success"]["node"] == "binary"


def test_a_workflow_without_an_objective_block_has_none_in_its_document(
    tmp_path: Path,
) -> None:
    text = HCL[: HCL.index("  objective {")] + HCL[HCL.index('  state "quote"') :]
    result = compile_text(tmp_path, "a.hcl", text)
    assert result.ok
    assert "objective" not in result.documents["workflow.quote"].document["spec"]


@pytest.mark.parametrize(
    ("success", "code", "message"),
    [
        ("output.totl > 1", "OS201", "`output.totl` is not a declared output"),
        ("state.quote.output.total > 1", "OS201", "`state` is not available"),
        ("output.total", "OS301", "the success criterion expects bool"),
    ],
)
def test_success_criteria_are_checked(
    tmp_path: Path, success: str, code: str, message: str
) -> None:
    result = compile_text(tmp_path, "a.hcl", HCL.replace("SUCCESS", success))
    assert not result.ok
    [found] = [d for d in result.diagnostics if d.code == code]
    assert message in found.message
    success_line = [i for i, line in enumerate(HCL.splitlines(), 1) if "success  =" in line]
    assert [found.span.line] == success_line
