"""One run's verdict: the recorded path against the re-driven one, mark by mark.

``same``: identical path and identical payloads, up to where the record ends; ``diverges``
at the first state where the two differ, with why (:func:`why_different`); ``needs_input``
where the re-drive asks for something that was never recorded, with what it would ask;
``unsupported`` where it meets a state kind replay does not re-drive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openseal.runtime.compiled import CompiledWorkflow
from openseal.runtime.replay.drive import Trace
from openseal.runtime.replay.history import Mark

SAME, DIVERGES, NEEDS_INPUT, UNSUPPORTED = "same", "diverges", "needs_input", "unsupported"
VERDICTS = (SAME, DIVERGES, NEEDS_INPUT, UNSUPPORTED)


@dataclass(frozen=True)
class Verdict:
    verdict: str
    #: the first differing state (empty for ``same``)
    state: str = ""
    why: str = ""

    def line(self) -> str:
        if self.verdict == SAME:
            return "same"
        if self.verdict == DIVERGES:
            return f"diverges at {self.state}: {self.why}"
        if self.verdict == NEEDS_INPUT:
            return f"needs new input at {self.state}: {self.why}"
        return f"not replayed at {self.state}: {self.why}"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "state": self.state or None, "why": self.why or None}


def judge(
    recorded: list[Mark],
    trace: Trace,
    workflow: CompiledWorkflow,
    kinds: Mapping[str, str] | None = None,
) -> Verdict:
    """The verdict on a re-drive ``trace`` through ``workflow`` of a run recorded as
    ``recorded``; ``kinds``: the kind of each state in the version the run is pinned to."""
    replayed = trace.marks
    for index, mark in enumerate(replayed):
        before = recorded[index] if index < len(recorded) else None
        if before != mark:
            state = before.state if before is not None else mark.state
            why = why_different(before, mark, workflow, kinds or {})
            return Verdict(DIVERGES, state, why)
    if trace.stop == "needs_input":
        return Verdict(NEEDS_INPUT, trace.state, f"would ask for {trace.why}")
    if trace.stop == "unsupported":
        return Verdict(UNSUPPORTED, trace.state, f"replay does not re-drive {trace.why}")
    if len(recorded) > len(replayed):
        missing = recorded[len(replayed)]
        return Verdict(
            DIVERGES,
            missing.state,
            f"stops ({trace.why}) where the run went on: {describe(missing)}",
        )
    return Verdict(SAME)


def why_different(
    before: Mark | None,
    after: Mark,
    workflow: CompiledWorkflow,
    kinds: Mapping[str, str] | None = None,
) -> str:
    """Why the replayed ``after`` (through ``workflow``) differs from the recorded ``before``
    (None: nothing was recorded there); ``kinds``: the recorded states' kinds."""
    if before is None:
        return f"goes on where the recorded run stopped: {describe(after)}"
    if after.what == "budget_exhausted":
        return f"budget exceeded: {after.why}"
    if before.what == after.what == "advanced":
        return _transition(before, after, workflow, kinds or {})
    if before.what == after.what == "drafted":
        return (
            f"the payload of {after.get('name')} changes: "
            f"{before.get('payload')[:12]} -> {after.get('payload')[:12]}"
        )
    if before.what == after.what == "asked":
        return f"the approval is asked for another payload of {after.get('name')}"
    if after.what == "drafted":
        return f"an action is added: {after.get('name')} is drafted"
    if before.what == "drafted":
        return f"an action is dropped: {before.get('name')} is no longer drafted"
    if after.what == "asked":
        return f"an approval is newly asked for {after.get('name')}"
    if before.what == "asked":
        return f"the approval of {before.get('name')} is no longer asked"
    if after.what == "denied":
        return f"the action of {after.get('name')} would be denied: {after.why}"
    if after.what == "tool_refused":
        return f"the tool call {after.get('skill')} would be refused"
    return f"{describe(after)} (recorded: {describe(before)})"


def _transition(
    before: Mark, after: Mark, workflow: CompiledWorkflow, kinds: Mapping[str, str]
) -> str:
    if before.get("event") != after.get("event"):
        return f"leaves by {after.get('event')} (recorded: {before.get('event')})"
    target, recorded = after.get("to"), before.get("to")
    what = _what_changes(_kind(workflow, target), kinds.get(recorded, ""))
    if _kind(workflow, after.state) == "decision":
        return f"{what}the decision's expressions choose {target} (recorded: {recorded})"
    return f"{what}the transition leads to {target} (recorded: {recorded})"


def _kind(workflow: CompiledWorkflow, state: str) -> str:
    return workflow.states[state].kind if state in workflow.states else ""


def _what_changes(kind: str, recorded: str) -> str:
    """What a different target means when it asks for an approval or an action."""
    for asked, added, dropped in (
        ("approval", "an approval is newly asked: ", "the approval is no longer asked: "),
        ("action", "an action is added: ", "an action is dropped: "),
    ):
        if kind == asked and recorded != asked:
            return added
        if recorded == asked and kind != asked:
            return dropped
    return ""


def describe(mark: Mark) -> str:
    """One phrase for a mark."""
    if mark.what == "advanced":
        return f"{mark.state} -[{mark.get('event')}]-> {mark.get('to')}"
    if mark.what in ("drafted", "asked", "admitted", "denied"):
        return f"{mark.what} {mark.get('name')} ({mark.get('payload')[:12]}) in {mark.state}"
    if mark.what == "ended":
        return f"ended {mark.get('outcome')} in {mark.state}"
    if mark.what == "tool_refused":
        return f"tool call {mark.get('skill')} refused in {mark.state}"
    return f"{mark.what.replace('_', ' ')} in {mark.state}"
