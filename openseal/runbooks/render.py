"""Text and JSON views of plans and results, for ``openseal run``."""

from __future__ import annotations

from openseal.compiler import Plan, PlanStep, expr
from openseal.runbooks.executor import RunResult


def plan_text(plan: Plan, concurrency: int | None = None) -> str:
    """The execution order and the parallel levels, one step per line, without running anything."""
    levels = plan.levels()
    width = max((len(s) for s in plan.steps), default=0)
    lines = [
        f"runbook {plan.name}: {len(plan.steps)} steps in {len(levels)} levels, "
        f"concurrency {concurrency or plan.concurrency}, on_failure {plan.on_failure}",
        "order: " + ", ".join(plan.order()),
    ]
    for number, level in enumerate(levels, 1):
        parallel = " (parallel)" if len(level) > 1 else ""
        lines.append(f"level {number}{parallel}:")
        lines += [
            f"  {step_id.ljust(width)}  {_describe(plan.steps[step_id])}" for step_id in level
        ]
    return "\n".join(lines) + "\n"


def _describe(step: PlanStep) -> str:
    parts = [step.label]
    if step.needs:
        parts.append("needs " + ", ".join(step.needs))
    if step.after:
        parts.append("after " + ", ".join(step.after))
    for edge in step.edges:
        condition = f" if {expr.to_source(edge.condition)}" if edge.condition is not None else ""
        parts.append(f"from {edge.source}{condition}")
    if step.when is not None:
        parts.append(f"when {expr.to_source(step.when)}")
    parts.append(f"timeout {step.timeout:g}s")
    return "; ".join(parts)


def plan_json(plan: Plan, concurrency: int | None = None) -> dict[str, object]:
    return {
        "runbook": plan.name,
        "concurrency": concurrency or plan.concurrency,
        "on_failure": plan.on_failure,
        "order": plan.order(),
        "levels": plan.levels(),
        "steps": {sid: _step_json(plan.steps[sid]) for sid in plan.order()},
    }


def _step_json(step: PlanStep) -> dict[str, object]:
    return {
        "uses": step.uses,
        "skill": step.skill,
        "needs": list(step.needs),
        "after": list(step.after),
        "edges": [
            {
                "from": e.source,
                "condition": None if e.condition is None else expr.to_source(e.condition),
            }
            for e in step.edges
        ],
        "when": None if step.when is None else expr.to_source(step.when),
        "timeout": step.timeout,
    }


def summary(result: RunResult) -> str:
    """``runbook x succeeded in 0.12s: 4 succeeded, 1 skipped`` plus one line per problem step."""
    counts: dict[str, int] = {}
    for outcome in result.steps.values():
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    lines = [f"runbook {result.runbook} {result.status} in {result.duration:.2f}s: {tally}"]
    for outcome in result.steps.values():
        if outcome.status in ("failed", "canceled", "skipped") and outcome.error:
            lines.append(f"  {outcome.id}: {outcome.status} — {outcome.error}")
    if result.error and not any(o.status == "failed" for o in result.steps.values()):
        lines.append(f"  {result.error}")
    return "\n".join(lines)
