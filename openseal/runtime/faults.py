"""Named commit points where a crash test can stop a worker process.

DESIGN §8 asks for a crash-boundary matrix: kill a worker at every named point and check the
outcome. The engine calls its hook at ``turn.started`` (the turn is saved, nothing executed),
``activity.recorded`` (a model/tool result is saved, the run has not advanced) and
``turn.before_advance`` (the outcome is known, not yet applied).

A worker that batches commits (``--batch-size`` above 1) also has ``batch.before_commit``
(the bodies of several runs are written, the commit not issued) and ``batch.committed`` (the
commit is done, no run has gone on); they fire only for a batch of at least two runs, and the
file holds the batch's size instead of a run id.

A worker firing a schedule trigger has ``trigger.before_commit`` (the firing rows and the
objectives they start are written, the commit not issued); the file holds the occurrences'
keys.

Orchestration has two points, each before its commit and after it (``<point>.committed``):
``dependency.settle`` (a child run's end, in the transaction that ends it, settled its parent's
join and woke the parent) and ``objective.retry`` (a run's end, in the transaction that ends
it, created its objective's next run). They are reached in whichever fenced transaction ends
the run (a claim that runs pure states to the end, a turn's outcome, a spent budget); the file
holds the id of the run that ended.

Setting ``OPENSEAL_FAULT_POINT=<point>`` and ``OPENSEAL_FAULT_DIR=<dir>`` makes a worker,
on first reaching that point, create ``<dir>/<point>.reached`` (containing the run id) and
block until ``<dir>/<point>.release`` exists — long enough for a test to SIGKILL or SIGSTOP
it. Without those variables there is no hook and no cost.

Canceling a run (``openseal runs cancel``, the API) has ``run.canceled.committed`` (the run is
canceled and committed; the children it no longer needs are not canceled yet); the file holds
the run's id.

Archiving ended runs (``openseal db archive``) has ``archive.written`` (a batch is written and
verified, its rows still live) and ``archive.deleted`` (its rows deleted and committed, the
batch not yet marked committed); the file holds the batch's name.

A migration (activating a change proposal that moves waiting runs, or ``openseal runs
migrate``) has ``run.migrated`` (a run's move is written, the commit not issued); the file
holds the run's id. ``OPENSEAL_FAULT_SKIP=<n>`` lets the first ``n`` runs through, so a test
can stop a bulk migration halfway.

A model call has ``model.placed`` (its budget reserved and its place in the profile's shared
rate limit taken, both committed; nothing sent yet); the file holds the run id.

A server receiving an inbound event has ``event.received`` (the event and what it fires are
written, the commit not issued) and ``event.received.committed`` (committed, not answered);
the file holds the event's id.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

from openseal.runtime.store import Claim
from openseal.runtime.store.testing import (
    BATCH_POINTS,
    COMMIT_POINTS,
    RECEIVE_POINTS,
    BatchHook,
    ReceiveHook,
)

#: what the engine calls at each named point a claim's turn passes (a crash test's
#: :class:`BlockAt`, counted by :func:`openseal.runtime.telemetry.observed_hook`)
Hook = Callable[[str, Claim], None]

POINT_ENV = "OPENSEAL_FAULT_POINT"
DIR_ENV = "OPENSEAL_FAULT_DIR"
#: the points a run's turns pass through (the crash matrix kills a worker at each)
POINTS = (
    "turn.started",
    "activity.recorded",
    "turn.before_advance",
    # governed actions: admitted and marked dispatched (one commit, not sent yet), about to
    # send, and the reply received but its outcome not yet recorded
    "action.admitted",
    "action.dispatched",
    "action.before_record",
)
#: a model call's budget reserved and its rate-limit place taken, committed, not sent yet
#: (tests/runtime/flow/test_rate_limit_crash.py kills a worker there)
MODEL_POINT = "model.placed"
#: a schedule trigger's firings and objectives are written, not committed (no run's turn
#: passes here: tests/runtime/engine/test_trigger_workers.py kills a worker at it)
TRIGGER_POINT = "trigger.before_commit"
#: a cancel committed, the children it stops not reached yet
#: (tests/runtime/engine/test_cascade.py kills the canceling process there)
CANCEL_POINT = "run.canceled.committed"
#: a run's move to another version written, not committed
#: (tests/runtime/governance/test_migration_crash.py kills the migrating process there, halfway
#: through 500 runs)
MIGRATION_POINT = "run.migrated"
SKIP_ENV = "OPENSEAL_FAULT_SKIP"
#: an archive batch written (rows still live), and its rows deleted (batch not yet marked)
ARCHIVE_POINTS = ("archive.written", "archive.deleted")
#: a join settled, a retry created: before the commit and after it
#: (tests/runtime/engine/test_orchestration_crash.py kills a worker at each)
ORCHESTRATION_POINTS = tuple(
    name for point in COMMIT_POINTS for name in (point, f"{point}.committed")
)


class BlockAt:
    """Block the first thread reaching ``point`` until the release file appears."""

    def __init__(self, point: str, directory: Path, *, poll: float = 0.05, skip: int = 0) -> None:
        self.point = point
        self.directory = directory
        self.poll = poll
        #: how many times the point is passed before it blocks (the migration's point)
        self.skip = skip
        self._passed = 0
        self._fired = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, point: str, claim: Claim) -> None:
        if point == self.point:
            self._block(claim.run_id)

    def batch(self, point: str, members: int) -> None:
        """The group commit's points: only a batch of several runs counts."""
        if point == self.point and members >= 2:
            self._block(str(members))

    def trigger(self, keys: list[str]) -> None:
        """The scheduler's point: a trigger's firings written, not committed."""
        if self.point == TRIGGER_POINT:
            self._block(" ".join(keys))

    def event(self, point: str, event_id: str) -> None:
        """An inbound event's points: stored and fired, before its commit and after."""
        if point == self.point:
            self._block(event_id)

    def archived(self, point: str, batch: str) -> None:
        """An archive batch's points: written, then its rows deleted."""
        if point == self.point:
            self._block(batch)

    def canceled(self, run_id: str) -> None:
        """The cancel's point: the run canceled and committed, its children not yet."""
        if self.point == CANCEL_POINT:
            self._block(run_id)

    def migrated(self, run_id: str) -> None:
        """A migration's point: a run's move written, not committed (after ``skip`` runs)."""
        if self.point != MIGRATION_POINT:
            return
        with self._lock:
            self._passed += 1
            if self._passed <= self.skip:
                return
        self._block(run_id)

    def _block(self, content: str) -> None:
        with self._lock:
            if self._fired.is_set():
                return
            self._fired.set()
        # written aside and renamed, so whoever sees the file sees its content too
        reached = self.directory / f"{self.point}.reached"
        partial = reached.with_suffix(".partial")
        partial.write_text(content, encoding="utf-8")
        partial.replace(reached)
        release = self.directory / f"{self.point}.release"
        while not release.exists():
            time.sleep(self.poll)


def hook_from_env() -> BlockAt | None:
    point = os.environ.get(POINT_ENV)
    directory = os.environ.get(DIR_ENV)
    if not point or not directory:
        return None
    return BlockAt(point, Path(directory), skip=int(os.environ.get(SKIP_ENV) or 0))


def _armed(points: Collection[str]) -> BlockAt | None:
    """The hook ``OPENSEAL_FAULT_POINT`` arms, when it names one of ``points``."""
    hook = hook_from_env()
    return hook if hook is not None and hook.point in points else None


def batch_hook_from_env() -> BatchHook | None:
    """The group commit's hook when ``OPENSEAL_FAULT_POINT`` names one of its points."""
    hook = _armed(BATCH_POINTS)
    return None if hook is None else hook.batch


def commit_hook_from_env() -> Hook | None:
    """The store's hook (``store.leases.commit_hook``) when ``OPENSEAL_FAULT_POINT`` is one of
    :data:`ORCHESTRATION_POINTS`."""
    return _armed(ORCHESTRATION_POINTS)


def trigger_hook_from_env() -> Callable[[list[str]], None] | None:
    """The scheduler's hook when ``OPENSEAL_FAULT_POINT`` is ``trigger.before_commit``."""
    hook = _armed((TRIGGER_POINT,))
    return None if hook is None else hook.trigger


def event_hook_from_env() -> ReceiveHook | None:
    """The inbound events' hook when ``OPENSEAL_FAULT_POINT`` is one of their points."""
    hook = _armed(RECEIVE_POINTS)
    return None if hook is None else hook.event


def cancel_hook_from_env() -> Callable[[str], None] | None:
    """A cancel's hook when ``OPENSEAL_FAULT_POINT`` is ``run.canceled.committed``."""
    hook = _armed((CANCEL_POINT,))
    return None if hook is None else hook.canceled


def archive_hook_from_env() -> Callable[[str, str], None] | None:
    """The archive's hook when ``OPENSEAL_FAULT_POINT`` is one of :data:`ARCHIVE_POINTS`."""
    hook = _armed(ARCHIVE_POINTS)
    return None if hook is None else hook.archived
