"""Cancellations that reach child runs, finished by any worker.

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

from openseal.runtime.store import Store

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
            if self.store.runs.cancel_unless_ended(child, actor, reason)
        ]
        if canceled:
            log.info("canceled %d child run(s) left running by a cancel", len(canceled))
        return canceled
