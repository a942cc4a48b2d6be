"""The DAG executor: order, real concurrency, timeouts, failure policies, guards, outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runbooks.executor import RunOptions, StepOutcome, run
from openseal.runbooks.inputs import InputTypeError
from tests.runbooks.support import plan_of, runbook


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def step_changed(self, outcome: StepOutcome) -> None:
        self.events.append((outcome.id, outcome.status))


def _overlap(a: StepOutcome, b: StepOutcome) -> bool:
    assert a.started is not None and a.finished is not None
    assert b.started is not None and b.finished is not None
    return a.started < b.finished and b.started < a.finished


def test_dependencies_run_first_and_outputs_flow(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  input "n" { type = number }
  step "double" {
    uses = "transform"
    args = { value = input.n * 2 }
  }
  step "plus_one" {
    uses = "transform"
    args = { value = step.double.output + 1 }
  }
  step "last" {
    uses = "set"
    args = { total = step.plus_one.output, first = step.double.output }
  }
  output "total" {
    type  = number
    value = step.last.output.total
  }
"""),
    )
    recorder = Recorder()
    result = run(plan, {"n": 5}, RunOptions(observer=recorder))
    assert result.ok, result.error
    assert result.outputs == {"total": 11}
    finished = [sid for sid, status in recorder.events if status == "succeeded"]
    assert finished == ["double", "plus_one", "last"]
    s = result.steps
    assert s["double"].finished <= s["plus_one"].started  # type: ignore[operator]
    assert s["plus_one"].finished <= s["last"].started  # type: ignore[operator]


TWO_DELAYS = runbook("""
  step "a" {
    uses = "delay"
    args = { seconds = 0.2 }
  }
  step "b" {
    uses = "delay"
    args = { seconds = 0.2 }
  }
  step "after" {
    uses = "set"
    args = { a = step.a.output, b = step.b.output }
  }
""")


def test_independent_steps_run_concurrently(tmp_path: Path) -> None:
    result = run(plan_of(tmp_path, TWO_DELAYS), {})
    assert result.ok, result.error
    assert _overlap(result.steps["a"], result.steps["b"])
    assert result.steps["after"].started >= max(  # type: ignore[operator]
        result.steps["a"].finished,
        result.steps["b"].finished,  # type: ignore[type-var]
    )


def test_concurrency_one_runs_steps_one_at_a_time(tmp_path: Path) -> None:
    result = run(plan_of(tmp_path, TWO_DELAYS), {}, RunOptions(concurrency=1))
    assert result.ok, result.error
    assert not _overlap(result.steps["a"], result.steps["b"])


def test_step_timeout_fails_the_step(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  step "slow" {
    uses    = "delay"
    args    = { seconds = 30 }
    timeout = "100ms"
  }
"""),
    )
    result = run(plan, {})
    assert result.status == "failed"
    slow = result.steps["slow"]
    assert slow.status == "failed"
    assert slow.error == "timed out after 0.1s"
    assert slow.duration is not None and slow.duration < 10  # generous: only catches a hang


POLICY = """
  on_failure = "{policy}"
  input "divisor" {{
    type = number
  }}
  step "boom" {{
    uses = "transform"
    args = {{ value = 1 / input.divisor }}
  }}
  step "slow" {{
    uses = "delay"
    args = {{ seconds = 20 }}
  }}
  step "independent" {{
    uses = "transform"
    depends_on = [step.quick]
    args = {{ value = "ran" }}
  }}
  step "quick" {{
    uses = "delay"
    args = {{ seconds = 0.05 }}
  }}
  step "dependent" {{
    uses = "transform"
    args = {{ value = step.boom.output }}
  }}
  step "grandchild" {{
    uses = "transform"
    depends_on = [step.dependent]
  }}
"""


def test_fail_fast_cancels_running_and_pending_steps(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, runbook(POLICY.format(policy="fail_fast")))
    result = run(plan, {"divisor": 0})
    assert result.status == "failed"
    statuses = {sid: o.status for sid, o in result.steps.items()}
    assert statuses["boom"] == "failed"
    assert "division_by_zero" not in (result.steps["boom"].error or "")
    assert "`/` by zero" in (result.steps["boom"].error or "")
    assert statuses["slow"] == "canceled"
    assert statuses["independent"] == "canceled"
    assert result.steps["slow"].error == "canceled: `boom` failed (on_failure = fail_fast)"
    assert result.duration < 15  # the 20 s delay did not run out


def test_continue_runs_what_does_not_depend_on_the_failure(tmp_path: Path) -> None:
    text = POLICY.format(policy="continue").replace("seconds = 20", "seconds = 0.05")
    result = run(plan_of(tmp_path, runbook(text)), {"divisor": 0})
    assert result.status == "failed"
    statuses = {sid: o.status for sid, o in result.steps.items()}
    assert statuses == {
        "boom": "failed",
        "quick": "succeeded",
        "slow": "succeeded",
        "independent": "succeeded",
        "dependent": "skipped",
        "grandchild": "skipped",
    }
    assert result.steps["dependent"].error == "`boom` failed"
    assert result.steps["grandchild"].error == "`dependent` skipped"
    assert result.error is not None and result.error.startswith("step `boom` failed")


def test_false_guard_skips_readers_of_the_output_but_not_order_only_dependents(
    tmp_path: Path,
) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  input "go" { type = bool }
  step "check" {
    uses = "if"
    args = { condition = input.go }
  }
  step "guarded" {
    uses = "transform"
    when = step.check.output.result
    args = { value = "did it" }
  }
  step "reader" {
    uses = "transform"
    args = { value = step.guarded.output }
  }
  step "ordered" {
    uses = "transform"
    depends_on = [step.guarded]
    args = { value = "still ran" }
  }
"""),
    )
    skipped = run(plan, {"go": False})
    assert skipped.ok, skipped.error
    assert skipped.steps["guarded"].status == "skipped"
    assert skipped.steps["guarded"].error == "`when` is false"
    assert skipped.steps["reader"].status == "skipped"
    assert skipped.steps["ordered"].status == "succeeded"
    taken = run(plan, {"go": True})
    assert {o.status for o in taken.steps.values()} == {"succeeded"}
    assert taken.steps["reader"].output == "did it"


def test_output_of_the_wrong_type_fails_the_run(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  input "text" { type = string }
  step "parts" {
    uses = "split"
    args = { text = input.text }
  }
  output "first" {
    type  = string
    value = step.parts.output
  }
"""),
    )
    result = run(plan, {"text": "a,b"})
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(
        "output `first` does not fit string"
    )


def test_inputs_are_checked_before_anything_runs(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  input "n" { type = number }
  step "s" {
    uses = "transform"
    args = { value = input.n }
  }
"""),
    )
    recorder = Recorder()
    with pytest.raises(InputTypeError, match="input `n` does not fit number"):
        run(plan, {"n": "three"}, RunOptions(observer=recorder))
    assert recorder.events == []


def test_result_json_has_status_offsets_and_durations(tmp_path: Path) -> None:
    result = run(plan_of(tmp_path, TWO_DELAYS), {})
    data = result.to_json()
    assert data["status"] == "succeeded"
    step = data["steps"]["a"]  # type: ignore[index]
    assert set(step) == {"status", "output", "error", "started", "finished", "duration"}
    assert step["output"] == {"seconds": 0.2}


def test_a_guard_that_is_not_a_bool_fails_the_step(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        runbook("""
  input "v" { type = any }
  step "s" {
    uses = "transform"
    when = input.v
  }
"""),
    )
    result = run(plan, {"v": "yes"})
    assert result.steps["s"].status == "failed"
    assert (result.steps["s"].error or "").startswith("`when` gave string, not true or false")
