"""Recording dispatch outcomes, and reconciling actions whose outcome is unknown (invariant 8).

An ambiguous dispatch (timeout or reset after sending, a status the skill marks ambiguous) is
``unknown``; so is an action found ``dispatched`` with no outcome after a crash — it is never
blindly re-sent (invariant 4). Reconciliation asks the destination through the skill's declared
``idempotency.lookup``: found → ``succeeded`` with that record; not found → re-sent with the
same key when the skill declares ``same_key_retry``, else ``needs_attention``. With neither a
lookup nor same-key retry the action needs an operator (``openseal actions resolve``). A
result (a purchase-order id) is recorded only from a reply of the destination.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime import actions as rows
from openseal.runtime.actions import Action
from openseal.runtime.dispatch import (
    Target,
    confirmed,
    dispatch,
    lookup,
    output_of,
    read_lookup,
)
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, ActionStatus, RunStatus
from openseal.runtime.store import Store
from openseal.skills.base import SkillResult
from openseal.skills.credentials import RuntimeContext

#: how often one action may be sent with its key before an operator must look
MAX_DISPATCHES = 3


def record(store: Store, action: Action, result: SkillResult, target: Target, actor: str) -> Action:
    """Record what one dispatch of ``action`` returned (not fenced: it describes the world)."""
    with store.write() as conn:
        return record_in(conn, action, result, target, actor, store.now())[0]


def record_in(
    conn: sa.Connection,
    action: Action,
    result: SkillResult,
    target: Target,
    actor: str,
    now: datetime,
    events: rows.EventSink | None = None,
) -> tuple[Action, bool]:
    """:func:`record` in the caller's transaction; also whether this call recorded it (False:
    someone else settled the action meanwhile — recovery, an operator). ``events`` receives
    the run event, as in :func:`openseal.runtime.actions.move`."""
    current = rows.get(conn, action.id)
    if current.status != ActionStatus.DISPATCHED or current.attempts != action.attempts:
        return current, False
    moved = _settle(
        conn, current, result, target, now=now, actor=actor, source="dispatch", events=events
    )
    return (moved, True) if moved is not None else (current, False)


def _settle(
    conn: Any,
    action: Action,
    result: SkillResult,
    target: Target,
    *,
    now: Any,
    actor: str,
    source: str,
    events: rows.EventSink | None = None,
) -> Action | None:
    detail = {"source": source, **{k: v for k, v in result.detail.items() if k == "status"}}
    if confirmed(result):
        output, problem = output_of(target.spec, result.output)
        if problem is not None:
            reason = f"the destination confirmed the action but its reply does not fit: {problem}"
            return rows.move(
                conn, action, ActionStatus.NEEDS_ATTENTION, now=now, actor=actor, note=reason,
                error=reason, result=result.output, event=detail, events=events,
            )  # fmt: skip
        moved = rows.move(
            conn, action, ActionStatus.SUCCEEDED, now=now, actor=actor, result=output,
            error=None, finished_at=now, event={**detail, "result": output}, events=events,
        )  # fmt: skip
        if moved is not None:
            rows.settle(conn, action.id, "committed", now)
        return moved
    if result.outcome == "failed":
        moved = rows.move(
            conn, action, ActionStatus.FAILED, now=now, actor=actor, error=result.error,
            finished_at=now, event={**detail, "error": result.error}, events=events,
        )  # fmt: skip
        if moved is not None:
            rows.settle(conn, action.id, "released", now)
        return moved
    return rows.move(
        conn, action, ActionStatus.UNKNOWN, now=now, actor=actor, note=result.error,
        error=result.error, event={**detail, "error": result.error}, events=events,
    )  # fmt: skip


def mark_unknown(store: Store, action: Action, note: str, actor: str) -> Action:
    """A ``dispatched`` action with no recorded outcome: its effect is unknown."""
    with store.write() as conn:
        moved = rows.move(
            conn, action, ActionStatus.UNKNOWN, now=store.now(), actor=actor, note=note,
            error=note,
        )  # fmt: skip
        return moved or rows.get(conn, action.id)


@dataclass(frozen=True)
class Step:
    """One reconciliation step: the action afterwards, and why it is still open (if it is)."""

    action: Action
    pending: str | None = None


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
            return Step(_found(store, action, found, target, actor))
        if verdict == "inconclusive":
            return Step(action, f"the lookup was inconclusive: {found.error or found.outcome}")
        if not retry:
            reason = (
                f"the lookup found no record for key {action.key} "
                "and the skill does not declare same-key retry"
            )
            return Step(_attention(store, action, actor, reason))
        return _retry(store, action, actor, resend, "the lookup found no record")
    if retry:
        return _retry(store, action, actor, resend, "no lookup is declared")
    reason = (
        "the outcome is unknown and the skill declares neither a lookup nor same-key retry; "
        "check the destination and resolve it"
    )
    return Step(_attention(store, action, actor, reason))


def _found(store: Store, action: Action, result: SkillResult, target: Target, actor: str) -> Action:
    now = store.now()
    with store.write() as conn:
        current = rows.get(conn, action.id)
        if current.status not in (ActionStatus.UNKNOWN, ActionStatus.NEEDS_ATTENTION):
            return current
        found = SkillResult("succeeded", result.output, detail=result.detail)
        moved = _settle(conn, current, found, target, now=now, actor=actor, source="lookup")
        return moved or rows.get(conn, action.id)


def _attention(store: Store, action: Action, actor: str, reason: str) -> Action:
    with store.write() as conn:
        moved = rows.move(
            conn, action, ActionStatus.NEEDS_ATTENTION, now=store.now(), actor=actor,
            expect=(ActionStatus.UNKNOWN,), note=reason, error=reason,
        )  # fmt: skip
        return moved or rows.get(conn, action.id)


def _retry(store: Store, action: Action, actor: str, resend: Resend | None, why: str) -> Step:
    if action.attempts >= MAX_DISPATCHES:
        reason = f"still unknown after {action.attempts} dispatches with key {action.key}"
        return Step(_attention(store, action, actor, reason))
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
            run = store.load_run(conn, action.run_id, lock=True)
            if run.status == RunStatus.RUNNING or run.status in TERMINAL_RUN_STATUSES:
                return action
            sent = rows.move(
                conn, action, ActionStatus.DISPATCHED, now=now, actor=actor,
                expect=(ActionStatus.UNKNOWN,), attempts=action.attempts + 1, dispatched_at=now,
                event={"attempt": action.attempts + 1, "same_key_retry": True},
            )  # fmt: skip
        if sent is None:
            return action
        return record(store, sent, dispatch(target, context), target, actor)

    return resend
