"""Skill steps through the executor: python entry points, retries, nested runbooks."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from openseal.runbooks.executor import run
from tests.runbooks.support import plan_of
from tests.runtime.slow_skill import lock_held
from tests.runtime.support import eventually

SKILLS = """
skill "add" {
  description = "Add two numbers."
  effect      = "read"
  input       = object({ a = number, b = optional(number, 1) })
  output      = object({ sum = number })
  adapter "python" {
    entry_point = "tests.skills.sample_skills:add"
  }
}

skill "flaky_read" {
  description = "A read that fails before it works."
  effect      = "read"
  input       = object({ key = string, failures = number })
  adapter "python" {
    entry_point = "tests.skills.sample_skills:flaky"
  }
  retry {
    attempts = 3
    backoff  = "10ms"
  }
}

skill "flaky_write" {
  description = "A write that fails once."
  effect      = "write"
  input       = object({ key = string, failures = number })
  adapter "python" {
    entry_point = "tests.skills.sample_skills:flaky"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

skill "stuck_write" {
  description = "A write that holds a lock for `a` seconds."
  effect      = "write"
  input       = object({ a = number })
  timeout     = "1s"
  adapter "python" {
    entry_point = "tests.skills.sample_skills:stuck"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

skill "double_via_runbook" {
  description = "Doubles a number with a runbook."
  effect      = "read"
  input       = object({ n = number })
  adapter "runbook" {
    runbook = runbook.double
  }
}

runbook "double" {
  input "n" { type = number }
  step "twice" {
    uses = "transform"
    args = { value = input.n * 2 }
  }
  output "value" {
    type  = number
    value = step.twice.output
  }
}
"""


def _runbook(body: str) -> str:
    return f'{SKILLS}\nrunbook "main" {{\n{body}\n}}\n'


def test_python_skill_step_and_a_nested_runbook(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        _runbook("""
  step "sum" {
    skill = skill.add
    args  = { a = 2 }
  }
  step "doubled" {
    skill = skill.double_via_runbook
    args  = { n = step.sum.output.sum }
  }
  output "result" {
    type  = number
    value = step.doubled.output.value
  }
"""),
        select="main",
    )
    result = run(plan, {})
    assert result.ok, result.error
    assert result.steps["sum"].output == {"sum": 3}
    assert result.outputs == {"result": 6}


def test_a_read_is_retried_but_an_effect_is_not(tmp_path: Path) -> None:
    key = uuid.uuid4().hex
    plan = plan_of(
        tmp_path,
        _runbook(f"""
  on_failure = "continue"
  step "read" {{
    skill = skill.flaky_read
    args  = {{ key = "r{key}", failures = 2 }}
  }}
  step "write" {{
    skill = skill.flaky_write
    args  = {{ key = "w{key}", failures = 1 }}
  }}
"""),
        select="main",
    )
    result = run(plan, {})
    assert result.steps["read"].status == "succeeded"
    assert result.steps["read"].output == {"attempts": 3}
    write = result.steps["write"]
    assert write.status == "failed"
    assert write.error is not None and write.error.startswith(
        "outcome unknown: skill `flaky_write`"
    )


def test_an_effect_past_its_timeout_is_stopped_not_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step fails at the skill's timeout (its outcome unknown), and the call's process is
    killed with what it started: the lock they hold is soon free (it would be held for ten
    minutes otherwise)."""
    lock = tmp_path / "lock"
    monkeypatch.setenv("OPENSEAL_TEST_LOCK", str(lock))
    plan = plan_of(
        tmp_path,
        _runbook("""
  step "write" {
    skill = skill.stuck_write
    args  = { a = 600 }
  }
"""),
        select="main",
    )
    result = run(plan, {})
    write = result.steps["write"]
    assert write.status == "failed"
    assert write.error is not None and write.error.startswith(
        "outcome unknown: skill `stuck_write` gave no answer within 1s; its process was stopped"
    )
    eventually(lambda: not lock_held(lock), timeout=30)
