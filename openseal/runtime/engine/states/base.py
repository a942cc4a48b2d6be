"""What a state handler gets (:class:`StepContext`) and returns (an :data:`Outcome`).

A handler executes one state of one run. It never writes to the store directly: model and
tool results go through :meth:`StepContext.activity` (recorded before the run advances,
replayed on recovery), and whatever the handler decides is applied by the executor in one
fenced transaction together with the turn's completion.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, NoReturn

from openseal.canonical import canonical_json
from openseal.contract import RetryWait
from openseal.errors import ClaimLost
from openseal.runtime.clock import iso
from openseal.runtime.compiled import CompiledWorkflow, StateSpec
from openseal.runtime.engine import budgets, quotas
from openseal.runtime.engine.capacity import Admission, WaitsFor, wait_for_capacity
from openseal.runtime.engine.endings import end_run
from openseal.runtime.engine.tools import ToolRunner
from openseal.runtime.faults import Hook
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Claim, FencedTx, Run, Store
from openseal.skills.credentials import RuntimeContext


@dataclass(frozen=True)
class Settle:
    """A record of what happened outside (an action's outcome) that an advance depends on.

    It is written with the advance, in the same fenced transaction (``within``, whose run
    events join the transaction's held-back batch; False when the record could not be made as
    expected). If that transaction is refused or fails, it is written on its own (``alone``):
    the outside world changed whether or not the claim holds.
    """

    within: Callable[[FencedTx], bool]
    alone: Callable[[], object]


@dataclass(frozen=True)
class Advance:
    """Leave the state by ``event``; ``output`` (if not None) becomes ``state.<name>.output``."""

    event: str
    output: Any = None
    #: written together with the advance (see :class:`Settle`)
    settle: Settle | None = None


@dataclass(frozen=True)
class Finish:
    """An ``end`` state: the run ends ``completed``, ``failed`` or ``canceled``."""

    outcome: str


@dataclass(frozen=True)
class Attention:
    """The run cannot continue without an operator; ``reason`` says why."""

    reason: str


@dataclass(frozen=True)
class Suspend:
    """The run waits; ``apply`` records the wait (and releases the lease) in the fenced tx."""

    apply: Callable[[FencedTx], None]
    description: str


Outcome = Advance | Finish | Attention | Suspend


class TurnStopped(Exception):
    """The turn ended early and the run was already moved (e.g. a budget ran out)."""


class LeaseLost(ClaimLost):
    """The heartbeat found the claim gone; stop before calling anything else."""

    code = "lease_lost"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id}: the claim's lease was lost")
        self.run_id = run_id


class HeldForRecovery(ClaimLost):
    """The store entered recovery mode before an action was sent (invariant 18): the action,
    saved as ``dispatched``, is not sent; the engine gives the run back and waits, and recovery
    looks the action up by its key."""

    code = "recovery_mode"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id}: the store is in recovery mode; nothing is sent")
        self.run_id = run_id


class BudgetSpent(Exception):
    """A budget does not allow the next model or tool call; the run has not been moved yet.

    Raised where the budget is checked (possibly in one branch of a fan-out while others are
    still settling their calls); the state's handler stops the run once all of its work is
    settled (:func:`guarded`, :meth:`StepContext.stop`).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RetryLater(Exception):
    """A transient fault outside the run (the model endpoint is down, rate limiting, a reply
    was lost): execute this state again in ``delay`` seconds.

    What the state recorded so far is replayed then, so only the failed call is made again.
    State handlers turn it into a ``sleeping`` run (:func:`guarded`); it holds no lease
    meanwhile. ``attempt`` counts the consecutive failed attempts, for the backoff.
    """

    def __init__(self, reason: str, *, delay: float, attempt: int = 1, code: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.delay = delay
        self.attempt = attempt
        self.code = code


class OverCapacity(Exception):
    """A call's skill is at its concurrency cap (nothing was sent, nor taken): the run waits
    for a slot in ``waiting_for_capacity`` (:func:`guarded`), holding no worker, and executes
    the state again when woken; what it recorded so far is replayed then."""

    def __init__(self, waits_for: WaitsFor) -> None:
        super().__init__(waits_for.describe())
        self.waits_for = waits_for


@dataclass(frozen=True)
class Lost:
    """What a failed attempt of an activity cost (``spent``; empty: nothing, the reservation
    is released) and what the ``activity.failed`` event says about it (``detail``)."""

    spent: Mapping[str, int]
    detail: Mapping[str, Any]


#: ``run.waiting["kind"]`` of a run sleeping until a state is retried (see :class:`RetryLater`)
RETRY_WAIT: Final = "retry"


def input_hash(document: Any) -> str:
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


@dataclass
class StepContext:
    """One turn of one state of one run, as a handler sees it."""

    store: Store
    claim: Claim
    run: Run
    workflow: CompiledWorkflow
    state: StateSpec
    visit: int
    #: prefix of this visit's activity ids, e.g. ``research:1`` (``research:1r1`` on a retry)
    prefix: str
    scope: dict[str, object]
    providers: Callable[[Any], Any]
    tools: ToolRunner
    hook: Hook
    lost: threading.Event
    turn_id: str
    max_repairs: int = 2
    #: the worker's runtime context (``--context``): adapter config and credential sources
    context: RuntimeContext | None = None
    #: what the state's preparer did in the transaction that saved the turn (see
    #: ``states.preparer_for``); None when the handler prepares the turn itself
    prepared: Any = None
    #: the engine's flow control: an action takes its skill's slot through it
    admission: Admission | None = None

    def now(self) -> datetime:
        return self.store.now()

    def units_at_once(self, wanted: int) -> int:
        """How many branches or items of a fan-out run at once (replay takes them one by one,
        so what it reports does not depend on which thread finished first)."""
        return wanted

    def activity(
        self,
        suffix: str,
        kind: str,
        request: Any,
        compute: Callable[[], Any],
        *,
        cost: Mapping[str, int],
        cost_of_result: Callable[[Any], Mapping[str, int]] | None = None,
        if_failed: Callable[[Exception], Lost | None] | None = None,
        if_unknown: Mapping[str, int] | None = None,
        reserving: Callable[[FencedTx], None] | None = None,
        preparing: Callable[[], None] | None = None,
    ) -> Any:
        """The recorded result of activity ``<prefix>:<suffix>``, computing it at most once.

        A recorded result is returned without calling ``compute`` (invariant 4). Otherwise
        ``cost`` is reserved against the budgets under the run's lock (:mod:`budgets`),
        ``compute`` runs outside any transaction, and its result is recorded with what it
        cost (``cost`` plus ``cost_of_result``) in one fenced transaction (invariant 2).
        ``reserving`` is called in the transaction that reserves the cost, once reserved (a
        model call's place in its rate limit): what it writes commits with the reservation.
        ``preparing`` is called before that transaction (what the call needs ready once its
        place is taken: its provider).

        When ``compute`` raises, ``if_failed`` says what the attempt cost (the reservation is
        settled to that, with an ``activity.failed`` event) before the exception propagates;
        None leaves the reservation open, as an attempt whose outcome is unknown. A later
        claim closes such a reservation as spent (:func:`close_abandoned`), adding
        ``if_unknown`` when it meets the same activity again.
        Raises :class:`BudgetSpent` when the budgets do not allow the call (nothing is called)
        or when the recorded result overspent them.
        """
        activity_id = f"{self.prefix}:{suffix}"
        digest = input_hash(request)
        limits = self.workflow.budget_limits()
        if preparing is not None:
            preparing()
        with self.store.leases.fenced(self.claim) as tx:
            found = tx.replayed(activity_id, digest)
            if found is not None:
                return found.result
            used = close_abandoned(self.store, tx, {activity_id: if_unknown or {}})
            reason = budgets.refusal(limits, used, cost)
            if reason is None:
                quotas.update_budget(
                    self.store,
                    tx,
                    budgets.reserve(used, activity_id, cost, epoch=tx.claim.epoch),
                    event="budget.reserved",
                    payload={"activity_id": activity_id, "reserved": dict(cost)},
                )
                if reserving is not None:
                    reserving(tx)
        if reason is not None:
            raise BudgetSpent(reason)
        if self.lost.is_set():
            raise LeaseLost(self.claim.run_id)
        try:
            result = compute()
        except Exception as exc:
            failed = if_failed(exc) if if_failed is not None else None
            if failed is not None:
                self._failed(activity_id, kind, failed)
            raise
        with self.store.leases.fenced(self.claim) as tx:
            recorded = tx.record_activity(activity_id, kind, digest, result)
            spent = dict(cost)
            if cost_of_result is not None:
                spent.update(cost_of_result(recorded.result))
            used = budgets.settle(tx.run().budget_used, activity_id, spent)
            quotas.update_budget(
                self.store,
                tx,
                used,
                event="budget.spent",
                payload={"activity_id": activity_id, "spent": spent},
            )
            late = budgets.overspent(limits, used)
        self.hook("activity.recorded", self.claim)
        if late is not None:
            raise BudgetSpent(late)
        return recorded.result

    def _failed(self, activity_id: str, kind: str, failed: Lost) -> None:
        with self.store.leases.fenced(self.claim) as tx:
            used = budgets.settle(tx.run().budget_used, activity_id, failed.spent)
            quotas.update_budget(
                self.store,
                tx,
                used,
                event="activity.failed",
                payload={
                    **failed.detail,
                    "activity_id": activity_id,
                    "kind": kind,
                    "spent": dict(failed.spent),
                },
            )

    def wait_in(self, tx: FencedTx) -> None:
        """Close the turn in ``tx`` as one that ended waiting: the run was moved to a wait in
        ``tx`` (for capacity), and the handler raises :class:`TurnStopped` once ``tx`` has
        committed."""
        tx.record_turn(self.turn_id, phase="waiting", status="completed", event=False)

    def stop(self, reason: str) -> NoReturn:
        """Stop the run for an exhausted budget (in its own transaction); raises
        :class:`TurnStopped`."""
        with self.store.leases.fenced(self.claim) as tx:
            self.exhaust(tx, reason)
        raise TurnStopped(reason)

    def retry_attempts(self) -> int:
        """Consecutive failed attempts before this turn, when it resumes a :class:`RetryLater`."""
        waiting = self.run.waiting
        if waiting is None or waiting["kind"] != RETRY_WAIT:
            return 0
        return waiting["retries"] if waiting.get("state") == self.state.name else 0

    def exhaust(self, tx: FencedTx, reason: str) -> None:
        """Stop the run for an exhausted budget, per the workflow's ``on_budget_exhausted``."""
        failed = self.workflow.on_budget_exhausted() == "failed"
        tx.record_turn(self.turn_id, status="failed", error=reason)
        end_run(
            self.store,
            tx,
            RunStatus.FAILED if failed else RunStatus.NEEDS_ATTENTION,
            waiting={"kind": "attention", "reason": reason, "state": self.state.name},
            event="run.budget_exhausted",
            payload={"reason": reason},
        )


Handler = Callable[[StepContext], Outcome]
#: prepares part of a turn in the transaction that saves it (docs/decisions/0013): what it
#: returns reaches the handler as ``StepContext.prepared``; None leaves the handler to do it
Preparer = Callable[[StepContext, FencedTx], Any]


def close_abandoned(
    store: Store, tx: FencedTx, extra: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    """Close the budget reservations an earlier claim left open, in ``tx``; the budgets after.

    Their calls may have been made and paid for, so each stays counted (plus ``extra`` of its
    activity id: the estimate of what an unanswered call cost), with an ``activity.lost``
    event.
    """
    used = tx.run().budget_used
    for activity_id in budgets.abandoned(used, tx.claim.epoch):
        spent = budgets.add(budgets.held(used, activity_id) or {}, extra.get(activity_id, {}))
        used = budgets.settle(used, activity_id, spent)
        quotas.update_budget(
            store,
            tx,
            used,
            event="activity.lost",
            payload={"activity_id": activity_id, "spent": spent},
        )
    return dict(used)


def guarded(ctx: StepContext, work: Callable[[], Outcome]) -> Outcome:
    """``work()``, with its budget stop applied and a transient fault turned into a wait.

    :class:`BudgetSpent` stops the run per ``on_budget_exhausted`` (raising
    :class:`TurnStopped`); :class:`RetryLater` becomes a ``sleeping`` run, woken when the
    delay has passed to execute the state again (recorded calls are replayed, not repeated);
    :class:`OverCapacity` a run ``waiting_for_capacity``, woken when a slot frees.
    """
    try:
        return work()
    except BudgetSpent as spent:
        ctx.stop(spent.reason)
    except RetryLater as later:
        return retry_later(ctx, later)
    except OverCapacity as over:
        return wait_for_slot(ctx, over.waits_for)


def wait_for_slot(ctx: StepContext, waits_for: WaitsFor) -> Suspend:
    """Wait in ``waiting_for_capacity`` for ``waits_for`` (a skill's cap a call found full)."""

    def wait(tx: FencedTx) -> None:
        wait_for_capacity(ctx.store, tx, waits_for)

    return Suspend(wait, f"capacity: {waits_for.describe()}")


def retry_later(ctx: StepContext, later: RetryLater) -> Suspend:
    """Sleep until ``later.delay`` has passed; ``run.waiting`` says why and how often.

    The wait has the shape of the engine's retry after a database fault (``kind = "retry"``,
    ``retries``, ``retry_at``, ``fault``), plus the ``state`` retried and the fault's
    ``code``.
    """
    due = ctx.now() + timedelta(seconds=later.delay)
    waiting: RetryWait = {
        "kind": RETRY_WAIT,
        "state": ctx.state.name,
        "retries": later.attempt,
        "retry_at": iso(due),
        "fault": later.reason,
        "code": later.code,
    }

    def sleep(tx: FencedTx) -> None:
        tx.update_run(
            status=RunStatus.SLEEPING, wake_at=due, waiting=waiting, event="turn.retry_scheduled"
        )

    return Suspend(sleep, f"retrying at {iso(due)} ({later.code or 'transient'}: {later.reason})")


def state_scope(inputs: Mapping[str, Any], states: Mapping[str, Any]) -> dict[str, object]:
    """The roots a workflow expression may read: ``input`` and ``state.<name>.output``."""
    return {
        "input": dict(inputs),
        "state": {name: {"output": value} for name, value in states.items()},
    }
