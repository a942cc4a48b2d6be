"""What a run's end settles, decided here for every end.

A run that ends (``completed``, ``failed``, ``canceled``) settles, in the transaction that
ends it, which holds its row lock (the one lock order, invariant 15):

1. its objective, when it is the objective's latest run: a completed run that satisfies it,
   or a canceled one, settles it by one UPDATE written with the ending event (which says
   what it did only if it matched); a failed or unsatisfied run creates the objective's next
   run, or fails it after the last attempt;
2. when it is a child run, the agent request it works on (the caller's row is locked next),
   then its parent's join (waking the parent when the join is decided).

Each repository does its part in that transaction; none calls another. An end through a
claim (:func:`end_run`, with the claim's fenced transaction) and a cancel
(:mod:`openseal.runtime.engine.cascade`) settle a child the same way (:func:`settle_child`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.store import Connection, FencedTx, Run, RunEnd, Store


def end_run(
    store: Store,
    tx: FencedTx,
    status: RunStatus,
    *,
    unsatisfied: str | None = None,
    **changes: Any,
) -> Run:
    """End the claimed run of ``tx`` with ``status`` after settling what its end decides
    (``unsatisfied``: why a completed run did not satisfy its objective); ``changes`` are
    the rest of the change that ends it (:meth:`FencedTx.update_run`'s arguments). A status
    that does not end the run (``needs_attention``) settles nothing."""
    if status not in TERMINAL_RUN_STATUSES:
        return tx.update_run(status=status, **changes)
    run = tx.run()
    objective = if_updated = None
    by_update = store.objectives.settle_by_update(
        tx.row_conn, run, status, tx.now, unsatisfied=unsatisfied
    )
    if by_update is not None:
        # written with the run's end: the objective's UPDATE, held back last, and the end's
        # event saying what it did only if it matched
        tx.update_with_flush(*by_update.update, by_update.then)
        if_updated = by_update.outcome
    else:
        objective = store.objectives.settle(
            tx.row_conn, run, status, tx.now, unsatisfied=unsatisfied
        )
    joined = False
    if run.parent_run_id is not None:
        ending = tx.run()  # with what it used, for a budget carved for it
        if "budget_used" in changes:
            ending = replace(ending, budget_used=changes["budget_used"])
        # ``conn`` writes what is held back first: settling appends to the caller run, and
        # this run's sequence is read again after that
        context = changes.get("context", ending.context)
        joined = settle_child(store, tx.conn, ending, status, context, tx.now)
    end = RunEnd(objective=objective, if_updated=if_updated, join_settled=joined)
    return tx.update_run(status=status, end=end, **changes)


def settle_child(
    store: Store, conn: Connection, child: Run, status: RunStatus, context: Any, now: datetime
) -> bool:
    """A child run's end (``context``: its context as it ends) settles the agent request it
    works on, then its parent's join; whether this settled the join."""
    store.agent_requests.settle_child(conn, child, status, context, now)
    return store.dependencies.settle_member(conn, child, status, now) is not None
