"""The python adapter: import ``module:function`` and call it with the validated arguments.

The function receives the arguments as keyword arguments (after the input
type's defaults are applied) and returns a JSON-like value, which becomes the
output. An exception is a failed call; the adapter cannot know whether a
failing function had an effect, so a non-read skill that raises is
``unknown``.

Where it runs depends on the skill's effect. A ``read`` runs in the caller's process (on the
caller's thread; a caller that stops waiting at the timeout abandons it, and repeating a read
is safe). A skill with any other effect runs in a child process (:mod:`openseal.skills.child`)
that is killed at the skill's timeout: when the adapter returns, the call has ended, so a
retry can never run next to it. A call stopped at its timeout is ``unknown`` with
``detail["ended"]`` set, as is one that raised or whose process died.
"""

from __future__ import annotations

from openseal.skills.base import (
    Outcome,
    SkillCall,
    SkillResult,
    check_args,
    check_output,
    failed,
    with_defaults,
)
from openseal.skills.child import ChildReply, call_in_child
from openseal.skills.skill import Skill
from openseal.skills.skill_host import EntryPointError, load_entry_point

__all__ = ["EntryPointError", "PythonAdapter", "load_entry_point"]


class PythonAdapter:
    kind = "python"

    @staticmethod
    def ends_in_time(spec: Skill) -> bool:
        """Whether a call of ``spec`` has certainly ended by its timeout when :meth:`call`
        returns: one in a child process has (it is killed at the deadline), so its caller
        need not bound it on a thread of its own (:mod:`openseal.skills.bounded`)."""
        return spec.effect != "read"

    def call(self, call: SkillCall) -> SkillResult:
        problem = check_args(call)
        if problem is not None:
            return problem
        spec = call.spec.adapter.python
        assert spec is not None, "PythonAdapter called for a skill without a python adapter"
        if call.spec.effect != "read":
            reply = call_in_child(spec.entry_point, with_defaults(call), call.timeout)
            return check_output(call, _effect_result(call, reply))
        try:
            function = load_entry_point(spec.entry_point)
        except EntryPointError as exc:
            return failed(str(exc))
        try:
            output = function(**with_defaults(call))
        except Exception as exc:  # user code: every exception is this call's failure
            return _raised(call, f"{exc.__class__.__name__}: {exc}")
        return check_output(call, SkillResult("succeeded", output))


def _raised(call: SkillCall, message: str) -> SkillResult:
    outcome: Outcome = "failed" if call.spec.effect == "read" else "unknown"
    return SkillResult(outcome, error=f"skill `{call.skill}` raised {message}")


def _effect_result(call: SkillCall, reply: ChildReply) -> SkillResult:
    """What a call in a child process comes to; every outcome but ``not_sent`` ran in it."""
    if reply.outcome == "output":
        return SkillResult("succeeded", reply.output)
    if reply.outcome in ("not_called", "not_sent"):
        return failed(reply.message)
    if reply.outcome == "raised":
        result = _raised(call, reply.message)
    elif reply.outcome == "stopped":
        result = SkillResult(
            "unknown",
            error=f"skill `{call.skill}` gave no answer within {call.timeout:g}s; "
            "its process was stopped",
        )
    else:
        result = SkillResult("unknown", error=f"skill `{call.skill}`: {reply.message}")
    return SkillResult(result.outcome, error=result.error, detail={"ended": True})
