"""Canceling a run, and the cancellations that reach child runs, finished by any worker.

:func:`cancel_run` decides what a cancel touches, in one transaction: the run's row first
(invariant 15), then what belongs to the run (its open agent requests, pending approvals and
unsent actions are canceled; its objective, and its parent's request or join when it is a
child, are settled; its dependency groups are canceled), then the run itself. Each repository
works in that transaction; none of them calls another.

Canceling a run cancels the children it no longer needs: the runs of the dependency groups
it had open (unless they ``detach``) and the runs working on its agent requests. Closing an
agent request, or letting go of its child (a question to the caller, a completion sent back
for another try), stops the run that was working on it. Each child is canceled after the
commit that decided it, in a transaction of its own, because a child is always locked before
its parent (invariant 15). A process that stops in between (killed, its host gone) leaves
children that nobody wants running on, and could let them act.

What decides it is durable: the group is ``canceled``, the request is no longer open or names
another child. Every worker looks for the children such a decision left running when it
starts and every :data:`EVERY_SECONDS` after, and cancels them as the first process would
have; one that ended meanwhile, or that another worker canceled first, is left as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from functools import partial

from openseal.runtime.actions import spend
from openseal.runtime.engine.endings import settle_child
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import (
    CancelSweep,
    Connection,
    InvalidStatus,
    NotFound,
    Run,
    StopChild,
    Store,
)

log = logging.getLogger(__name__)

#: how often a worker looks for children left running (it looks when it starts, too)
EVERY_SECONDS = 30.0
#: at most this many children are canceled in one look; the rest wait for the next
BATCH = 100


class Cascade:
    """One per engine, shared by its threads: the first thread due looks, the others go on."""

    def __init__(self, store: Store, every: float = EVERY_SECONDS) -> None:
        self.store = store
        self.every = every
        self._due = 0.0  # at once, the first time
        self._lock = threading.Lock()

    def poll(self) -> list[str]:
        """Cancel the children left running, when a look is due; the ids of those canceled."""
        with self._lock:
            now = time.monotonic()
            if now < self._due:
                return []
            self._due = now + self.every
        return self.finish()

    def finish(self) -> list[str]:
        """Cancel the children left running now (up to :data:`BATCH` of each kind)."""
        left: list[tuple[str, str, str]] = [
            (child, f"run:{parent}", f"caller run {parent} was canceled")
            for child, parent in self.store.dependencies.abandoned(BATCH)
        ]
        left += [
            (child, "system", f"agent request {request} {status}")
            for child, request, status in self.store.agent_requests.abandoned(BATCH)
        ]
        left += [
            (child, f"run:{caller}", f"no agent request of run {caller} needs it any more")
            for child, caller in self.store.agent_requests.unlinked(BATCH)
        ]
        canceled = [
            child
            for child, actor, reason in left
            if cancel_unless_ended(self.store, child, actor, reason)
        ]
        if canceled:
            log.info("canceled %d child run(s) left running by a cancel", len(canceled))
        return canceled


def cancel_run(
    store: Store,
    run_id: str,
    actor: str,
    reason: str | None = None,
    *,
    expected_revision: int | None = None,
    after_commit: Callable[[str], None] | None = None,
) -> Run:
    """Cancel durably. The ``run.canceled`` event says what the run was doing, including the
    worker that may have been executing it, and which agent requests were canceled.

    The children it no longer needs are canceled after its commit, each on its own; a process
    that stops before them leaves them to the next worker's look (:class:`Cascade`).
    ``after_commit`` is a crash test's hook, called with the run's id between the two."""
    now = store.now()
    with store.write() as conn:
        run = store.runs.load(conn, run_id, lock=True)  # the run's row first (invariant 15)
        store.runs.check_cancel(run, expected_revision)
        swept = _sweep(store, conn, run, actor, now)
        # Child runs working on the canceled requests, and spawned children that do not
        # detach, stop after this commit: a child's own end locks the child and then this
        # run, so locking them here could deadlock.
        children = [*store.agent_requests.children_of(conn, swept.agent_requests), *swept.spawned]
        canceled = store.runs.mark_canceled(conn, run, swept, actor=actor, reason=reason, now=now)
    if after_commit is not None and children:
        after_commit(run_id)
    for child in children:
        cancel_unless_ended(store, child, actor, f"caller run {run_id} was canceled")
    return canceled


def _sweep(store: Store, conn: Connection, run: Run, actor: str, now: datetime) -> CancelSweep:
    """Cancel or settle what belongs to ``run`` (locked) in the cancel's transaction."""
    requests = store.agent_requests.cancel_for_run(conn, run.id, now)
    # Governed actions: pending approvals and unsent actions are canceled; anything
    # dispatched is reported as it stands, since it may already have happened.
    approvals = store.approvals.cancel_for_run(conn, run.id, now, actor)
    actions = store.actions.cancel_for_run(conn, run.id, now, actor)
    for canceled in actions:
        if not canceled["sent"]:  # never sent: what admission reserved is given back
            spend.settle(store, conn, canceled["action_id"], "released", now)
    objective = store.objectives.settle(conn, run, RunStatus.CANCELED, now)
    if run.parent_run_id is not None:
        settle_child(store, conn, run, RunStatus.CANCELED, run.context, now)
    spawned = store.dependencies.cancel_for_run(conn, run.id, now)
    return CancelSweep(requests, approvals, actions, objective, spawned)


def cancel_unless_ended(store: Store, run_id: str, actor: str, reason: str) -> bool:
    """Cancel a run another one no longer needs, which may have ended (or been canceled)
    meanwhile; whether this canceled it."""
    with suppress(InvalidStatus, NotFound):
        cancel_run(store, run_id, actor, reason)
        return True
    return False


def stop_child(store: Store) -> StopChild:
    """What an agent request's step calls for the child run it let go of, after its commit."""
    return partial(cancel_unless_ended, store)
