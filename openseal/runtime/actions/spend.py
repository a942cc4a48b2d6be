"""Settling an action's spend: its reservations follow the evidence, and so do the scope's quotas.

Admission reserves a proposal's spend against the workflow's and the owner's ``spend``
budgets, and the action state counts it against the run's scope's quotas of money in the
same transaction (each kept as a reservation too, under the quota's key and the window it
was counted in). Whatever settles the
action — a reply, a lookup, an operator's resolution, a recovery's look-up, a cancel before
it was sent — settles them all here, in its transaction (the run's row locked first):
``committed`` once the effect is confirmed, ``released`` once it certainly did not happen.
A release gives the quotas back what was counted, in the window it was counted in; a
confirmation that arrives after a release counts it again. A hold is settled once, so a
retry or a second reconciliation never counts it twice.
"""

from __future__ import annotations

from datetime import datetime

from openseal.runtime.store import Connection, Store

#: a money quota's amounts are counted in millionths of the currency
MICROS = 1_000_000


def settle(store: Store, conn: Connection, action_id: str, status: str, now: datetime) -> None:
    """Settle ``action_id``'s spend ``status`` (``committed`` or ``released``) in ``conn``."""
    holds = store.actions.quota_holds(conn, action_id)
    store.actions.settle(conn, action_id, status, now)
    for hold, amount, before in holds:
        if status == "released" and before == "reserved":
            delta = -round(amount * MICROS)
        elif status == "committed" and before == "released":
            delta = round(amount * MICROS)
        else:
            continue
        # held as ``<quota key>:<window>``: given back to, or counted again in, that window
        key, window = hold.rsplit(":", 1)
        store.quotas.add(conn, key, window, delta)
