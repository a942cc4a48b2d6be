"""Budgets a run carves out of its own for its agent requests (a ``delegate`` with a
``budget``), kept in the runs' ``budget_used``.

- **carve**: the transaction that makes the request holds the amount for it in the caller's
  ``budget_used["delegated"][<request id>]``, counted in the caller's counters like any
  reservation (so its own later work cannot spend it);
- **the child's limit**: each child run working on the request gets what is still held as
  its limit, ``budget_used["carved"] = {"agent_request_id": ..., "limit": {...}}``; the
  engine checks the lower of it and the child workflow's own budget;
- **charge**: a child run's end charges the caller what the child used of the carved budgets,
  taken from the hold (anything beyond it added), in the transaction that ends the child —
  a run ends once, so it is charged once;
- **release**: the request closing for good (completed with no review to come, reviewed,
  declined, failed, expired, canceled) gives back what is left of the hold, in the
  transaction that closes it; a released hold is gone, so it is released once.

Pure functions over the ``budget_used`` documents; the repositories write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: key of a caller's ``budget_used``: request id -> the amounts still held for it
DELEGATED = "delegated"
#: key of a child run's ``budget_used``: the request it works on and its limit
CARVED = "carved"


def carve(used: Mapping[str, Any], request_id: str, amount: Mapping[str, int]) -> dict[str, Any]:
    """The caller's ``used`` with ``amount`` counted and held for ``request_id``."""
    total = _add(used, amount)
    total[DELEGATED] = {**(used.get(DELEGATED) or {}), request_id: dict(amount)}
    return total


def held_for(used: Mapping[str, Any], request_id: str) -> dict[str, int] | None:
    """What the caller still holds for ``request_id`` (None: nothing was carved, or it was
    released)."""
    hold = (used.get(DELEGATED) or {}).get(request_id)
    return {str(k): int(v) for k, v in hold.items()} if isinstance(hold, Mapping) else None


def carved_child_budget(caller_used: Mapping[str, Any], request_id: str) -> dict[str, Any]:
    """The ``budget_used`` a child run working on ``request_id`` starts with: no use yet, and
    what its caller still holds for the request as its limit (nothing when none is held)."""
    hold = held_for(caller_used, request_id)
    if hold is None:
        return {}
    return {CARVED: {"agent_request_id": request_id, "limit": hold}}


def carved_limit(used: Mapping[str, Any]) -> dict[str, int]:
    """A child run's carved limit (empty: its budget was not carved out of a caller's)."""
    limit = (used.get(CARVED) or {}).get("limit") or {}
    return {str(k): int(v) for k, v in limit.items()}


def child_spent(used: Mapping[str, Any]) -> tuple[str, dict[str, int]] | None:
    """``(request id, what the child used of its carved budgets)`` of a child run's
    ``budget_used``; None for a run whose budget was not carved."""
    carved = used.get(CARVED)
    if not isinstance(carved, Mapping):
        return None
    spent = {name: int(used.get(name, 0)) for name in carved_limit(used)}
    return str(carved["agent_request_id"]), spent


def charge(used: Mapping[str, Any], request_id: str, spent: Mapping[str, int]) -> dict[str, Any]:
    """The caller's ``used`` once a child of ``request_id`` used ``spent``: taken from the
    hold, and what goes beyond it (or comes after its release) added to the counters."""
    hold = held_for(used, request_id)
    left = dict(hold or {})
    beyond: dict[str, int] = {}
    for name, amount in spent.items():
        taken = min(amount, left.get(name, 0))
        if name in left:
            left[name] -= taken
        beyond[name] = amount - taken
    total = _add(used, beyond)
    if hold is not None:
        total[DELEGATED] = {**(used.get(DELEGATED) or {}), request_id: left}
    return total


def release_carved(
    used: Mapping[str, Any], request_id: str
) -> tuple[dict[str, Any], dict[str, int] | None]:
    """The caller's ``used`` with what is left of ``request_id``'s hold given back, and that
    amount (None when nothing was held: nothing changes)."""
    hold = held_for(used, request_id)
    if hold is None:
        return dict(used), None
    total = _add(used, {name: -amount for name, amount in hold.items()})
    for name in hold:  # a counter only the hold made leaves no zero behind
        if total.get(name) == 0:
            del total[name]
    delegated = {k: v for k, v in (used.get(DELEGATED) or {}).items() if k != request_id}
    if delegated:
        total[DELEGATED] = delegated
    else:
        total.pop(DELEGATED, None)
    return total, {name: amount for name, amount in hold.items() if amount}


def release_all(
    used: Mapping[str, Any], request_ids: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    """A canceled caller's ``used`` with the holds of ``request_ids`` given back, and what
    each gave back."""
    total, released = dict(used), {}
    for request_id in request_ids:
        total, amount = release_carved(total, request_id)
        if amount is not None:
            released[request_id] = amount
    return total, released


def _add(used: Mapping[str, Any], amounts: Mapping[str, int]) -> dict[str, Any]:
    total = dict(used)
    for name, amount in amounts.items():
        if amount:
            total[name] = int(total.get(name, 0)) + int(amount)
    return total
