"""The built-in runbook step types as the compiler knows them: the arguments each takes.

Planning a runbook checks a step's arguments against these declarations, and
the node/edge reader maps its node attributes onto them. What each type *does*
is the runbook executor's (``openseal.runbooks.steps``), which keeps one handler
per name declared here.

=============  ==========================================  ===============================
type           arguments                                   output
=============  ==========================================  ===============================
trigger        (value)                                     ``value``, else the run's input
http           method, url, headers, body, expect_status   ``{status, headers, body}``
transform/set  value, or any arguments                     ``value``, else the arguments
if             condition                                   ``{result}``
switch         value, cases (list or map), default         ``{case, matched}``
filter         items, predicate (over ``item``)            the items that satisfy it
sort           items, by (field path), descending          the sorted items
aggregate      items, op, field                            a number (``null`` when empty)
merge          values (maps, or lists)                     one map, or one list
split          text, separator, trim                       a list of strings
delay          seconds                                     ``{seconds}``
=============  ==========================================  ===============================
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StepType:
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    #: arguments evaluated once per item with ``item`` bound, not before the step runs
    lazy: tuple[str, ...] = ()
    #: any argument name is accepted (``transform``/``set`` build objects)
    open: bool = False

    @property
    def accepted(self) -> tuple[str, ...]:
        return (*self.required, *self.optional)


#: Every built-in step type, by the name written in ``uses``.
STEP_TYPES: dict[str, StepType] = {
    "trigger": StepType(optional=("value",)),
    "http": StepType(("url",), ("method", "headers", "body", "expect_status")),
    "transform": StepType(optional=("value",), open=True),
    "set": StepType(optional=("value",), open=True),
    "if": StepType(("condition",)),
    "switch": StepType(("value", "cases"), ("default",)),
    "filter": StepType(("items", "predicate"), lazy=("predicate",)),
    "sort": StepType(("items",), ("by", "descending")),
    "aggregate": StepType(("items", "op"), ("field",)),
    "merge": StepType(("values",)),
    "split": StepType(("text",), ("separator", "trim")),
    "delay": StepType(("seconds",)),
}

#: Names a lazy argument may use besides the step scope.
ITEM_ROOT = "item"

__all__ = ["ITEM_ROOT", "STEP_TYPES", "StepType"]
