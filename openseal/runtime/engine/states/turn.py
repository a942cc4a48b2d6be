"""``turn``: an agent's model turn, with tool calls and a validated structured output.

Every model response and every tool result is an activity with a stable id
(``<state>:<visit>:model:<n>``, ``...:tool:<n>:<i>``), so a replacement worker replays what
was recorded and only calls what was not. A final output that does not match the turn's
output schema is sent back for repair a bounded number of times, then the run needs
attention. A model call whose reply was lost, or that the endpoint refused for a while, is
retried within the run's budgets (see :func:`_model_call`).
"""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema

from openseal.contract import TurnSettings
from openseal.observability import metrics
from openseal.runtime.compiled import AgentProfile, evaluate_json
from openseal.runtime.engine import rate_limits
from openseal.runtime.engine.rate_limits import ModelLimits
from openseal.runtime.engine.states.base import (
    Advance,
    Attention,
    LeaseLost,
    Lost,
    Outcome,
    RetryLater,
    StepContext,
    guarded,
)
from openseal.runtime.engine.tools import ToolInvocation
from openseal.runtime.faults import MODEL_POINT
from openseal.runtime.pricing import Price
from openseal.runtime.providers import retry
from openseal.runtime.providers.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Tool,
)
from openseal.runtime.store import FencedTx, Taken

REPAIR_PROMPT = (
    "Your output does not match the required JSON Schema: {problems}. "
    "Answer again with only the corrected output."
)


def execute(ctx: StepContext) -> Outcome:
    config = ctx.state.settings(TurnSettings)
    return guarded(ctx, lambda: model_turn(ctx, config, ctx.state.output_schema, key=""))


def schema_problems(value: Any, schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "output"
        problems.append(f"{where}: {error.message}")
    return problems


def model_turn(
    ctx: StepContext, config: TurnSettings, output_schema: dict[str, Any] | None, *, key: str
) -> Outcome:
    """Run the model loop for one turn; ``key`` separates branches and items in activity ids."""
    agent = ctx.workflow.agent(config["agent"])
    goal = str(evaluate_json(config["goal"], ctx.scope))
    skills = tuple(s.removeprefix("skill.") for s in config["skills"])
    tools = tuple(Tool(**ctx.workflow.skill_tool(s)) for s in skills)
    max_calls = config["max_model_calls"]
    messages: list[dict[str, Any]] = []
    repairs = 0
    for call in range(1, max_calls + 1):
        request = ModelRequest(
            agent=agent.name, model=agent.model, instructions=agent.instructions, goal=goal,
            messages=tuple(messages), tools=tools, output_schema=output_schema,
            state=ctx.state.name, visit=ctx.visit, call=call,
        )  # fmt: skip
        response = _model_call(ctx, request, f"{key}model:{call}", agent)
        messages.append({"role": "assistant", **_without_usage(response)})
        if response.tool_calls:
            for index, tool_call in enumerate(response.tool_calls):
                # The gateway checks, runs (reads only) and records the call; a refusal comes
                # back as a tool error the model can recover from.
                invocation = ToolInvocation(
                    ctx.run.id, ctx.state.name, agent.name, tool_call.name,
                    tool_call.arguments, skills, actor=config["agent"],
                )  # fmt: skip
                result = ctx.tools.call(ctx, invocation, f"{key}tool:{call}:{index}")
                messages.append({"role": "tool", "tool_call_id": tool_call.id, **result})
            continue
        problems = schema_problems(response.output, output_schema)
        if not problems:
            return Advance("done", response.output)
        repairs += 1
        if repairs > ctx.max_repairs:
            return Attention(
                f"turn output still invalid after {ctx.max_repairs} repair attempts: "
                + "; ".join(problems[:3])
            )
        messages.append(
            {"role": "user", "content": REPAIR_PROMPT.format(problems="; ".join(problems))}
        )
    return Attention(f"no valid output within {max_calls} model calls")


def _model_call(
    ctx: StepContext, request: ModelRequest, suffix: str, agent: AgentProfile
) -> ModelResponse:
    """The recorded answer to ``request``, calling the model until one is recorded.

    Every attempt reserves a model call first. A failure that may pass is retried: after a
    short wait inside the turn, up to the profile's ``max_retries`` times in a row; after
    that, or when the endpoint asks for a long wait, the run sleeps (:class:`RetryLater`).
    """
    cost = _Cost(Price.of(agent.model), agent, ctx.workflow.name)
    limits = rate_limits.ModelLimits.of(agent.model)
    tokens = request.estimated_tokens() + _most_output(request.model)
    #: the place the attempt's reservation took in the profile's limits (None: not taken yet)
    place: list[Taken | None] = [None]

    def reserve(tx: FencedTx) -> None:
        place[0] = rate_limits.take_with_reservation(ctx.store, limits, tokens, tx.row_conn)

    made: list[ModelProvider | None] = [None]

    def prepare() -> None:
        made[0] = _made_provider(ctx, agent)

    def compute() -> dict[str, Any]:
        provider = made[0] if made[0] is not None else ctx.providers(agent)
        response = _limited_call(ctx, provider, request, limits, (tokens, place[0]))
        cost.observe(response.usage.input_tokens, response.usage.output_tokens)
        # Each recorded answer names the model that gave it: the endpoint's own name for it
        # (with its version) when it says, else the profile's configured model.
        answered = response.to_json()
        answered.setdefault("model", str(agent.model.get("model") or agent.model.get("name")))
        answered["profile"] = agent.model.get("name")
        return answered

    attempt = ctx.retry_attempts()
    retries = retry.retries_in_turn(agent.model)
    for retried in itertools.count():
        try:
            result = ctx.activity(
                suffix, "model", request.to_json(), compute,
                cost={"model_calls": 1}, cost_of_result=cost.of_result, if_failed=cost.of_failure,
                if_unknown=cost.of_tokens(request.estimated_tokens(), 0), reserving=reserve,
                preparing=prepare,
            )  # fmt: skip
        except ModelError as exc:
            if not exc.transient:
                raise
            attempt += 1
            wait = retry.delay(attempt, exc.retry_after)
            if retried >= retries or wait > retry.IN_TURN_WAIT:
                raise RetryLater(exc.message, delay=wait, attempt=attempt, code=exc.code) from None
            if ctx.lost.wait(wait):
                raise LeaseLost(ctx.claim.run_id) from None
            continue
        return ModelResponse.from_json(result)
    raise AssertionError("unreachable")  # pragma: no cover


def _made_provider(ctx: StepContext, agent: AgentProfile) -> ModelProvider | None:
    """The profile's provider, made before the call's place is taken (with its reservation):
    the first one a process makes may import its client, seconds a place taken before would
    spend waiting, to go late and bunched with the places after it. None when it cannot be
    made here; a call that is to be sent then meets the error (a recorded answer needs none)."""
    try:
        provider: ModelProvider = ctx.providers(agent)
    except ModelError:
        return None
    return provider


def _limited_call(
    ctx: StepContext,
    provider: ModelProvider,
    request: ModelRequest,
    limits: ModelLimits,
    place: tuple[int, Taken | None],
) -> ModelResponse:
    """One call within the profile's shared rate limit (:mod:`..rate_limits`): its request
    and tokens (``place``: how many, and what the call's reservation took of them, if it
    did) taken before it is sent, the tokens corrected after, and an endpoint's ``429`` (or
    its word that it has no room left) holding every worker back."""
    tokens, taken = place
    rate_limits.before_model_call(ctx.store, limits, tokens, ctx.lost, taken)
    ctx.hook(MODEL_POINT, ctx.claim)
    if ctx.lost.is_set():
        raise LeaseLost(ctx.claim.run_id)
    try:
        response: ModelResponse = provider.complete(request)
    except ModelUnavailable as exc:
        if exc.code == "rate_limited":
            rate_limits.hold_back(ctx.store, limits, exc.retry_after)
        raise
    rate_limits.after_model_call(ctx.store, limits, tokens, response.usage.total)
    if response.hold_back is not None:
        rate_limits.hold_back(ctx.store, limits, response.hold_back)
    return response


def _most_output(model: dict[str, Any]) -> int:
    """The most output tokens the profile lets one answer have (0: it sets no limit)."""
    parameters = model.get("parameters") or {}
    for name in ("max_completion_tokens", "max_tokens"):
        value = parameters.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


class _Cost:
    """What one model call of ``agent`` spends: a model call, its tokens and, when the profile
    has prices, what they cost (:mod:`~openseal.runtime.pricing`)."""

    def __init__(self, price: Price | None, agent: AgentProfile, workflow: str) -> None:
        self.price = price
        self.model = str(agent.model.get("model") or agent.model.get("name") or "unknown")
        parts = agent.ref.split(".")
        self.team = parts[1] if parts[0] == "team" and len(parts) > 1 else ""
        self.workflow = workflow

    def of_tokens(self, input_tokens: int, output_tokens: int) -> dict[str, int]:
        spent = {"tokens": input_tokens + output_tokens}
        if self.price is not None:
            spent.update(self.price.cost(input_tokens, output_tokens))
        return spent

    def of_result(self, result: Any) -> dict[str, int]:
        usage = (result or {}).get("usage") or {}
        return self.of_tokens(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))

    def observe(self, input_tokens: int, output_tokens: int) -> None:
        """Count a call that was made (once per call: replays never reach here) on /metrics."""
        if self.price is None:
            return
        amount = sum(self.price.cost(input_tokens, output_tokens).values()) / 1_000_000
        metrics.MODEL_COST.labels(
            model=self.model, team=self.team, workflow=self.workflow, currency=self.price.currency
        ).inc(amount)

    def of_failure(self, exc: Exception) -> Lost | None:
        """What a failed model call cost: one model call and its estimated tokens when the
        endpoint may have billed it, nothing when it did not take the request. Any other error
        leaves the attempt's outcome unknown (its reservation stays counted)."""
        if not isinstance(exc, ModelError):
            return None
        detail: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.spent is None:
            return Lost({}, detail)
        detail["estimated"] = exc.spent.estimated
        self.observe(exc.spent.input_tokens, exc.spent.output_tokens)
        spent = self.of_tokens(exc.spent.input_tokens, exc.spent.output_tokens)
        return Lost({"model_calls": 1, **spent}, detail)


def _without_usage(response: ModelResponse) -> dict[str, Any]:
    document = response.to_json()
    document.pop("usage", None)
    document.pop("model", None)  # what the conversation carries is the same as before
    return document
