"""One-line summaries of the budget and retry events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from openseal.runtime.event_summary import summarize
from openseal.runtime.store.tables.records import Event


def event(type: str, payload: dict[str, Any]) -> Event:
    return Event("r", 1, type, "worker:w", payload, datetime(2026, 1, 5, tzinfo=UTC))


def test_budget_and_lost_call_events_say_what_was_counted() -> None:
    reserved = {"activity_id": "ask:1:model:1", "reserved": {"model_calls": 1}}
    assert summarize(event("budget.reserved", reserved)) == "model_calls 1 for ask:1:model:1"
    failed = {"activity_id": "ask:1:model:1", "kind": "model", "code": "reply_lost",
              "message": "the reply was lost", "estimated": True,
              "spent": {"model_calls": 1, "tokens": 40}}  # fmt: skip
    assert summarize(event("activity.failed", failed)) == (
        "ask:1:model:1: reply_lost, counted: model_calls 1, tokens 40 (estimated)"
    )
    released = {**failed, "code": "rate_limited", "spent": {}, "estimated": False}
    assert summarize(event("activity.failed", released)) == (
        "ask:1:model:1: rate_limited, counted: nothing"
    )
    lost = {"activity_id": "ask:1:model:1", "spent": {"model_calls": 1}}
    assert summarize(event("activity.lost", lost)) == "ask:1:model:1, counted: model_calls 1"


def test_a_scheduled_retry_says_when_and_why() -> None:
    waiting = {"kind": "retry", "retries": 2, "retry_at": "2026-01-05T09:02:00+00:00",
               "code": "rate_limited", "fault": "429"}  # fmt: skip
    summary = summarize(event("turn.retry_scheduled", {"status": "sleeping", "waiting": waiting}))
    assert summary == "retry 2 at 2026-01-05T09:02:00+00:00 (rate_limited)"
    engine = {"retries": 1, "retry_at": "2026-01-05T09:00:01+00:00", "fault": "OperationalError"}
    assert summarize(event("turn.retry_scheduled", engine)) == (
        "retry 1 at 2026-01-05T09:00:01+00:00 (OperationalError)"
    )
