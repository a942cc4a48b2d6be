"""The python adapter: entry points, validated arguments, outputs, failures."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from openseal.compiler.definitions.specs import SkillSpec
from openseal.compiler.load import load_definitions
from openseal.skills import PythonAdapter, Skill, SkillCall, adapter_for
from tests.runtime.slow_skill import lock_held
from tests.runtime.support import eventually


def spec(tmp_path: Path, entry: str, *, effect: str = "read", output: str = "any") -> Skill:
    path = tmp_path / "skill.hcl"
    path.write_text(f'''
skill "s" {{
  description = "d"
  effect      = "{effect}"
  input       = object({{ a = number, b = optional(number, 1) }})
  output      = {output}
  adapter "python" {{
    entry_point = "{entry}"
  }}
}}
''')
    loaded = load_definitions([path])
    assert loaded.ok, [d.message for d in loaded.diagnostics]
    found = loaded.definitions[0].spec
    assert isinstance(found, SkillSpec)
    return Skill.from_settings(found.model_dump(mode="json"))  # type: ignore[arg-type]


def call(s: Skill, **args: object) -> SkillCall:
    # a bound only on a hang: a fresh child starts Python, and a loaded host can take seconds
    return SkillCall("s", s, args, 60.0)


def test_calls_the_function_with_keyword_arguments_and_defaults(tmp_path: Path) -> None:
    s = spec(tmp_path, "tests.skills.sample_skills:add", output="object({ sum = number })")
    assert isinstance(adapter_for(s), PythonAdapter)
    result = PythonAdapter().call(call(s, a=2))
    assert (result.outcome, result.output) == ("succeeded", {"sum": 3})


def test_arguments_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    result = PythonAdapter().call(call(spec(tmp_path, "tests.skills.sample_skills:add"), a="2"))
    assert result.outcome == "failed"
    assert result.error is not None and "a: expected number, got string" in result.error


def test_output_that_does_not_fit_fails(tmp_path: Path) -> None:
    s = spec(tmp_path, "tests.skills.sample_skills:add", output="string")
    result = PythonAdapter().call(call(s, a=1))
    assert result.outcome == "failed"
    assert result.error is not None and "returned output that does not fit" in result.error


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("tests.skills.no_such_module:f", "cannot import `tests.skills.no_such_module`"),
        ("tests.skills.sample_skills:missing", "has no function `missing`"),
        ("tests.skills.sample_skills:NOT_CALLABLE", "has no function `NOT_CALLABLE`"),
    ],
)
def test_bad_entry_points_fail_with_a_message(tmp_path: Path, entry: str, message: str) -> None:
    result = PythonAdapter().call(call(spec(tmp_path, entry), a=1))
    assert result.outcome == "failed"
    assert result.error is not None and message in result.error


@pytest.mark.parametrize(("effect", "outcome"), [("read", "failed"), ("write", "unknown")])
def test_an_exception_fails_a_read_and_is_unknown_for_an_effect(
    tmp_path: Path, effect: str, outcome: str
) -> None:
    s = spec(tmp_path, "tests.skills.sample_skills:boom", effect=effect)
    result = PythonAdapter().call(call(s, a=1))
    assert result.outcome == outcome
    assert result.error == "skill `s` raised ValueError: a is 1"


def test_an_effect_runs_in_a_child_process_that_sees_the_current_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = spec(tmp_path, "tests.skills.sample_skills:where", effect="write")
    monkeypatch.setenv("OPENSEAL_TEST_MARKER", "first")
    first = PythonAdapter().call(call(s, a=1))
    again = PythonAdapter().call(call(s, a=1))
    monkeypatch.setenv("OPENSEAL_TEST_MARKER", "second")
    changed = PythonAdapter().call(call(s, a=1))
    assert first.ok and again.ok and changed.ok, (first, again, changed)
    assert isinstance(first.output, dict) and isinstance(changed.output, dict)
    assert first.output["pid"] != os.getpid()
    assert first.output == again.output  # a warm child, reused
    assert changed.output["marker"] == "second"
    read = PythonAdapter().call(call(spec(tmp_path, "tests.skills.sample_skills:where"), a=1))
    assert isinstance(read.output, dict) and read.output["pid"] == os.getpid()


@pytest.mark.slow
def test_an_effect_past_its_timeout_is_killed_with_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the adapter returns, the call's process has been killed and reaped, and the process
    the skill started has been killed too: the lock they shared is soon free (it would be held
    for ten minutes otherwise)."""
    lock = tmp_path / "lock"
    monkeypatch.setenv("OPENSEAL_TEST_LOCK", str(lock))
    s = spec(tmp_path, "tests.skills.sample_skills:stuck", effect="write")
    result = PythonAdapter().call(SkillCall("s", s, {"a": 600}, 1.0))
    assert result.outcome == "unknown"
    assert result.error == "skill `s` gave no answer within 1s; its process was stopped"
    assert result.detail == {"ended": True}
    eventually(lambda: not lock_held(lock), timeout=30)


def test_a_child_its_own_deadline_stopped_first_is_stopped_not_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded host the child's own watchdog may kill it before this process looks at its
    deadline: the call still ended by its timeout, and says so."""
    from openseal.skills import child

    late = child._Child._read_reply
    # this process looks only after the child has ended (or five seconds past the deadline)
    monkeypatch.setattr(
        child._Child, "_read_reply", lambda self, deadline: late(self, deadline + 5)
    )
    lock = tmp_path / "lock"
    monkeypatch.setenv("OPENSEAL_TEST_LOCK", str(lock))
    s = spec(tmp_path, "tests.skills.sample_skills:stuck", effect="write")
    result = PythonAdapter().call(SkillCall("s", s, {"a": 600}, 1.0))
    assert result.outcome == "unknown"
    assert result.error == "skill `s` gave no answer within 1s; its process was stopped"


@pytest.mark.parametrize(
    ("entry", "outcome", "message"),
    [
        ("tests.skills.sample_skills:boom", "unknown", "skill `s` raised ValueError: a is 1"),
        ("tests.skills.sample_skills:vanish", "unknown", "its process ended without an answer"),
        ("tests.skills.sample_skills:not_json", "unknown", "returned a value that is not JSON"),
        ("tests.skills.sample_skills:missing", "failed", "has no function `missing`"),
    ],
)
def test_how_a_call_in_a_child_ends(tmp_path: Path, entry: str, outcome: str, message: str) -> None:
    result = PythonAdapter().call(call(spec(tmp_path, entry, effect="write"), a=1))
    assert result.outcome == outcome
    assert result.error is not None and message in result.error
    assert result.detail == ({"ended": True} if outcome == "unknown" else {})


def test_a_kept_child_that_died_while_idle_is_replaced(tmp_path: Path) -> None:
    s = spec(tmp_path, "tests.skills.sample_skills:where", effect="write")
    first = PythonAdapter().call(call(s, a=1))
    assert isinstance(first.output, dict)
    os.kill(int(first.output["pid"]), signal.SIGKILL)

    def dead() -> bool:
        status = Path(f"/proc/{first.output['pid']}/status")  # type: ignore[index]
        return not status.exists() or "State:\tZ" in status.read_text()

    eventually(dead, timeout=30)
    again = PythonAdapter().call(call(s, a=1))
    assert again.ok, again
    assert isinstance(again.output, dict) and again.output["pid"] != first.output["pid"]
