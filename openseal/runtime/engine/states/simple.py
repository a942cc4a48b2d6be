"""The states that need no model and no waiting: ``decision``, ``transform``, ``end``.

Also the placeholder for kinds whose handlers are not written yet.
"""

from __future__ import annotations

from openseal.contract import EndSettings, TransformSettings
from openseal.runtime.compiled import evaluate_json
from openseal.runtime.engine.states.base import Advance, Attention, Finish, Outcome, StepContext


def decision(ctx: StepContext) -> Outcome:
    """The executor takes the first ``done`` transition whose guard holds."""
    return Advance("done")


def transform(ctx: StepContext) -> Outcome:
    return Advance(
        "done", evaluate_json(ctx.state.settings(TransformSettings)["output"], ctx.scope)
    )


def end(ctx: StepContext) -> Outcome:
    return Finish(ctx.state.settings(EndSettings)["outcome"])


def not_supported(ctx: StepContext) -> Outcome:
    return Attention(f"state kind {ctx.state.kind!r} is not supported yet")
