"""``parallel`` (branches joined with all/any) and ``for_each`` (a bounded map).

Both run their units of work as sub-steps inside the state. Each unit's model and tool
results are activities keyed by branch or item (``<state>:<visit>:branch:<name>:model:<n>``,
``...:item:<i>:...``), so recovery replays finished units instead of redoing them. Units are
``turn`` or ``transform`` work: the compiler refuses ``action`` and ``delegate`` inside a
fan-out (OS409).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace
from functools import partial

from openseal.compiler import types as ty
from openseal.contract import ForEachSettings, ParallelSettings, WorkSettings
from openseal.runtime.compiled import evaluate_json
from openseal.runtime.engine.states.base import (
    Advance,
    Attention,
    BudgetSpent,
    Outcome,
    OverCapacity,
    RetryLater,
    StepContext,
    guarded,
)
from openseal.runtime.engine.states.turn import model_turn


def run_work(ctx: StepContext, work: WorkSettings, key: str) -> Outcome:
    """One unit of branch or item work, with activity ids under ``key``."""
    transform = work["transform"]
    if transform is not None:
        return Advance("done", evaluate_json(transform["output"], ctx.scope))
    turn = work["turn"]
    if turn is not None:
        output = turn["output"]
        schema = ty.to_json_schema(ty.from_json(output)) if output is not None else None
        return model_turn(ctx, turn, schema, key=key)
    kind = next((k for k, v in work.items() if v is not None), "unknown")
    # Only a document the compiler did not check gets here (OS409 refuses the rest).
    return Attention(f"{kind!r} work cannot run inside {ctx.state.kind} (OS409)")


def parallel(ctx: StepContext) -> Outcome:
    return guarded(ctx, partial(_parallel, ctx))


def for_each(ctx: StepContext) -> Outcome:
    return guarded(ctx, partial(_for_each, ctx))


def _parallel(ctx: StepContext) -> Outcome:
    config = ctx.state.settings(ParallelSettings)
    branches = sorted(config["branch"].items())
    if config["join"] == "any":
        reasons = []
        for name, work in branches:
            outcome = run_work(ctx, work, f"branch:{name}:")
            if isinstance(outcome, Advance):
                return Advance("done", {name: outcome.output})
            reasons.append(f"{name}: {getattr(outcome, 'reason', outcome)}")
        return _failed(ctx, "no branch succeeded (" + "; ".join(reasons) + ")")
    units = [partial(run_work, ctx, work, f"branch:{name}:") for name, work in branches]
    results = _map(units, concurrency=ctx.units_at_once(len(branches) or 1))
    return _joined(ctx, [name for name, _ in branches], results, as_list=False)


def _for_each(ctx: StepContext) -> Outcome:
    config = ctx.state.settings(ForEachSettings)
    items = evaluate_json(config["items"], ctx.scope)
    if not isinstance(items, list):
        return Attention(f"for_each items must be a list, got {type(items).__name__}")
    limit = config["max_items"]
    if len(items) > limit:
        return _failed(ctx, f"for_each has {len(items)} items, more than max_items {limit}")
    name = config["item"]
    work = config["do"]
    units = [
        partial(run_work, replace(ctx, scope={**ctx.scope, name: value}), work, f"item:{index}:")
        for index, value in enumerate(items)
    ]
    results = _map(units, concurrency=ctx.units_at_once(config["concurrency"]))
    return _joined(ctx, [str(i) for i in range(len(items))], results, as_list=True)


def _map(units: Sequence[Callable[[], Outcome]], *, concurrency: int) -> list[Outcome]:
    """Every unit's outcome, in order. Units run to the end even when one of them fails, so
    each call already made is settled and recorded; then the first failure is raised, a lost
    claim (or a bug) before a spent budget before a full cap before a transient fault (the
    latest retry)."""
    if len(units) <= 1 or concurrency <= 1:
        return [unit() for unit in units]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(units))) as pool:
        futures = [pool.submit(unit) for unit in units]
        wait(futures)
    failures = [e for e in (f.exception() for f in futures) if e is not None]
    if failures:
        raise _first(failures)
    return [future.result() for future in futures]


def _first(failures: list[BaseException]) -> BaseException:
    others = [e for e in failures if not isinstance(e, BudgetSpent | RetryLater | OverCapacity)]
    spent = [e for e in failures if isinstance(e, BudgetSpent)]
    full = [e for e in failures if isinstance(e, OverCapacity)]
    later = [e for e in failures if isinstance(e, RetryLater)]
    if others or spent or full:
        return (others or spent or full)[0]
    return max(later, key=lambda e: e.delay)


def _joined(
    ctx: StepContext, names: list[str], results: list[Outcome], *, as_list: bool
) -> Outcome:
    failures = [f"{n}: {getattr(r, 'reason', r)}" for n, r in zip(names, results, strict=True)
                if not isinstance(r, Advance)]  # fmt: skip
    if failures:
        return _failed(ctx, "; ".join(failures))
    outputs = [r.output for r in results if isinstance(r, Advance)]
    if as_list:
        return Advance("done", outputs)
    return Advance("done", dict(zip(names, outputs, strict=True)))


def _failed(ctx: StepContext, reason: str) -> Outcome:
    """Leave by ``failed`` when the workflow handles it; otherwise an operator must."""
    if ctx.workflow.outgoing(ctx.state.name, "failed"):
        return Advance("failed", {"error": reason})
    return Attention(reason)
