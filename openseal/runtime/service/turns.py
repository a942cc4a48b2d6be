"""A run down to its turns: each turn's state, times and outcome, with the model and tool
calls it recorded and the tokens they used (``openseal runs turns``, ``GET /runs/{id}/turns``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from openseal.runtime.access import visible_run
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.store import Activity, Store, Turn

#: ``<state>:<visit>:tool:<call>:<index>``: the tool call ``index`` of model call ``call``
_TOOL_ID = re.compile(r"^(?P<prefix>.*)tool:(?P<call>\d+):(?P<index>\d+)$")


@dataclass(frozen=True)
class Call:
    """One recorded model or tool call of a turn."""

    kind: str
    activity_id: str
    at: datetime
    #: model calls: the model (and version) that answered and the profile it was asked through
    model: str | None = None
    profile: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    #: model calls: the tools it asked for (none: it gave its output)
    requested: tuple[str, ...] = ()
    #: tool calls: which tool, and the error it answered with (None: it answered)
    tool: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class TurnView:
    """A turn as people read it: ``outcome`` is how it ended (``advanced``, ``waiting``,
    ``ended``), or its status when it did not complete (``running``, ``abandoned``...)."""

    seq: int
    state: str
    status: str
    outcome: str
    worker: str
    epoch: int
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    calls: tuple[Call, ...] = field(default=())

    @property
    def tokens(self) -> dict[str, int]:
        return {
            "input": sum(c.input_tokens for c in self.calls),
            "output": sum(c.output_tokens for c in self.calls),
        }


def run_turns(store: Store, run_id: str, caller: Caller = CLI) -> tuple[TurnView, ...]:
    """Run ``run_id``'s turns in order, each with the calls recorded while it ran."""
    visible_run(store, run_id, caller.grant)  # NotFound for an unknown run, not no turns
    turns, activities = store.runs.turns(run_id)
    models = {a.activity_id: a for a in activities if a.kind == "model"}
    owned: dict[int, list[Call]] = {t.seq: [] for t in turns}
    for activity in activities:
        turn = _turn_of(turns, activity)
        if turn is not None:
            owned[turn.seq].append(_call(activity, models))
    return tuple(_view(turn, tuple(owned[turn.seq])) for turn in turns)


def _turn_of(turns: tuple[Turn, ...], activity: Activity) -> Turn | None:
    """The turn that recorded ``activity``: the last one started before it (a run has one turn
    at a time; a turn's end and the next one's start may be the same moment)."""
    started = [t for t in turns if t.started_at <= activity.created_at]
    return started[-1] if started else None


def _call(activity: Activity, models: dict[str, Activity]) -> Call:
    result: dict[str, Any] = activity.result if isinstance(activity.result, dict) else {}
    if activity.kind == "model":
        usage = result.get("usage") or {}
        return Call(
            "model", activity.activity_id, activity.created_at,
            model=_text(result.get("model")), profile=_text(result.get("profile")),
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            requested=tuple(str(c.get("name")) for c in result.get("tool_calls") or ()),
        )  # fmt: skip
    error = result.get("error")
    return Call(
        activity.kind, activity.activity_id, activity.created_at,
        tool=_tool_name(activity.activity_id, models),
        error=None if error is None else str(error.get("message") if isinstance(error, dict)
                                             else error),
    )  # fmt: skip


def _tool_name(activity_id: str, models: dict[str, Activity]) -> str | None:
    found = _TOOL_ID.match(activity_id)
    if found is None:
        return None
    asked = models.get(f"{found['prefix']}model:{found['call']}")
    calls = (
        (asked.result or {}).get("tool_calls") if asked and isinstance(asked.result, dict) else None
    )
    index = int(found["index"])
    return str(calls[index].get("name")) if calls and index < len(calls) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _view(turn: Turn, calls: tuple[Call, ...]) -> TurnView:
    outcome = turn.phase if turn.status == "completed" else turn.status
    return TurnView(
        seq=turn.seq, state=turn.state, status=turn.status, outcome=outcome, worker=turn.worker,
        epoch=turn.epoch, started_at=turn.started_at, finished_at=turn.finished_at,
        error=turn.error, calls=calls,
    )  # fmt: skip
