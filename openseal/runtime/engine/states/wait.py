"""``wait``: for a timer (``sleeping`` until ``wake_at``) or an inbound event.

Waiting holds no lease (invariant 5). An event that arrived before the wait was registered is
matched by the store at registration. When the run is claimed again, ``run.waiting`` says what
woke it: a delivery (leave by ``done`` with the event payload as output), the timeout (leave by
``timeout``) or the timer.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from openseal.contract import TimerWait, WaitSettings
from openseal.runtime.clock import iso
from openseal.runtime.compiled import evaluate_json
from openseal.runtime.engine.states.base import Advance, Outcome, StepContext, Suspend
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import FencedTx


def execute(ctx: StepContext) -> Outcome:
    config = ctx.state.settings(WaitSettings)
    timer = config["timer"]
    if timer is not None:
        return _timer(ctx, float(timer))
    return _event(ctx, config)


def _timer(ctx: StepContext, seconds: float) -> Outcome:
    waiting = ctx.run.waiting
    now = ctx.now()
    if waiting is not None and waiting["kind"] == "timer":
        due = datetime.fromisoformat(str(waiting["due"]))
        if now >= due:
            return Advance("done", {"waited_seconds": seconds})
    else:
        due = now + timedelta(seconds=seconds)
    document: TimerWait = {"kind": "timer", "state": ctx.state.name, "due": iso(due)}

    def sleep(tx: FencedTx) -> None:
        tx.update_run(
            status=RunStatus.SLEEPING, wake_at=due, waiting=document, event="wait.sleeping"
        )

    return Suspend(sleep, f"sleeping until {iso(due)}")


def _event(ctx: StepContext, config: WaitSettings) -> Outcome:
    waiting = ctx.run.waiting
    now = ctx.now()
    if waiting is not None and waiting["kind"] == "event":
        delivered = waiting.get("delivered")
        if delivered is not None:
            return Advance("done", delivered["payload"])
        timeout_at = waiting["timeout_at"]
        if timeout_at is not None and now >= datetime.fromisoformat(str(timeout_at)):
            return Advance("timeout")
        due = datetime.fromisoformat(str(timeout_at)) if timeout_at else None
    else:
        timeout = config["timeout"]
        due = now + timedelta(seconds=float(timeout)) if timeout is not None else None
    name = str(config["event"])
    correlation = {
        key: evaluate_json(value, ctx.scope) for key, value in sorted(config["correlation"].items())
    }

    def register(tx: FencedTx) -> None:
        tx.register_event_wait(name, correlation, timeout_at=due)

    return Suspend(register, f"waiting for event {name}")
