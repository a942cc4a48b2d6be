"""Per-run budgets: turns, model calls, tool calls and tokens from the compiled workflow.

``budget_used`` on the run counts what was spent. The engine checks a budget in the same
transaction that records the work it pays for, so a crash can neither lose a count nor let a
run overspend by replaying (a replayed activity is not paid for twice).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The budgets the engine enforces (spend belongs to actions, added with them).
COUNTED = ("turns", "model_calls", "tool_calls", "tokens")


def exceeded(
    limits: Mapping[str, int], used: Mapping[str, Any], cost: Mapping[str, int]
) -> str | None:
    """Why paying ``cost`` on top of ``used`` would exceed a limit, or None if it fits."""
    for name in COUNTED:
        limit = limits.get(name)
        if limit is None or not cost.get(name):
            continue
        after = int(used.get(name, 0)) + int(cost[name])
        if after > limit:
            return f"budget exhausted: {name} would reach {after} of {limit}"
    return None


def overspent(limits: Mapping[str, int], used: Mapping[str, Any]) -> str | None:
    """Why ``used`` is already beyond a limit (tokens are only known after a call)."""
    for name in COUNTED:
        limit = limits.get(name)
        if limit is not None and int(used.get(name, 0)) > limit:
            return f"budget exhausted: {name} used {used[name]} of {limit}"
    return None


def add(used: Mapping[str, Any], cost: Mapping[str, int]) -> dict[str, Any]:
    total = dict(used)
    for name, amount in cost.items():
        if amount:
            total[name] = int(total.get(name, 0)) + int(amount)
    return total
