"""The python adapter: import ``module:function`` and call it with the validated arguments.

The function receives the arguments as keyword arguments (after the input
type's defaults are applied) and returns a JSON-like value, which becomes the
output. An exception is a failed call; the adapter cannot know whether a
failing function had an effect, so a non-read skill that raises is
``unknown``. Timeouts are the caller's to enforce.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from openseal.skills.base import (
    Outcome,
    SkillCall,
    SkillResult,
    check_args,
    check_output,
    failed,
    with_defaults,
)


class EntryPointError(Exception):
    pass


def load_entry_point(entry_point: str) -> Callable[..., Any]:
    """``"package.module:function"`` → the function; :class:`EntryPointError` says what is wrong."""
    module_name, _, attribute = entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is the skill's failure
        raise EntryPointError(
            f"cannot import `{module_name}` for `{entry_point}`: {exc.__class__.__name__}: {exc}"
        ) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        message = f"`{module_name}` has no function `{attribute}` (entry point `{entry_point}`)"
        raise EntryPointError(message)
    return function  # type: ignore[no-any-return]


class PythonAdapter:
    kind = "python"

    def call(self, call: SkillCall) -> SkillResult:
        problem = check_args(call)
        if problem is not None:
            return problem
        spec = call.spec.adapter.python
        assert spec is not None, "PythonAdapter called for a skill without a python adapter"
        try:
            function = load_entry_point(spec.entry_point)
        except EntryPointError as exc:
            return failed(str(exc))
        try:
            output = function(**with_defaults(call))
        except Exception as exc:  # user code: every exception is this call's failure
            outcome: Outcome = "failed" if call.spec.effect == "read" else "unknown"
            message = f"skill `{call.skill}` raised {exc.__class__.__name__}: {exc}"
            return SkillResult(outcome, error=message)
        return check_output(call, SkillResult("succeeded", output))
