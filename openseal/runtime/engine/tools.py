"""Tool calls a model proposes during a turn: checked by the gateway, recorded, then answered.

:class:`GatewayTools` is the default :class:`ToolRunner`. For each proposed call it

1. returns the recorded result if this call (activity ``<state>:<visit>:tool:<n>:<i>``) was
   already recorded — a replay never re-executes a call (invariant 4);
2. in one fenced transaction checks that the run is still ``running`` in the turn's state
   and that one more tool call fits the budget, and — when the gateway refuses the call —
   records the refusal as the activity, its budget spend and a ``tool_call.refused`` event;
   an allowed call's budget is reserved in that transaction (see :mod:`budgets`);
3. otherwise runs the *read* skill through its adapter (outside any transaction), with the
   credential resolved inside the adapter at call time from the runtime context, and records
   the result before the turn goes on (invariant 2). A read that fails (or does not answer in
   its ``timeout``) is called again as its ``retry { attempts, backoff }`` says, after a capped
   exponential pause with full jitter (``backoff`` × 2ⁿ, at most :data:`MAX_PAUSE`): a read
   changes nothing, so repeating it is safe. Only the last attempt's result is recorded.

The model gets ``{"result": ...}`` or ``{"error": {"code", "message"}}`` back as the tool
message, so a refused or failed call is something it can recover from. Skills with an effect
beyond ``read`` never run from here: they run only through a proposal and an approved action.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import tenacity

from openseal.runtime import telemetry
from openseal.runtime.actions.replies import scrub, secrets_for
from openseal.runtime.actions.skill_documents import skill_spec
from openseal.runtime.engine import budgets, quotas, rate_limits
from openseal.runtime.engine.capacity import WaitsFor
from openseal.runtime.engine.gateway import (
    TOOL_CALL_COST,
    GatewayDecision,
    SkillRequest,
    check_budget,
    check_call,
    check_run,
)
from openseal.runtime.store import Bucket, FencedTx, Store
from openseal.skills import Skill, SkillCall, SkillResult, adapter_for
from openseal.skills.bounded import GRACE_SECONDS, call_bounded
from openseal.skills.credentials import RuntimeContext

if TYPE_CHECKING:
    from openseal.runtime.engine.states.base import StepContext

#: the longest pause between two attempts of a read, whatever its ``backoff``
MAX_PAUSE = 60.0


@dataclass(frozen=True)
class ToolInvocation:
    """One proposed call and where it comes from; its JSON is the activity's request."""

    run_id: str
    state: str
    agent: str
    skill: str
    arguments: dict[str, Any]
    allowed: tuple[str, ...]
    #: the acting principal as the workflow names it (``team.procurement.role.researcher``)
    actor: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "state": self.state,
            "agent": self.agent,
            "actor": self.actor,
            "skill": self.skill,
            "arguments": self.arguments,
            "allowed": list(self.allowed),
        }

    def request(self) -> SkillRequest:
        return SkillRequest(self.skill, self.arguments, self.actor, self.allowed)


class ToolRunner(Protocol):
    def call(self, ctx: StepContext, invocation: ToolInvocation, suffix: str) -> dict[str, Any]:
        """Check, run and record one call as activity ``<ctx.prefix>:<suffix>``.

        Returns the recorded tool message body: ``{"result": ...}`` or
        ``{"error": {"code", "message"}}``.
        """
        ...


def tool_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def refusal(decision: GatewayDecision) -> dict[str, Any]:
    """The tool message for a refused call (the model sees why, and can try otherwise)."""
    return tool_error(decision.reason_code or "refused", decision.reason)


def adapter_config(context: RuntimeContext) -> dict[str, str]:
    """The context's configuration as adapter templates see it (``config.<key>``, text)."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in context.config.items()}


class GatewayTools:
    """The gateway-backed runner: refuses what the gateway refuses, runs read skills.

    Skills see the turn's runtime context (``StepContext.context``, the worker's
    ``--context``); ``context`` here is the fallback when a turn has none.
    """

    def __init__(self, context: RuntimeContext | None = None) -> None:
        self.context = context or RuntimeContext.empty()
        self._specs: dict[str, Skill] = {}
        self._lock = threading.Lock()

    def call(self, ctx: StepContext, invocation: ToolInvocation, suffix: str) -> dict[str, Any]:
        # Imported here: states.base imports this module for the ToolRunner type.
        from openseal.runtime.engine.states.base import (
            BudgetSpent,
            LeaseLost,
            OverCapacity,
            RetryLater,
            input_hash,
        )

        activity_id = f"{ctx.prefix}:{suffix}"
        digest = input_hash(invocation.to_json())
        decision = check_call(ctx.workflow, invocation.request())
        slot: str | WaitsFor = ""
        with ctx.store.leases.fenced(ctx.claim) as tx:
            found = tx.replayed(activity_id, digest)
            if found is not None:
                return dict(found.result)
            verdict = _admit(tx, ctx, decision)
            if verdict.reason_code == "budget_exhausted":
                _refused_event(tx, activity_id, invocation, verdict)
            elif not verdict.allowed:
                refused = _record(ctx.store, tx, activity_id, digest, refusal(verdict))
                _refused_event(tx, activity_id, invocation, verdict)
            else:
                # the call takes its slot of the skill's cap where it is reserved; a full cap
                # reserves nothing, and the run waits for a slot
                slot = self._slot(ctx, tx, invocation.skill)
                if not isinstance(slot, WaitsFor):
                    _reserve(ctx.store, tx, activity_id)
        if verdict.reason_code == "budget_exhausted":
            raise BudgetSpent(verdict.reason)
        if not verdict.allowed:
            telemetry.tool_refused(invocation.skill)
            ctx.hook("activity.recorded", ctx.claim)
            return refused
        if isinstance(slot, WaitsFor):
            raise OverCapacity(slot)
        if ctx.lost.is_set():
            raise LeaseLost(ctx.claim.run_id)
        try:
            result = telemetry.tool_call(
                ctx.run.id, invocation.skill, lambda: self._execute(ctx, invocation)
            )
        except rate_limits.SkillOverRateLimit as over:
            _not_sent(ctx, activity_id, str(over), (invocation.skill, slot))
            raise RetryLater(str(over), delay=over.wait, code="over_rate_limit") from None
        with ctx.store.leases.fenced(ctx.claim) as tx:
            recorded = _record(ctx.store, tx, activity_id, digest, result)
            _give_back(ctx, tx, invocation.skill, slot)
        ctx.hook("activity.recorded", ctx.claim)
        return recorded

    def _slot(self, ctx: StepContext, tx: FencedTx, skill: str) -> str | WaitsFor:
        """The slot of ``skill``'s concurrency cap this call takes in ``tx`` ("" when it has
        none), or what its run is to wait for."""
        if ctx.admission is None:
            return ""
        return ctx.admission.take_tool_call(tx, skill, self._spec(ctx, skill).concurrency)

    # -- running a read skill ----------------------------------------------------------

    def _execute(self, ctx: StepContext, invocation: ToolInvocation) -> dict[str, Any]:
        context = ctx.context or self.context
        spec = self._spec(ctx, invocation.skill)
        adapter = adapter_for(spec)
        if adapter is None:
            return tool_error(
                "not_available", f"`{invocation.skill}` is a runbook skill; turns cannot call it"
            )
        call = SkillCall(
            invocation.skill,
            spec,
            invocation.arguments,
            spec.timeout,
            config=adapter_config(context),
            credentials=context.credentials,
        )
        attempts = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(spec.retry.attempts),
            wait=tenacity.wait_random_exponential(multiplier=spec.retry.backoff, max=MAX_PAUSE),
            retry=tenacity.retry_if_result(lambda result: result is None or not result.ok),
            sleep=_pause(ctx),
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        bucket = rate_limits.skill_bucket(invocation.skill, spec)
        result = attempts(self._attempt, ctx, adapter.call, call, bucket)
        tried = attempts.statistics.get("attempt_number", 1)
        again = f" ({tried} attempts)" if tried > 1 else ""
        if result is None:
            return tool_error(
                "skill_timeout",
                f"`{invocation.skill}` did not answer within {spec.timeout:g}s{again}",
            )
        result = scrub(result, secrets_for(call))  # recorded, and shown to the model
        if result.ok:
            return {"result": result.output}
        return tool_error("skill_failed", (result.error or f"`{invocation.skill}` failed") + again)

    @staticmethod
    def _attempt(
        ctx: StepContext,
        send: Callable[[SkillCall], SkillResult],
        call: SkillCall,
        bucket: Bucket | None,
    ) -> SkillResult | None:
        from openseal.runtime.engine.states.base import LeaseLost

        # each attempt is a call: it waits for its turn in the skill's shared limit, or its
        # run sleeps when that is further off than a turn waits (SkillOverRateLimit)
        rate_limits.before_skill_call(ctx.store, bucket, ctx.lost)
        if ctx.lost.is_set():  # the run was taken over during the pause: stop trying
            raise LeaseLost(ctx.claim.run_id)
        return call_bounded(lambda: send(call), call.timeout + GRACE_SECONDS)

    def _spec(self, ctx: StepContext, skill: str) -> Skill:
        key = f"skill.{skill}"
        digest = str((ctx.workflow.document.get("dependencies") or {}).get(key))
        with self._lock:
            cached = self._specs.get(digest)
        if cached is None:
            cached = skill_spec(ctx.workflow.dependency(key))
            with self._lock:
                self._specs[digest] = cached
        return cached


def _admit(tx: FencedTx, ctx: StepContext, decision: GatewayDecision) -> GatewayDecision:
    """The final verdict, inside the recording transaction: budget first (every proposed call
    costs one, refused or not, so a model cannot loop on refusals), then the run's state,
    then the gateway's static decision."""
    run = tx.run()
    for verdict in (
        check_budget(ctx.workflow.budget_limits(), run.budget_used),
        check_run(run, ctx.state.name),
        decision,
    ):
        if not verdict.allowed:
            return verdict
    return decision


def _reserve(store: Store, tx: FencedTx, activity_id: str) -> None:
    """Hold one tool call of the budget for ``activity_id`` before the skill runs, so branches
    of a fan-out cannot all pass the check for the last call. Holds an earlier claim left
    open (their reads may have run) are closed as spent first."""
    from openseal.runtime.engine.states.base import close_abandoned

    used = close_abandoned(store, tx, {})
    quotas.update_budget(
        store,
        tx,
        budgets.reserve(used, activity_id, TOOL_CALL_COST, epoch=tx.claim.epoch),
        event="budget.reserved",
        payload={"activity_id": activity_id, "reserved": dict(TOOL_CALL_COST)},
    )


def _give_back(ctx: StepContext, tx: FencedTx, skill: str, slot: str) -> None:
    """Give back the slot of ``skill``'s cap a call took (none: ``slot`` is "")."""
    if slot and ctx.admission is not None:
        ctx.admission.give_back_tool_call(tx, skill, slot)


def _not_sent(ctx: StepContext, activity_id: str, reason: str, slot: tuple[str, str]) -> None:
    """A call its skill's rate limit held back was not sent: its hold of the budget and its
    slot of the skill's cap (``(skill, slot)``) are given back (``activity.failed``, nothing
    spent) and the run sleeps."""
    with ctx.store.leases.fenced(ctx.claim) as tx:
        _give_back(ctx, tx, *slot)
        quotas.update_budget(
            ctx.store,
            tx,
            budgets.settle(tx.run().budget_used, activity_id, {}),
            event="activity.failed",
            payload={"activity_id": activity_id, "kind": "tool", "spent": {},
                     "code": "over_rate_limit", "error": reason},
        )  # fmt: skip


def _record(
    store: Store, tx: FencedTx, activity_id: str, digest: str, result: dict[str, Any]
) -> dict[str, Any]:
    """Record the call's result with its budget spend (settling the call's hold, if it was
    reserved), in the caller's transaction."""
    recorded = tx.record_activity(activity_id, "tool", digest, result)
    used = budgets.settle(tx.run().budget_used, activity_id, TOOL_CALL_COST)
    quotas.update_budget(
        store,
        tx,
        used,
        event="budget.spent",
        payload={"activity_id": activity_id, "spent": dict(TOOL_CALL_COST)},
    )
    return dict(recorded.result)


def _refused_event(
    tx: FencedTx, activity_id: str, invocation: ToolInvocation, decision: GatewayDecision
) -> None:
    tx.append_event(
        "tool_call.refused",
        {
            "activity_id": activity_id,
            "skill": invocation.skill,
            "actor": invocation.actor,
            "reason_code": decision.reason_code,
            "reason": decision.reason,
        },
    )


def _pause(ctx: StepContext) -> Callable[[float], None]:
    """Sleep between attempts, cut short when the claim is lost (the next attempt then
    stops)."""

    def pause(seconds: float) -> None:
        ctx.lost.wait(seconds)

    return pause


__all__ = [
    "GatewayTools",
    "ToolInvocation",
    "ToolRunner",
    "adapter_config",
    "refusal",
    "tool_error",
]
