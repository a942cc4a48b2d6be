"""``delegate``: ask another agent or team for work and wait in ``waiting_for_agent``.

The request is made and its child run started in the turn's fenced transaction
(:mod:`openseal.runtime.engine.delegation`); the run then waits, until the request's deadline at
most. It wakes when the request completes (leave by ``done`` with the completion, checked
against the output type), is declined, fails or expires (leave by ``declined``, ``failed``,
``expired``; without such a transition an operator must decide), is canceled, or when the
callee asks a question (a person or the caller's side answers it; the run waits again). When
the state asked for a review, a completion is awaited until it is reviewed: accepted, or sent
back, which reopens the request.

A ``budget`` on the state is carved out of the run's budgets when the request is made, in the
same transaction (:mod:`openseal.runtime.store.repos.carved_budgets`): it must fit what is left, or
the run stops for its budget like any work that does not fit, and no request is made.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import timedelta
from typing import Any

from openseal.contract import AgentWait, DelegateSettings
from openseal.runtime.compiled import delegation_request
from openseal.runtime.engine import budgets
from openseal.runtime.engine.cascade import stop_child
from openseal.runtime.engine.delegation import DelegationFailed, request_work, start_child
from openseal.runtime.engine.states.base import Advance, Attention, Outcome, StepContext, Suspend
from openseal.runtime.engine.states.turn import schema_problems
from openseal.runtime.statuses import AgentRequestStatus as S
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import (
    OPEN_AGENT_REQUESTS,
    AgentRequest,
    FencedTx,
    InvalidStatus,
    Store,
    caller_wakes,
    release_carved,
)

#: how the caller leaves for each closed request status (``rejected``: the older name)
LEAVES = {S.DECLINED: ("declined", "rejected"), S.FAILED: ("failed",), S.EXPIRED: ("expired",)}


def execute(ctx: StepContext) -> Outcome:
    waiting = ctx.run.waiting
    if waiting is not None and waiting["kind"] == "agent":
        return _answered(ctx, waiting)
    config = ctx.state.settings(DelegateSettings)
    callee = config["to"]
    request = request_of(ctx, config)
    expires_in = config["expires_in"]
    deadline = ctx.now() + timedelta(seconds=float(expires_in)) if expires_in else None
    budget = config.get("budget") or {}
    if budget:
        with ctx.store.leases.fenced(ctx.claim) as tx:
            reason = _unaffordable(ctx, tx, budget)
        if reason is not None:
            ctx.stop(reason)

    def ask(tx: FencedTx) -> None:
        reason = _unaffordable(ctx, tx, budget) if budget else None
        if reason is not None:  # spent meanwhile by a child of an earlier request
            ctx.exhaust(tx, reason)
            return
        created = request_work(ctx.store, tx, callee, request, deadline=deadline, budget=budget)
        waiting: AgentWait = {"kind": "agent", "agent_request_id": created.id, "callee": callee}
        try:
            start_child(ctx.store, tx.conn, tx.run(), created, workflow=ctx.workflow)
        except DelegationFailed as exc:
            ctx.store.agent_requests.fail_in(tx.conn, created.id, str(exc), tx.now)
            used, released = release_carved(tx.run().budget_used, created.id)
            payload = {"agent_request_id": created.id, "status": "failed", "reason": str(exc)}
            if released is not None:
                tx.update_run(budget_used=used, event="agent_request.failed",
                              payload={**payload, "budget_released": released})  # fmt: skip
            else:
                tx.append_event("agent_request.failed", payload)
            _wait(tx, waiting, wake_at=tx.now)
            return
        tx.append_event(
            "agent_request.accepted",
            {"agent_request_id": created.id, "status": "accepted"},
            actor=callee.replace(".", ":", 1),  # the principal the callee acts as
        )
        _wait(tx, waiting, wake_at=deadline)

    return Suspend(ask, f"waiting for {callee}")


def request_of(ctx: StepContext, config: DelegateSettings) -> dict[str, Any]:
    """The request this visit makes of its callee (replay compares it with the recorded one)."""
    return delegation_request(ctx.workflow, ctx.state, ctx.scope)


def _unaffordable(ctx: StepContext, tx: FencedTx, budget: dict[str, int]) -> str | None:
    """Why the run cannot carve ``budget`` out of what is left of its own, if it cannot."""
    reason = budgets.refusal(ctx.workflow.budget_limits(), tx.run().budget_used, budget)
    return None if reason is None else f"{reason} (the budget of the request in {ctx.state.name})"


def _answered(ctx: StepContext, waiting: AgentWait) -> Outcome:
    request = ctx.store.agent_requests.get(waiting["agent_request_id"])
    actor = f"worker:{ctx.claim.worker_id}"
    if request.status in (S.COMPLETED, S.COMPLETION_REVIEWED) and caller_wakes(request):
        problems = schema_problems(request.response, ctx.state.output_schema)
        if not problems:
            return Advance("done", request.response)
        reason = f"the completion does not match the output type: {problems[0]}"
        try:
            request = ctx.store.agent_requests.fail(
                request.id, actor, reason, stop=stop_child(ctx.store)
            )
        except InvalidStatus:
            return _answered(ctx, waiting)  # reviewed or reopened meanwhile: look again
    if request.status in LEAVES:
        return leave_by(ctx, request)
    if request.status == S.CANCELED:
        return Attention(f"agent request {request.id} was canceled")
    if request.status in OPEN_AGENT_REQUESTS and _past(ctx, request):
        with suppress(InvalidStatus):  # answered in the meantime
            ctx.store.agent_requests.expire(request.id, actor, stop=stop_child(ctx.store))
        return _answered(ctx, waiting)

    def wait_again(tx: FencedTx) -> None:
        _wait(tx, waiting, wake_at=tx.now if _changed(ctx.store, tx, request) else request.deadline)

    return Suspend(wait_again, f"waiting for {waiting['callee']}")


def leave_by(ctx: StepContext, request: AgentRequest) -> Outcome:
    """How the caller leaves a declined, failed or expired request."""
    for event in LEAVES[request.status]:
        if ctx.workflow.outgoing(ctx.state.name, event):
            return Advance(event, request.response)
    return Attention(f"agent request {request.id} {request.status}: {request.response}")


def _past(ctx: StepContext, request: AgentRequest) -> bool:
    return request.deadline is not None and ctx.now() >= request.deadline


def _changed(store: Store, tx: FencedTx, seen: AgentRequest) -> bool:
    # Read inside the fenced transaction: a step that committed after this turn read the
    # request did not wake the run (it was not waiting then), so wake ourselves instead of
    # waiting for a wake-up that will never come. Unchanged, there is nothing to do until the
    # next step (a question waits for its answer).
    now = store.agent_requests.get_in(tx.conn, seen.id)
    return now.updated_at != seen.updated_at and caller_wakes(now)


def _wait(tx: FencedTx, waiting: AgentWait, *, wake_at: Any) -> None:
    tx.update_run(
        status=RunStatus.WAITING_FOR_AGENT, waiting=waiting, wake_at=wake_at, event="wait.agent"
    )
