"""Recording dispatch outcomes, and reconciling actions whose outcome is unknown (invariants 8, 14).

Every reply to any attempt of an action key is evidence and is recorded (invariant 14): a
confirmation moves the action to ``succeeded`` whenever it arrives — after a takeover, after
a later attempt was answered ambiguously, even after the action was recorded ``failed`` — and
its spend is committed; only a definite answer to the *latest* attempt proves no effect. A
reply that changes nothing is still kept in the action's history with an
``action.reply_recorded`` event.

An ambiguous dispatch (timeout or reset after sending, a status the skill marks ambiguous, a
409/425/429 to a keyed request) is ``unknown``; so is an action found ``dispatched`` with no
outcome after a crash — it is never blindly re-sent (invariant 4). Reconciliation asks the
destination through the skill's declared ``idempotency.lookup``: found → ``succeeded`` with
that record; not found → re-sent with the same key when the skill declares ``same_key_retry``
— but only once the last attempt can no longer be in flight (it ended where it ran, as a
python skill's killed process does, or its deadline passed: its dispatch time plus the skill's
timeout plus :data:`IN_FLIGHT_GRACE_SECONDS`); else ``needs_attention``.
With neither a lookup nor same-key retry the action needs an operator (``openseal actions
resolve``). A result (a purchase-order id) is recorded only from a reply of the destination.

Writers here lock the run row before the action (the one lock order, invariant 15).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import tenacity

from openseal.observability import metrics
from openseal.runtime.actions import spend
from openseal.runtime.actions.dispatch import (
    Fit,
    Target,
    confirmed,
    dispatch,
    lookup,
    output_of,
    read_lookup,
)
from openseal.runtime.actions.replies import unfit_reply
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, ActionStatus, RunStatus
from openseal.runtime.store import Action, Connection, EventSink, Store, transient
from openseal.skills import Skill
from openseal.skills.base import SkillResult
from openseal.skills.credentials import RuntimeContext
from openseal.skills.http import KEYED_AMBIGUOUS_STATUSES

#: how often one action may be sent with its key before an operator must look
MAX_DISPATCHES = 3
#: after an attempt's timeout, how long it may still count as in flight (clocks of different
#: hosts, a reply on its way)
IN_FLIGHT_GRACE_SECONDS = 2.0
#: how long to wait before looking an action up again after an inconclusive answer
INCONCLUSIVE_RETRY_SECONDS = 5.0

#: statuses a confirmation settles as ``succeeded``
CONFIRMABLE = (
    ActionStatus.DISPATCHED,
    ActionStatus.UNKNOWN,
    ActionStatus.NEEDS_ATTENTION,
    ActionStatus.FAILED,
)
#: statuses that end an action's outcome
SETTLED = (ActionStatus.SUCCEEDED, ActionStatus.FAILED)
#: statuses a definite answer to the latest attempt settles
OPEN = (ActionStatus.DISPATCHED, ActionStatus.UNKNOWN, ActionStatus.NEEDS_ATTENTION)


def attempt_deadline(action: Action, spec: Skill) -> datetime | None:
    """Until when the action's latest attempt may still be in flight; None when it is over.

    An attempt is over once the destination answered it — any status, except the "not now"
    answers to a keyed request (409, 425, 429), which say an attempt is still being processed —
    or once it certainly ended (a python skill's process that answered, died, or was killed
    at the timeout and reaped). Otherwise (an HTTP timeout or reset, a worker that stopped) it
    may be in flight until its dispatch time plus the skill's timeout plus
    :data:`IN_FLIGHT_GRACE_SECONDS`: every adapter ends its call by the timeout (an HTTP
    exchange is cut there, a python skill's process killed), and the grace covers a reply
    already on its way and the clocks of different hosts.
    """
    if action.dispatched_at is None:
        return None
    over = action.attempts
    if any(h.get("answered") == over or h.get("ended") == over for h in action.history):
        return None
    return action.dispatched_at + timedelta(seconds=float(spec.timeout) + IN_FLIGHT_GRACE_SECONDS)


def _over(result: SkillResult, attempt: int) -> dict[str, Any]:
    """The history mark of an attempt that is over (see :func:`attempt_deadline`): answered by
    the destination, or ended where it ran."""
    status = result.detail.get("status")
    if isinstance(status, int) and status not in KEYED_AMBIGUOUS_STATUSES:
        return {"answered": attempt}
    if result.detail.get("ended") is True:
        return {"ended": attempt}
    return {}


@contextmanager
def run_locked(store: Store, run_id: str) -> Iterator[Connection]:
    """A write transaction holding the run's row lock first (invariant 15)."""
    with store.write() as conn:
        store.runs.load(conn, run_id, lock=True)
        yield conn


#: evidence is recorded through ordinary faults: a few quick tries before giving up
_evidence_retry = tenacity.Retrying(
    retry=tenacity.retry_if_exception(transient),
    stop=tenacity.stop_after_attempt(6),
    wait=tenacity.wait_random_exponential(multiplier=0.05, max=2.0),
    reraise=True,
)


def record(store: Store, action: Action, result: SkillResult, target: Target, actor: str) -> Action:
    """Record what one attempt of ``action`` returned (not fenced: it describes the world)."""

    def attempt() -> Action:
        with run_locked(store, action.run_id) as conn:
            now = store.now()
            before = store.actions.get(conn, action.id).status
            recorded = record_in(store, conn, action, result, target, actor, now)
            if recorded.status != before and recorded.status in SETTLED:
                store.runs.wake_for_action(conn, recorded, actor, "action.reconciled", now)
            return recorded

    return _evidence_retry(attempt)


def record_in(
    store: Store,
    conn: Connection,
    action: Action,
    result: SkillResult,
    target: Target,
    actor: str,
    now: datetime,
    events: EventSink | None = None,
    *,
    fit: Fit | None = None,
) -> Action:
    """:func:`record` in the caller's transaction (which holds the run's lock). ``action`` is
    the action as the attempt sent it; the action as recorded afterwards is returned.
    ``events`` receives the run events, as in ``store.actions.move``; ``fit`` is the reply's
    :func:`output_of` when the caller has it already (see :func:`settle_evidence`)."""
    detail = {"source": "dispatch", "attempt": action.attempts, **_status_of(result)}
    # First as the attempt left it: every move is conditional on the action's revision, so it
    # writes nothing when anything changed the action since, and it is then read again.
    moved = settle_evidence(
        store, conn, action, result, target, latest=True, now=now, actor=actor, detail=detail,
        events=events, fit=fit,
    )  # fmt: skip
    if moved is not None:
        return moved
    current = store.actions.get(conn, action.id)
    latest = current.attempts == action.attempts
    if current.revision != action.revision:
        moved = settle_evidence(
            store, conn, current, result, target, latest=latest, now=now, actor=actor,
            detail=detail, events=events, fit=fit,
        )  # fmt: skip
        if moved is not None:
            return moved
    entry = {"reply": result.outcome, **detail, **({"error": result.error} if result.error else {})}
    noted = store.actions.note(
        conn, current, entry, now=now, actor=actor, event="action.reply_recorded",
        payload={**entry, "status": str(current.status), "latest": latest}, events=events,
    )  # fmt: skip
    return noted or store.actions.get(conn, action.id)


def settle_evidence(
    store: Store,
    conn: Any,
    current: Action,
    result: SkillResult,
    target: Target,
    *,
    latest: bool,
    now: datetime,
    actor: str,
    detail: dict[str, Any],
    events: EventSink | None = None,
    fit: Fit | None = None,
) -> Action | None:
    """Move ``current`` as the reply ``result`` proves, or None when it proves no change.

    A confirmed reply's output is fitted to the skill's output type (:func:`output_of`) unless
    ``fit`` is that already: a caller that has checked the reply passes its fit, so the same
    output is not checked against the same type again."""
    if confirmed(result):
        output, problem = fit if fit is not None else output_of(target.spec, result.output)
        if problem is None and current.status in CONFIRMABLE:
            moved = store.actions.move(
                conn, current, ActionStatus.SUCCEEDED, now=now, actor=actor, result=output,
                error=None, finished_at=now, event={**detail, "result": output}, events=events,
            )  # fmt: skip
            if moved is not None:
                _settle_spend(store, conn, target, current.id, "committed", now)
            return moved
        if problem is not None and latest and current.status in OPEN[:2]:
            reason = f"the destination confirmed the action but its reply does not fit: {problem}"
            return store.actions.move(
                conn, current, ActionStatus.NEEDS_ATTENTION, now=now, actor=actor, note=reason,
                error=reason, result=unfit_reply(target.spec, result.output), event=detail,
                events=events,
            )  # fmt: skip
        return None
    if not latest:
        return None  # only an answer to the latest attempt can prove no effect
    if result.outcome == "failed" and current.status in OPEN:
        moved = store.actions.move(
            conn, current, ActionStatus.FAILED, now=now, actor=actor, error=result.error,
            finished_at=now, event={**detail, "error": result.error}, events=events,
        )  # fmt: skip
        if moved is not None:
            _settle_spend(store, conn, target, current.id, "released", now)
        return moved
    if result.outcome == "unknown" and current.status == ActionStatus.DISPATCHED:
        return store.actions.move(
            conn, current, ActionStatus.UNKNOWN, now=now, actor=actor, note=result.error,
            error=result.error, event={**detail, "error": result.error}, events=events,
            entry=_over(result, current.attempts),
        )  # fmt: skip
    return None


def _settle_spend(
    store: Store, conn: Any, target: Target, action_id: str, status: str, now: datetime
) -> None:
    """Settle the action's spend reservations; a proposal without ``spend`` has none (admission
    reserves only a proposal's spend), so there is nothing to update."""
    if target.document.get("spend"):
        spend.settle(store, conn, action_id, status, now)


def _status_of(result: SkillResult) -> dict[str, Any]:
    return {k: v for k, v in result.detail.items() if k == "status"}


def mark_unknown(store: Store, action: Action, note: str, actor: str) -> Action:
    """A ``dispatched`` action with no recorded outcome: its effect is unknown."""
    with run_locked(store, action.run_id) as conn:
        moved = store.actions.move(
            conn, action, ActionStatus.UNKNOWN, now=store.now(), actor=actor, note=note,
            error=note,
        )  # fmt: skip
        return moved or store.actions.get(conn, action.id)


@dataclass(frozen=True)
class Step:
    """One reconciliation step: the action afterwards, why it is still open (if it is), and
    when to try again (if waiting will settle it: an attempt still in flight, an
    inconclusive lookup)."""

    action: Action
    pending: str | None = None
    retry_at: datetime | None = None


Resend = Callable[[Action], Action]


def reconcile(
    store: Store,
    target: Target,
    action: Action,
    context: RuntimeContext | None,
    resend: Resend | None,
    actor: str,
) -> Step:
    """Settle an ``unknown`` action by lookup or same-key retry; ``resend=None`` forbids sending."""
    idempotency = target.spec.idempotency
    retry = bool(idempotency and idempotency.same_key_retry)
    found = lookup(target, context)
    if found is not None:
        verdict = read_lookup(found)
        if verdict == "found":
            metrics.DUPLICATE_GUARD.labels(guard="lookup_found").inc()
            return Step(_found(store, action, found, target, actor))
        if verdict == "inconclusive":
            later = store.now() + timedelta(seconds=INCONCLUSIVE_RETRY_SECONDS)
            reason = f"the lookup was inconclusive: {found.error or found.outcome}"
            return Step(action, reason, later)
        deadline = attempt_deadline(action, target.spec)
        if deadline is not None and store.now() < deadline:
            reason = (
                f"the lookup found no record yet; attempt {action.attempts} may still be in "
                f"flight until {deadline.isoformat(timespec='seconds')}"
            )
            return Step(action, reason, deadline)
        if not retry:
            reason = (
                f"the lookup found no record for key {action.key} "
                "and the skill does not declare same-key retry"
            )
            return Step(_attention(store, action, actor, reason))
        return _retry(store, target, action, actor, resend, "the lookup found no record")
    if retry:
        return _retry(store, target, action, actor, resend, "no lookup is declared")
    reason = (
        "the outcome is unknown and the skill declares neither a lookup nor same-key retry; "
        "check the destination and resolve it"
    )
    return Step(_attention(store, action, actor, reason))


def _found(store: Store, action: Action, result: SkillResult, target: Target, actor: str) -> Action:
    now = store.now()
    with run_locked(store, action.run_id) as conn:
        current = store.actions.get(conn, action.id)
        found = SkillResult("succeeded", result.output, detail=result.detail)
        moved = settle_evidence(
            store, conn, current, found, target, latest=True, now=now, actor=actor,
            detail={"source": "lookup", **_status_of(result)},
        )  # fmt: skip
        return moved or current


def _attention(store: Store, action: Action, actor: str, reason: str) -> Action:
    with run_locked(store, action.run_id) as conn:
        moved = store.actions.move(
            conn, action, ActionStatus.NEEDS_ATTENTION, now=store.now(), actor=actor,
            expect=(ActionStatus.UNKNOWN,), note=reason, error=reason,
        )  # fmt: skip
        return moved or store.actions.get(conn, action.id)


def _retry(
    store: Store, target: Target, action: Action, actor: str, resend: Resend | None, why: str
) -> Step:
    if action.attempts >= MAX_DISPATCHES:
        reason = f"still unknown after {action.attempts} dispatches with key {action.key}"
        return Step(_attention(store, action, actor, reason))
    deadline = attempt_deadline(action, target.spec)
    if deadline is not None and store.now() < deadline:
        # Re-sending now could overlap the earlier attempt: the destination may answer 409
        # while it still processes it. Wait until that attempt is certainly over.
        reason = (
            f"{why}; attempt {action.attempts} may still be in flight until "
            f"{deadline.isoformat(timespec='seconds')}"
        )
        return Step(action, reason, deadline)
    if resend is None:
        return Step(action, f"{why}; same-key retry is not allowed here")
    return Step(resend(action))


# -- reconciling without a claim (the operator's `openseal actions reconcile`) -----------


def resend_unclaimed(
    store: Store, target: Target, context: RuntimeContext | None, actor: str
) -> Resend:
    """Same-key retry from outside a worker: only while no worker holds the run and it has not
    ended — nothing is sent on behalf of a canceled run."""

    def resend(action: Action) -> Action:
        now = store.now()
        with store.write() as conn:
            run = store.runs.load(conn, action.run_id, lock=True)
            current = store.actions.get(conn, action.id)
            deadline = attempt_deadline(current, target.spec)
            if deadline is not None and now < deadline:
                return current  # an attempt may still be in flight (a pause does not end it)
            if run.status == RunStatus.RUNNING or run.status in TERMINAL_RUN_STATUSES:
                return action
            sent = store.actions.move(
                conn, action, ActionStatus.DISPATCHED, now=now, actor=actor,
                expect=(ActionStatus.UNKNOWN,), attempts=action.attempts + 1, dispatched_at=now,
                event={"attempt": action.attempts + 1, "same_key_retry": True},
            )  # fmt: skip
        if sent is None:
            return action

        def late(result: SkillResult) -> None:
            record(store, sent, result, target, actor)

        return record(store, sent, dispatch(target, context, late), target, actor)

    return resend
