"""``delegate``: ask another agent or team for work and wait in ``waiting_for_agent``.

The callee answers through the agent-request lifecycle (accept, reject, request
clarification, complete, optional completion review). The caller wakes on the changes it must
act on: completion (leave by ``done`` with the response), rejection (leave by ``rejected``),
cancellation (needs attention); a clarification question is for the operator or owner to
answer, so the caller simply waits again.
"""

from __future__ import annotations

from typing import Any

from openseal.runtime.states.base import Advance, Attention, Outcome, StepContext, Suspend
from openseal.runtime.states.turn import schema_problems
from openseal.runtime.statuses import AgentRequestStatus, RunStatus
from openseal.runtime.store import FencedTx
from openseal.runtime.workflow import evaluate_json

# Statuses the caller acts on; anything else means "keep waiting".
_ACTIONABLE = {
    AgentRequestStatus.COMPLETED,
    AgentRequestStatus.REJECTED,
    AgentRequestStatus.CANCELED,
}


def execute(ctx: StepContext) -> Outcome:
    waiting = ctx.run.waiting or {}
    if waiting.get("kind") == "agent":
        return _answered(ctx, waiting)
    config = ctx.state.config
    callee = str(config["to"])
    request = {
        "goal": evaluate_json(config["goal"], ctx.scope),
        "input": {
            k: evaluate_json(v, ctx.scope) for k, v in sorted((config.get("input") or {}).items())
        },
        "output_schema": ctx.state.output_schema,
        "review": bool(config.get("review")),
        "workflow": ctx.workflow.name,
        "state": ctx.state.name,
    }

    def ask(tx: FencedTx) -> None:
        created = tx.create_agent_request(callee, request)
        _wait(tx, {"kind": "agent", "agent_request_id": created.id, "callee": callee}, now=False)

    return Suspend(ask, f"waiting for {callee}")


def _answered(ctx: StepContext, waiting: dict[str, Any]) -> Outcome:
    request = ctx.store.agent_requests.get(str(waiting["agent_request_id"]))
    if request.status == AgentRequestStatus.COMPLETED:
        problems = schema_problems(request.response, ctx.state.output_schema)
        if problems:
            return Attention(f"delegated result does not match the output type: {problems[0]}")
        return Advance("done", request.response)
    if request.status == AgentRequestStatus.REJECTED:
        return Advance("rejected", request.response)
    if request.status == AgentRequestStatus.CANCELED:
        return Attention(f"agent request {request.id} was canceled")

    def wait_again(tx: FencedTx) -> None:
        _wait(tx, waiting, now=_actionable_now(tx, request.id))

    return Suspend(wait_again, f"waiting for {waiting.get('callee')}")


def _actionable_now(tx: FencedTx, request_id: str) -> bool:
    # Read inside the fenced transaction: an answer that committed while this worker held the
    # run did not wake it (the run was not waiting then), so wake ourselves instead of
    # waiting for a wake-up that will never come.
    return tx.store.agent_requests.status(tx.conn, request_id) in _ACTIONABLE


def _wait(tx: FencedTx, waiting: dict[str, Any], *, now: bool) -> None:
    tx.update_run(
        status=RunStatus.WAITING_FOR_AGENT,
        waiting=waiting,
        wake_at=tx.now if now else None,
        event="wait.agent",
    )
