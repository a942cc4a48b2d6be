"""Template directives are refused where they are written; `%%{` is a literal `%{`."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import AGENT, BINDING, MODEL, SKILL, WORKFLOW_ITEMS

GOAL = 'goal   = "Answer ${input.question}"'

YAML = """model:
  m: {{provider: scripted, model: scripted-small}}
agent:
  helper: {{model: model.m, instructions: Answer the question.}}
workflow:
  answer:
    owner: agent.helper
    start: state.think
    input:
      question: {{type: string}}
    state:
      think:
        turn:
          agent: agent.helper
          goal: "{goal}"
          output: object({{ answer = string }})
        next: state.done
      done: {{end: completed}}
"""


def write(tmp_path: Path, syntax: str, goal: str) -> Path:
    if syntax == "yaml":
        path = tmp_path / "all.yaml"
        path.write_text(YAML.format(goal=goal), encoding="utf-8")
        return path
    items = [item.replace(GOAL, f'goal   = "{goal}"') for item in WORKFLOW_ITEMS]
    body = "\n".join(items)
    path = tmp_path / "all.hcl"
    path.write_text(
        "\n".join([MODEL, SKILL, AGENT, BINDING, f'workflow "answer" {{\n{body}\n}}\n'])
    )
    return path


def goal_of(result: object) -> object:
    documents = result.documents  # type: ignore[attr-defined]
    state = documents["workflow.answer"].document["graph"]["states"]["think"]
    return state["config"]["goal"]


@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
@pytest.mark.parametrize(
    ("goal", "column"),
    [
        ("Answer %{ if true }now%{ endif }", len("Answer ")),
        ("Answer ${input.question} %{ for w in input.question }x%{ endfor }", 25),
    ],
)
def test_a_directive_is_os107_at_its_percent(
    tmp_path: Path, syntax: str, goal: str, column: int
) -> None:
    path = write(tmp_path, syntax, goal)
    result = compile_paths([path])
    found = [d for d in result.diagnostics if d.code == "OS107"]
    assert found and not result.ok, result.diagnostics
    lines = path.read_text().splitlines()
    line = next(number for number, text in enumerate(lines, start=1) if goal in text)
    text = lines[line - 1]
    first = found[0]
    start = text.index(goal) + column + 1
    assert (first.span.line, first.span.column, first.span.end_column) == (line, start, start + 2)
    assert text[first.span.column - 1 : first.span.end_column - 1] == "%{"
    assert first.message == "template directives (`%{ if }`, `%{ for }`) are not supported"
    assert first.suggestion is not None and "`%%{`" in first.suggestion
    assert len(found) == 2  # both directives of the goal, each where it is written


@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
def test_the_escape_is_a_literal_percent_brace(tmp_path: Path, syntax: str) -> None:
    result = compile_paths([write(tmp_path, syntax, "Grow 100%%{ } by ${input.question}")])
    assert result.ok, result.diagnostics
    goal = goal_of(result)
    assert isinstance(goal, dict) and goal["node"] == "template"
    assert goal["parts"][0] == "Grow 100%{ } by "
