"""``spawn`` states: both syntaxes, one digest; located errors for a join that cannot be met."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import compile_texts, project_text, write_project

SPAWN_HCL = """
workflow "fan" {
  owner = agent.helper
  start = state.ask
  input "question" {
    type = string
  }
  state "ask" {
    spawn {
      child "first" {
        workflow = "answer"
        input    = { question = input.question }
      }
      child "second" {
        workflow = "answer"
        input    = { question = "again: ${input.question}" }
      }
      join       = "quorum"
      quorum     = %s
      expires_in = "2h"
      detach     = true
    }
    next = state.done
    on "failed" {
      next = state.stopped
    }
    on "expired" {
      next = state.stopped
    }
  }
  state "done" {
    end = "completed"
  }
  state "stopped" {
    end = "failed"
  }
}
"""

SPAWN_YAML = """
workflow:
  fan:
    owner: agent.helper
    start: state.ask
    input:
      question: {type: string}
    state:
      ask:
        spawn:
          child:
            first: {workflow: answer, input: {question: "${input.question}"}}
            second: {workflow: answer, input: {question: "again: ${input.question}"}}
          join: quorum
          quorum: 1
          expires_in: 2h
          detach: true
        next: state.done
        on:
          failed: {next: state.stopped}
          expired: {next: state.stopped}
      done: {end: completed}
      stopped: {end: failed}
"""


def test_a_spawn_state_compiles_to_one_digest_in_both_syntaxes(tmp_path: Path) -> None:
    hcl = compile_texts(tmp_path / "hcl", {"p.hcl": project_text(), "f.hcl": SPAWN_HCL % 1})
    yaml = compile_texts(tmp_path / "yaml", {"p.hcl": project_text(), "f.yaml": SPAWN_YAML})
    assert hcl.documents["workflow.fan"].digest == yaml.documents["workflow.fan"].digest
    state = hcl.documents["workflow.fan"].document["graph"]["states"]["ask"]
    assert state["kind"] == "spawn"
    config = state["config"]
    assert sorted(config["child"]) == ["first", "second"]
    assert config["child"]["first"]["workflow"] == "answer"
    assert (config["join"], config["quorum"], config["expires_in"], config["detach"]) == (
        "quorum", 1, 7200, True,
    )  # fmt: skip


def test_workflows_without_spawn_keep_their_documents(tmp_path: Path) -> None:
    result = compile_texts(tmp_path, {"p.hcl": project_text()})
    states = result.documents["workflow.answer"].document["spec"]["state"]
    assert all("spawn" not in state for state in states.values())


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("quorum     = 3", "a quorum of 3 cannot be met by 2 children"),
        ("quorum     = 0", "greater than or equal to 1"),
    ],
)
def test_a_quorum_that_cannot_be_met_is_located(tmp_path: Path, setting: str, message: str) -> None:
    text = (SPAWN_HCL % 1).replace("quorum     = 1", setting)
    result = compile_paths([write_project(tmp_path, {"p.hcl": project_text(), "t.hcl": text})])
    found = [(d.span.line, d.message) for d in result.diagnostics if d.span.file.endswith("t.hcl")]
    assert len(found) == 1, found
    line, text_ = found[0]
    assert line == 19 and message in text_


def test_a_quorum_join_needs_its_number_and_only_it_takes_one(tmp_path: Path) -> None:
    no_number = (SPAWN_HCL % 1).replace("      quorum     = 1\n", "")
    result = compile_paths([write_project(tmp_path / "a", {"p.hcl": project_text(),
                                                          "t.hcl": no_number})])  # fmt: skip
    assert any("needs `quorum`" in d.message for d in result.diagnostics)
    not_quorum = (SPAWN_HCL % 1).replace('join       = "quorum"', 'join       = "any"')
    result = compile_paths([write_project(tmp_path / "b", {"p.hcl": project_text(),
                                                          "t.hcl": not_quorum})])  # fmt: skip
    assert any('`quorum` is for `join = "quorum"`' in d.message for d in result.diagnostics)


def test_a_child_input_is_type_checked_in_the_parent_scope(tmp_path: Path) -> None:
    text = (SPAWN_HCL % 1).replace("input.question }", "input.nope }")
    result = compile_paths([write_project(tmp_path, {"p.hcl": project_text(), "t.hcl": text})])
    assert any(d.span.file.endswith("t.hcl") and d.span.line == 12 for d in result.diagnostics), [
        (d.span.line, d.message) for d in result.diagnostics
    ]


def test_child_inputs_are_checked_against_a_workflow_compiled_alongside(tmp_path: Path) -> None:
    text = (SPAWN_HCL % 1).replace(
        "input    = { question = input.question }", "input    = { questoin = 42 }"
    )
    result = compile_paths([write_project(tmp_path, {"p.hcl": project_text(), "t.hcl": text})])
    found = [(d.code, d.span.line, d.message, d.suggestion) for d in result.diagnostics]
    assert found == [
        ("OS302", 12, "`workflow.answer` has no input `questoin`; its inputs are `question`",
         found[0][3]),
    ], found  # fmt: skip
    assert "question" in str(found[0][3])
    wrong_type = (SPAWN_HCL % 1).replace("{ question = input.question }", "{ question = 42 }")
    result = compile_paths([write_project(tmp_path / "b", {"p.hcl": project_text(),
                                                          "t.hcl": wrong_type})])  # fmt: skip
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("OS301", 12)]


def test_a_child_of_a_workflow_deployed_elsewhere_is_not_checked(tmp_path: Path) -> None:
    text = (SPAWN_HCL % 1).replace('workflow = "answer"', 'workflow = "elsewhere"')
    compile_texts(tmp_path, {"p.hcl": project_text(), "f.hcl": text})
