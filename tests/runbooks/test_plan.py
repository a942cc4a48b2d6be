"""Planning a runbook definition: levels, located refusals (cycles, approvals, bad arguments)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.analysis.resolve import resolve
from openseal.compiler.analysis.runbook_plan import plan_runbook
from openseal.compiler.load import load_definitions
from openseal.compiler.runbook_pipeline import prepare
from openseal.errors import UsageError
from tests.runbooks.support import diagnostics_of, plan_of, runbook, write_project


def test_levels_and_order(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  step "c" {
    uses = "set"
    args = { a = step.a.output, b = step.b.output }
  }
  step "b" { uses = "trigger" }
  step "a" { uses = "trigger" }
  step "d" {
    uses = "set"
    depends_on = [step.a]
  }
"""),
    )
    assert plan.levels() == [["a", "b"], ["c", "d"]]
    assert plan.order() == ["a", "b", "c", "d"]
    assert plan.steps["c"].needs == ("a", "b")
    assert plan.steps["d"].after == ("a",) and plan.steps["d"].needs == ()


def test_a_cycle_is_a_located_os406(tmp_path: Path) -> None:
    diagnostics = diagnostics_of(
        tmp_path,
        runbook("""
  step "a" {
    uses = "transform"
    args = { value = step.b.output }
  }
  step "b" {
    uses = "transform"
    args = { value = step.a.output }
  }
"""),
    )
    cycles = [d for d in diagnostics if d.code == "OS406"]
    assert len(cycles) == 1
    assert "a → b → a" in cycles[0].message
    assert cycles[0].span.line == 4  # step "a"


SKILLS = """
skill "send_email" {
  description = "Send an email."
  effect      = "external"
  input       = object({ to = string })
  adapter "http" {
    url = "http://127.0.0.1:9/send"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  approval {
    required  = true
    approvers = ["release-managers"]
  }
}
"""


def test_a_skill_that_requires_approval_is_refused_with_os508(tmp_path: Path) -> None:
    text = runbook(
        """
  step "notify" {
    skill = skill.send_email
    args  = { to = "users@example.org" }
  }
""",
        header=SKILLS,
    )
    diagnostics = diagnostics_of(tmp_path, text)
    refusals = [d for d in diagnostics if d.code == "OS508"]
    assert len(refusals) == 1
    line = text.splitlines().index("    skill = skill.send_email") + 1
    assert (refusals[0].span.line, refusals[0].span.column) == (line, 13)
    # The compiler's policy check fired on this path (its wording wins over the executor's guard).
    assert "runbooks run in-process with no approvals" in refusals[0].message


def test_the_executor_refuses_approval_skills_even_without_the_policy_check(
    tmp_path: Path,
) -> None:
    path = write_project(
        tmp_path,
        runbook(
            """
  step "notify" {
    skill = skill.send_email
    args  = { to = "users@example.org" }
  }
""",
            header=SKILLS,
        ),
    )
    loaded = load_definitions([path])
    analysis, _ = resolve(loaded.definitions)
    definition = analysis.get("runbook.r")
    assert definition is not None
    plan, diagnostics = plan_runbook(definition, analysis)
    assert plan is None
    assert [d.code for d in diagnostics] == ["OS508"]
    assert "runbooks cannot wait for an approval" in diagnostics[0].message


def test_unknown_and_missing_builtin_arguments(tmp_path: Path) -> None:
    diagnostics = diagnostics_of(
        tmp_path,
        runbook("""
  step "pick" {
    uses = "sort"
    args = { itemz = [1], by = "x" }
  }
"""),
    )
    by_code = {d.code: d for d in diagnostics}
    assert "no argument `itemz`" in by_code["OS101"].message
    assert by_code["OS101"].suggestion == "did you mean `items`?"
    assert by_code["OS101"].span.line == 6
    assert "needs the argument `items`" in by_code["OS102"].message


def test_several_runbooks_need_a_name(tmp_path: Path) -> None:
    path = write_project(
        tmp_path,
        runbook('step "a" { uses = "trigger" }')
        + 'runbook "other" {\n  step "b" { uses = "trigger" }\n}\n',
    )
    with pytest.raises(
        UsageError, match=r"several runbooks .*\(other, r\); choose one with --name"
    ):
        prepare(path)
    plan = prepare(path, "other").plan
    assert plan is not None and list(plan.steps) == ["b"]
    with pytest.raises(UsageError, match="did you mean `other`"):
        prepare(path, "othr")
