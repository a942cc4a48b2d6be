"""Per-run budgets: turns, model calls, tool calls and tokens from the compiled workflow.

``budget_used`` on the run counts what was spent. Work that costs a budget is paid in three
steps, each a fenced transaction holding the run's lock:

1. **reserve** before the work starts: the cost is checked against the limits *including*
   every other reservation still open, added to the counters, and held under the work's
   activity id in ``budget_used["in_flight"]``. Branches of a ``parallel`` or ``for_each``
   state share the run, so the last model or tool call of a budget goes to exactly one of
   them; the others are refused before they call anything.
2. **settle** when the result is recorded: the hold is replaced by what the work really cost
   (a model call's tokens are only known afterwards).
3. **release** when the work provably did not happen (the endpoint refused the request before
   running the model): the hold is taken back.

Each hold names the claim (its epoch) that took it. A hold taken under an earlier claim
belongs to an attempt whose outcome is unknown — its worker died or lost the run, and can no
longer settle it: the next reservation closes it as spent, because the work may have been
done and paid for. So a crash can neither lose a count nor let a run overspend, and a
replayed activity is not paid for twice.

A child run whose budget was carved out of its caller's (a ``delegate`` with a ``budget``)
carries that limit in its ``budget_used`` (:func:`limits_of`): every check takes the lower of
it and the workflow's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openseal.runtime.store import carved_limit

#: The budgets the engine enforces (spend belongs to actions, added with them).
COUNTED = ("turns", "model_calls", "tool_calls", "tokens")
#: key of ``budget_used`` holding the open reservations:
#: activity id -> ``{"cost": {...}, "epoch": <claim that reserved it>}``
IN_FLIGHT = "in_flight"


def limits_of(limits: Mapping[str, int], used: Mapping[str, Any]) -> dict[str, int]:
    """The limits a run is held to: its workflow's ``limits``, lowered to what was carved for
    it out of its caller's budget (recorded in its ``used``)."""
    effective = dict(limits)
    for name, carved in carved_limit(used).items():
        effective[name] = min(effective.get(name, carved), carved)
    return effective


def exceeded(
    limits: Mapping[str, int], used: Mapping[str, Any], cost: Mapping[str, int]
) -> str | None:
    """Why paying ``cost`` on top of ``used`` would exceed a limit, or None if it fits."""
    limits = limits_of(limits, used)
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
    limits = limits_of(limits, used)
    for name in COUNTED:
        limit = limits.get(name)
        if limit is not None and int(used.get(name, 0)) > limit:
            return f"budget exhausted: {name} used {used[name]} of {limit}"
    return None


def refusal(
    limits: Mapping[str, int], used: Mapping[str, Any], cost: Mapping[str, int]
) -> str | None:
    """Why new work costing ``cost`` may not start: it would not fit, or a budget whose cost
    is only known afterwards (tokens) is already spent."""
    return exceeded(limits, used, cost) or overspent(limits, used)


def add(used: Mapping[str, Any], cost: Mapping[str, int]) -> dict[str, Any]:
    total = dict(used)
    for name, amount in cost.items():
        if amount:
            total[name] = int(total.get(name, 0)) + int(amount)
    return total


def held(used: Mapping[str, Any], activity_id: str) -> dict[str, int] | None:
    """The cost reserved for ``activity_id`` and not settled yet, if any."""
    hold = (used.get(IN_FLIGHT) or {}).get(activity_id)
    if not isinstance(hold, Mapping):
        return None
    return {str(k): int(v) for k, v in (hold.get("cost") or {}).items()}


def abandoned(used: Mapping[str, Any], epoch: int) -> list[str]:
    """Activity ids whose hold was taken under a claim older than ``epoch``: no one will
    settle them any more."""
    flights = used.get(IN_FLIGHT) or {}
    return sorted(k for k, v in flights.items() if int((v or {}).get("epoch", 0)) < epoch)


def reserve(
    used: Mapping[str, Any], activity_id: str, cost: Mapping[str, int], *, epoch: int
) -> dict[str, Any]:
    """``used`` with ``cost`` added and held for ``activity_id`` by the claim ``epoch``."""
    total = add(used, cost)
    flights = dict(total.get(IN_FLIGHT) or {})
    flights[activity_id] = {"cost": {k: int(v) for k, v in cost.items() if v}, "epoch": epoch}
    total[IN_FLIGHT] = flights
    return total


def settle(used: Mapping[str, Any], activity_id: str, spent: Mapping[str, int]) -> dict[str, Any]:
    """``used`` with the hold of ``activity_id`` replaced by what was really ``spent``
    (nothing: a release). Without a hold, ``spent`` is simply added."""
    hold = held(used, activity_id) or {}
    total = add(used, {name: -amount for name, amount in hold.items()})
    total = add(total, spent)
    for name in hold:  # a released hold leaves no zero counter behind
        if total.get(name) == 0 and not spent.get(name):
            del total[name]
    flights = {k: v for k, v in (total.get(IN_FLIGHT) or {}).items() if k != activity_id}
    if flights:
        total[IN_FLIGHT] = flights
    else:
        total.pop(IN_FLIGHT, None)
    return total
