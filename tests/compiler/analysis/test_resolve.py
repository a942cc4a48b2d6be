"""Resolve: the symbol table, reference kinds, expression scopes and grants."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.analysis.expression_scopes import (
    Namespace,
    Scope,
    Value,
    check_reference,
    skill_scope,
)
from openseal.compiler.analysis.resolve import resolve
from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.driver import Stage
from openseal.compiler.lang import expr as ex
from openseal.compiler.load import load_definitions
from openseal.compiler.output.render_diagnostics import render_human
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax.spans import Span
from tests.golden_helper import assert_golden

ROOT = Path(__file__).resolve().parents[3]
INPUTS = Path("tests/golden/resolve/inputs")

PREAMBLE = """
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}
agent "writer" {
  model        = model.m
  instructions = "Write."
}
team "desk" {
  role "writer" {
    agent = agent.writer
  }
}
skill "lookup" {
  description = "Look up."
  effect      = "read"
  input       = object({ q = string })
  adapter "python" {
    entry_point = "x:lookup"
  }
}
"""


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def resolve_text(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = tmp_path / "defs.hcl"
    path.write_text(PREAMBLE + text, encoding="utf-8")
    loaded = load_definitions([path])
    assert loaded.ok, loaded.diagnostics
    return resolve(loaded.definitions)[1]


def workflow(states: str, extra: str = "") -> str:
    return f"""
workflow "w" {{
  owner = agent.writer
  start = state.first
  input "topic" {{
    type = object({{ title = string, tags = list(string) }})
  }}
  {extra}
  {states}
  state "done" {{
    end = "completed"
  }}
}}
"""


@pytest.mark.parametrize("name", ["os201_unresolved.hcl", "os202_wrong_kind.hcl"])
def test_golden_resolve(name: str) -> None:
    loaded = load_definitions([INPUTS / name])
    assert loaded.ok, loaded.diagnostics
    _, found = resolve(loaded.definitions)
    assert {d.code for d in found} == {name[:5].upper()}
    text = render_human(found, loaded.sources, color=False, file_count=1)
    assert_golden(text, f"resolve/{Path(name).with_suffix('.txt')}")


@pytest.mark.parametrize("example", ["procurement", "release_note"])
@pytest.mark.parametrize("syntax", ["hcl", "yaml"])
def test_examples_resolve_cleanly(example: str, syntax: str) -> None:
    loaded = load_definitions([Path("definitions") / example / syntax])
    analysis, found = resolve(loaded.definitions)
    assert found == []
    assert analysis.grants
    assert {d.key for d in loaded.definitions} == set(analysis.definitions)


def test_symbol_table_spans_files(tmp_path: Path) -> None:
    (tmp_path / "a.hcl").write_text(PREAMBLE, encoding="utf-8")
    (tmp_path / "b.hcl").write_text(
        'binding "b" {\n  skill = skill.lookup\n  to = team.desk.role.writer\n}\n', encoding="utf-8"
    )
    loaded = load_definitions([tmp_path])
    analysis, found = resolve(loaded.definitions)
    assert found == []
    (grant,) = analysis.grants
    assert (grant.binding, grant.skill, grant.grantee) == (
        "b",
        "skill.lookup",
        "team.desk.role.writer",
    )


@pytest.mark.parametrize(
    ("to", "grantee"),
    [("agent.writer", "agent.writer"), ("team.desk", "team.desk")],
)
def test_grantees_are_normalised(tmp_path: Path, to: str, grantee: str) -> None:
    path = tmp_path / "defs.hcl"
    path.write_text(PREAMBLE + f'binding "b" {{\n  skill = skill.lookup\n  to = {to}\n}}\n')
    analysis, _ = resolve(load_definitions([path]).definitions)
    assert [g.grantee for g in analysis.grants] == [grantee]


def test_binding_to_unknown_principal_grants_nothing(tmp_path: Path) -> None:
    path = tmp_path / "defs.hcl"
    path.write_text(PREAMBLE + 'binding "b" {\n  skill = skill.lookup\n  to = agent.nobody\n}\n')
    analysis, found = resolve(load_definitions([path]).definitions)
    assert analysis.grants == ()
    assert [d.code for d in found] == ["OS201"]


def test_turn_agent_may_be_a_role_but_not_a_team(tmp_path: Path) -> None:
    ok = workflow(
        'state "first" {\n turn {\n agent = team.desk.role.writer\n goal = "x"\n }\n'
        " next = state.done\n }"
    )
    assert resolve_text(tmp_path, ok) == []
    bad = ok.replace("team.desk.role.writer", "team.desk")
    assert [d.code for d in resolve_text(tmp_path, bad)] == ["OS202"]


def test_for_each_item_is_in_scope_only_inside_do(tmp_path: Path) -> None:
    states = """
  state "first" {
    for_each {
      items = input.topic.tags
      item  = "tag"
      do {
        turn {
          agent = agent.writer
          goal  = "Write about ${tag}"
        }
      }
    }
    next = state.after
  }
  state "after" {
    turn {
      agent = agent.writer
      goal  = "Summarise ${tag}"
    }
    next = state.done
  }
"""
    text = workflow(states)
    found = resolve_text(tmp_path, text)
    summarise_line = (PREAMBLE + text).splitlines().index('      goal  = "Summarise ${tag}"') + 1
    assert [(d.code, d.span.line) for d in found] == [("OS201", summarise_line)]
    assert "`tag` is not available" in found[0].message


def test_proposal_root_in_expressions(tmp_path: Path) -> None:
    states = """
  state "first" {
    proposal "note" {
      skill = skill.lookup
      args  = { q = input.topic.title }
    }
    next = state.use
  }
  state "use" {
    transform {
      output = proposal.note
    }
    next = state.check
  }
  state "check" {
    transform {
      output = proposal.nope
    }
    next = state.done
  }
"""
    found = resolve_text(tmp_path, workflow(states))
    assert [d.code for d in found] == ["OS201"]
    assert "`proposal.nope` is not a declared proposal" in found[0].message
    assert found[0].suggestion == "did you mean `proposal.note`?"


def test_workflow_output_uses_state_roots(tmp_path: Path) -> None:
    states = """
  state "first" {
    turn {
      agent  = agent.writer
      goal   = "x"
      output = object({ text = string })
    }
    next = state.done
  }
"""
    extra = 'output "text" {\n value = state.first.output.text\n }'
    assert resolve_text(tmp_path, workflow(states, extra)) == []
    broken = extra.replace("state.first", "step.first")
    found = resolve_text(tmp_path, workflow(states, broken))
    assert [d.code for d in found] == ["OS201"]
    assert "`input`, `proposal`, `state`" in found[0].message


# --------------------------------------------------------------------------- scope rules

SPAN = Span.point("<test>")


def ref(text: str) -> ex.Ref:
    node, diagnostics = ex.parse_expression(text, SPAN)
    assert diagnostics == [] and isinstance(node, ex.Ref)
    return node


def test_skill_scope_roots() -> None:
    scope = skill_scope("s")
    assert scope.roots == ["action", "args", "config"]
    for ok in ("args.q", "config.base_url", "action.key"):
        assert check_reference(ref(ok), scope) is None
    found = check_reference(ref("credential.x"), scope)
    assert found is not None and found.code == "OS201"
    assert found.suggestion is not None and "credential" in found.suggestion
    found = check_reference(ref("argz.q"), scope)
    assert found is not None and found.suggestion == "did you mean `args`?"


def test_namespace_needs_a_declared_name_and_its_then_step() -> None:
    scope = Scope(
        "a test",
        "workflow.t",
        {"state": Namespace("state", ("draft",), then="output")},
        {"item": Value()},
    )
    assert check_reference(ref("state.draft.output.x"), scope) is None
    assert check_reference(ref("item.anything[0]"), scope) is None
    missing_then = check_reference(ref("state.draft.x"), scope)
    assert missing_then is not None and "state.draft.output" in missing_then.message
    bare = check_reference(ref("state"), scope)
    assert bare is not None and "needs the name" in bare.message
    unknown = check_reference(ref("state.drafts.output"), scope)
    assert unknown is not None and unknown.suggestion == "did you mean `state.draft`?"


def test_namespace_can_leave_unknown_names_to_another_check() -> None:
    scope = Scope("a test", "runbook.r", {"step": Namespace("step", ("a",), "output", False)})
    assert check_reference(ref("step.b.output"), scope) is None
    assert check_reference(ref("step.a.x"), scope) is not None


def test_definitions_with_errors_are_reported_once() -> None:
    name = "broken_definitions.hcl"
    result = compile_paths([INPUTS / name], through=Stage.CHECK)
    codes = {d.code for d in result.diagnostics}
    assert "OS201" not in codes
    assert not any(code.startswith("OS5") for code in codes)
    assert "OS402" in codes  # checks within a definition that decoded still run
    text = render_human(result.diagnostics, result.loaded.sources, color=False, file_count=1)
    assert_golden(text, "resolve/broken_definitions.txt")
