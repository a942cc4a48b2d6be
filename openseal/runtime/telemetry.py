"""Where the runtime reports to :mod:`openseal.observability`: small wrappers and hooks.

- :func:`observed_providers`: model calls counted, timed and traced by model, with tokens;
- :func:`observed_hook`: the engine's named hook points counted (faults, the duplicate-effect
  guard) before the hook it wraps runs;
- :func:`tool_call` and :func:`action_call`: a tool call or an action's skill call counted,
  timed and traced.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any, Protocol

from prometheus_client import Counter, Histogram

from openseal.observability import metrics, tracing
from openseal.runtime.compiled import AgentProfile
from openseal.runtime.faults import Hook
from openseal.runtime.providers import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ProviderFactory,
)
from openseal.runtime.store import Claim
from openseal.skills.base import SkillResult

# -- model calls ---------------------------------------------------------------------------


class ObservedProvider:
    """A provider whose calls are counted, timed and traced under the profile's model."""

    def __init__(self, provider: ModelProvider, profile: AgentProfile) -> None:
        self.provider = provider
        self.model = _model_of(profile)

    def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.monotonic()
        with tracing.span("openseal.model_call", {"openseal.model": self.model}) as span:
            try:
                response = self.provider.complete(request)
            except ModelError as exc:
                metrics.MODEL_CALLS.labels(model=self.model, outcome=exc.code).inc()
                span.set_attribute("openseal.outcome", exc.code)
                raise
            finally:
                metrics.MODEL_SECONDS.labels(model=self.model).observe(time.monotonic() - started)
            usage = response.usage
            metrics.MODEL_CALLS.labels(model=self.model, outcome="ok").inc()
            metrics.MODEL_TOKENS.labels(model=self.model, kind="input").inc(usage.input_tokens)
            metrics.MODEL_TOKENS.labels(model=self.model, kind="output").inc(usage.output_tokens)
            span.set_attribute("openseal.outcome", "ok")
            span.set_attribute("openseal.input_tokens", usage.input_tokens)
            span.set_attribute("openseal.output_tokens", usage.output_tokens)
        return response


def _model_of(profile: AgentProfile) -> str:
    return str(profile.model.get("model") or profile.model.get("name") or "unknown")


def observed_providers(factory: ProviderFactory) -> ProviderFactory:
    """``factory`` whose providers report every call (one wrapper per provider)."""
    # One wrapper per provider and model: a factory may answer several profiles with one
    # provider (``fixed``), and each call is counted under its own profile's model.
    wrapped: dict[tuple[int, str], ObservedProvider] = {}

    def observed(profile: AgentProfile) -> ModelProvider:
        provider = factory(profile)
        key = (id(provider), _model_of(profile))
        found = wrapped.get(key)
        if found is None or found.provider is not provider:
            found = wrapped[key] = ObservedProvider(provider, profile)
        return found

    return observed


# -- hook points, turns, tools and actions -------------------------------------------------

#: hook points counted, and the counter each one adds to
_COUNTED: dict[str, Callable[[], None]] = {
    "turn.faulted": metrics.TURN_FAULTS.inc,
    "action.found_dispatched": metrics.DUPLICATE_GUARD.labels(guard="found_dispatched").inc,
}


def observed_hook(hook: Hook | None) -> Hook:
    """``hook``, with the hook points that are metrics counted first (None: only counted)."""

    def counted(point: str, claim: Claim) -> None:
        count = _COUNTED.get(point)
        if count is not None:
            count()

    if hook is None:
        return counted

    def observed(point: str, claim: Claim) -> None:
        counted(point, claim)
        hook(point, claim)

    return observed


def turn(claim: Claim) -> AbstractContextManager[tracing.Span]:
    """The span of one turn of ``claim``'s run (its seq and outcome are set when known)."""
    return tracing.span(
        "openseal.turn", {"openseal.run_id": claim.run_id, "openseal.epoch": claim.epoch}
    )


# The instruments' children by label values, looked up once: ``labels()`` checks and sorts
# its arguments under a lock at every call. Few values each (outcomes, skill names).


@lru_cache(maxsize=256)
def _turns(outcome: str) -> Counter:
    return metrics.TURNS.labels(outcome=outcome)


@lru_cache(maxsize=1024)
def _action_seconds(skill: str) -> Histogram:
    return metrics.ACTION_SECONDS.labels(skill=skill)


@lru_cache(maxsize=1024)
def _actions(skill: str, outcome: str) -> Counter:
    return metrics.ACTIONS.labels(skill=skill, outcome=outcome)


class TurnDone(Protocol):
    """What :func:`turn_done` reads of a turn's report (the engine's ``TurnReport``)."""

    @property
    def state(self) -> str | None: ...
    @property
    def turn_seq(self) -> int | None: ...
    @property
    def outcome(self) -> str: ...
    @property
    def seconds(self) -> float: ...


def turn_done(span: tracing.Span, report: TurnDone) -> None:
    """A turn ended: its outcome counted, its duration observed, its span labelled."""
    _turns(report.outcome).inc()
    metrics.TURN_SECONDS.observe(report.seconds)
    if not tracing.recording(span):
        return
    if report.turn_seq is not None:
        span.set_attribute("openseal.turn_seq", report.turn_seq)
    span.set_attribute("openseal.state", report.state or "")
    span.set_attribute("openseal.outcome", report.outcome)


def tool_call(run_id: str, tool: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run one tool ``call`` (a read skill) counted and traced; returns its tool message."""
    with tracing.span("openseal.tool_call", {"openseal.tool": tool}) as span:
        result = call()
        outcome = "error" if "error" in result else "ok"
        span.set_attribute("openseal.outcome", outcome)
    metrics.TOOL_CALLS.labels(tool=tool, outcome=outcome).inc()
    return result


def tool_refused(tool: str) -> None:
    metrics.TOOL_CALLS.labels(tool=tool, outcome="refused").inc()


def action_call(run_id: str, key: str, skill: str, send: Callable[[], SkillResult]) -> SkillResult:
    """Send one action (its skill call) counted, timed and traced."""
    attributes = {"openseal.run_id": run_id, "openseal.action_key": key, "openseal.skill": skill}
    started = time.monotonic()
    with tracing.span("openseal.action", attributes) as span:
        result = send()
        span.set_attribute("openseal.outcome", result.outcome)
    _action_seconds(skill).observe(time.monotonic() - started)
    _actions(skill, result.outcome).inc()
    return result
