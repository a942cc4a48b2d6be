"""One-line human summaries of run events, for timelines and `openseal runs events`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openseal.runtime.store import Event


def summarize(event: Event) -> str:
    """A short human summary of an event's payload."""
    p: Mapping[str, Any] = event.payload if isinstance(event.payload, dict) else {}
    by_type: dict[str, Callable[[], str]] = {
        "run.created": lambda: _created(p),
        "lease.claimed": lambda: f"by {p.get('worker')} from {p.get('claimed_from')}",
        "turn.started": lambda: f"turn {p.get('seq')} in {p.get('state')}",
        "turn.updated": lambda: f"{p.get('phase')}",
        "activity.recorded": lambda: f"{p.get('kind')} {p.get('activity_id')}",
        "budget.spent": lambda: _amounts(p.get("spent")) + _by_child(p),
        "budget.reserved": lambda: f"{_amounts(p.get('reserved'))} for {p.get('activity_id')}",
        "activity.failed": lambda: _failed(p),
        "activity.lost": lambda: f"{p.get('activity_id')}, counted: {_amounts(p.get('spent'))}",
        "turn.retry_scheduled": lambda: _retry(p),
        "state.advanced": lambda: f"{p.get('from')} -> {p.get('to')} ({p.get('event')})",
        "proposal.drafted": lambda: f"{p.get('name')} {_short(p.get('hash'), 16)}",
        "wait.approval": lambda: f"approval {_short((p.get('waiting') or {}).get('approval_id'))}",
        "approval.decided": lambda: f"{p.get('decision')} by {p.get('approver')}",
        "run.completed": lambda: f"ended in {p.get('end_state')}{_objective(p)}",
        "run.pinned": lambda: f"on version {_short(p.get('workflow_digest'), 12)} (a retry)",
    }
    describe = by_type.get(event.type)
    if describe is not None:
        return describe()
    if event.type.startswith("action."):
        return _action(event.type.removeprefix("action."), p)
    return _generic(p)


def _by_child(payload: Mapping[str, Any]) -> str:
    child = payload.get("child_run_id")
    return f" by child run {child}" if child else ""


def _objective(payload: Mapping[str, Any]) -> str:
    """What a run's end did to its objective, when it was not simply satisfied."""
    found = payload.get("objective")
    objective: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if not objective or objective.get("status") == "satisfied":
        return ""
    retry = objective.get("retry")
    if isinstance(retry, Mapping):
        return f"; objective not satisfied, attempt {retry.get('attempt')} at {retry.get('at')}"
    return f"; objective {objective.get('status')}"


def _created(payload: Mapping[str, Any]) -> str:
    text = f"{payload.get('workflow')} (objective {_short(payload.get('objective_id'))})"
    if payload.get("retry_of"):
        text += f", attempt {payload.get('attempt')} after run {_short(payload['retry_of'])}"
    return text


def _action(to: str, payload: Mapping[str, Any]) -> str:
    text = f"{payload.get('proposal')}: {payload.get('from')} -> {to}"
    if "attempt" in payload:
        text += f", attempt {payload['attempt']}"
    return text


def _amounts(amounts: object) -> str:
    items = amounts.items() if isinstance(amounts, Mapping) else ()
    return ", ".join(f"{k} {v}" for k, v in items) or "nothing"


def _failed(payload: Mapping[str, Any]) -> str:
    cost = _amounts(payload.get("spent"))
    estimated = " (estimated)" if payload.get("estimated") else ""
    return f"{payload.get('activity_id')}: {payload.get('code')}, counted: {cost}{estimated}"


def _retry(payload: Mapping[str, Any]) -> str:
    found = payload.get("waiting")
    waiting: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    retries = payload.get("retries") or waiting.get("retries")
    due = payload.get("retry_at") or waiting.get("retry_at")
    why = waiting.get("code") or _short(payload.get("fault"), 40)
    return f"retry {retries} at {due} ({why})"


def _short(value: object, length: int = 10) -> str:
    text = str(value or "-")
    return text if len(text) <= length else text[:length] + "…"


def _generic(payload: Mapping[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in payload.items() if isinstance(v, str | int | float | bool)]
    text = " ".join(parts)
    return text if len(text) <= 60 else text[:59] + "…"
