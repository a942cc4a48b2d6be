"""Recovery mode: a restored store sends nothing before it reconciles (invariant 18).

A backup stops at one moment; the destinations it sent to did not. After a restore, every
action the backup holds that could have moved since is looked up at its destination by its
stable key, before any run is claimed:

* ``admitted``, ``dispatched``, ``unknown`` and ``needs_attention`` actions: they may have been
  sent after the backup point;
* ``proposed`` and ``waiting_for_approval`` actions: an approval decided after the backup point
  is gone, but the action it let through may already be at the destination.

What a lookup finds is recorded as the destination's evidence: a found action is
``succeeded`` with the destination's record (its run reads it and never sends it again);
``dispatched`` and not found becomes ``unknown``, reconciled as usual once recovery ends; an
action whose skill declares no lookup cannot be checked: one that may have been sent waits
for an operator (``needs_attention``). A destination that does not answer leaves its actions
pending: recovery cannot finish until a later pass reaches them. Approvals pending in the
restored store are listed: they are asked again.

Recovery mode is a row in the store (``store.recoveries``), so every process sees it: workers
claim nothing while it lasts (:meth:`Engine.run_forever`), ``/readyz`` says so, and an
operator's same-key retry is refused. Lookups only read; nothing here ever sends an action.
Leaving it is the operator's decision (:func:`finish`), once a pass found nothing pending.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from openseal.errors import RuntimeFailure
from openseal.runtime.actions import spend
from openseal.runtime.actions.dispatch import Target, lookup, output_of, read_lookup, target_for
from openseal.runtime.actions.reconcile import run_locked, settle_evidence
from openseal.runtime.clock import iso
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Action, Approval, ListQuery, Recovery, Store
from openseal.skills.base import SkillResult
from openseal.skills.credentials import RuntimeContext

#: actions that could have moved at their destination after the backup point
TO_RECONCILE = (
    ActionStatus.PROPOSED,
    ActionStatus.WAITING_FOR_APPROVAL,
    ActionStatus.ADMITTED,
    ActionStatus.DISPATCHED,
    ActionStatus.UNKNOWN,
    ActionStatus.NEEDS_ATTENTION,
)
#: of those, the ones that follow an approval: nothing was sent from the backup's point of view
NOT_SENT = (ActionStatus.PROPOSED, ActionStatus.WAITING_FOR_APPROVAL, ActionStatus.ADMITTED)
#: runs that may have gone on working after the backup point
WORKING = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SLEEPING)
#: how many actions (or approvals) one read of a pass takes; a pass reads every page
PAGE = 500


@dataclass(frozen=True)
class Finding:
    """What recovery found for one action: ``found`` (the destination holds it: succeeded),
    ``not_found``, ``no_lookup`` (the skill declares none: an operator checks it) or
    ``pending`` (the destination did not answer: looked up again by the next pass)."""

    action_id: str
    run_id: str
    key: str
    skill: str
    before: str
    after: str
    outcome: str
    detail: str
    result: Any = None


def start(
    store: Store,
    *,
    reason: str,
    actor: str,
    source: str | None = None,
    backup_at: datetime | None = None,
) -> Recovery:
    """Put the store in recovery mode (kept as it is when it already is)."""
    with store.write() as conn:
        return store.recoveries.start(
            conn, reason=reason, source=source, backup_at=backup_at, actor=actor,
            now=store.now(),
        )  # fmt: skip


def current(store: Store) -> Recovery | None:
    """The recovery in progress, or None."""
    return store.recoveries.active()


def latest(store: Store) -> Recovery | None:
    """The newest recovery, in progress or finished."""
    return store.recoveries.latest()


def reconcile(store: Store, context: RuntimeContext | None, actor: str) -> Recovery:
    """One reconciliation pass: look every action that could have moved up by its key, record
    what the destinations say, and keep the report on the recovery. Sends nothing."""
    recovery = _active(store)
    catalog = WorkflowCatalog(store)
    findings = [
        _reconcile_one(store, catalog, action, context, actor)
        for action in _actions(store)
        if action.status in TO_RECONCILE
    ]
    now = store.now()
    report = {
        "checked_at": iso(now),
        "actions": [asdict(finding) for finding in findings],
        "approvals": _asked_again(store, findings),
        "runs": _working_without_action(store, findings),
        "pending": sum(finding.outcome == "pending" for finding in findings),
    }
    with store.write() as conn:
        store.recoveries.save_report(conn, recovery.id, report, now)
    return _active(store)


def finish(store: Store, actor: str) -> Recovery:
    """Leave recovery mode: workers claim runs again. Refused before a pass has reconciled
    every action (``recovery_mode``)."""
    recovery = _active(store)
    report = recovery.report
    if report is None:
        raise RuntimeFailure(
            "recovery has not reconciled yet: run `openseal db recovery reconcile` first",
            code="recovery_mode",
        )
    if report["pending"]:
        raise RuntimeFailure(
            f"{report['pending']} action(s) are still pending (their destination did not "
            "answer): run `openseal db recovery reconcile` again once it does",
            code="recovery_mode",
        )
    with store.write() as conn:
        store.recoveries.finish(conn, recovery.id, actor=actor, now=store.now())
    finished = store.recoveries.latest()
    assert finished is not None
    return finished


def refuse_sending(store: Store, what: str) -> None:
    """Raise ``recovery_mode`` when the store is in recovery mode: ``what`` would send."""
    if store.recoveries.active() is not None:
        raise RuntimeFailure(
            f"the store is in recovery mode: {what} could send an action; see "
            "`openseal db recovery status`",
            code="recovery_mode",
        )


def _active(store: Store) -> Recovery:
    recovery = store.recoveries.active()
    if recovery is None:
        raise RuntimeFailure(
            "the store is not in recovery mode (`openseal db recovery start` enters it)",
            code="invalid_status",
        )
    return recovery


def _actions(store: Store) -> list[Action]:
    """Every action in a status that could have moved, oldest first, read page by page."""
    found: list[Action] = []
    for status in TO_RECONCILE:
        after: str | None = None
        while True:
            page = store.actions.newest(ListQuery(limit=PAGE, status=str(status), after=after))
            found.extend(page)
            if len(page) < PAGE:
                break
            after = page[-1].id
    return sorted(found, key=lambda action: action.id)


def _reconcile_one(
    store: Store,
    catalog: WorkflowCatalog,
    action: Action,
    context: RuntimeContext | None,
    actor: str,
) -> Finding:
    with store.read() as conn:
        proposal = store.proposals.get(conn, action.proposal_id)
        run = store.runs.load(conn, action.run_id)
    target = target_for(catalog.workflow(run.workflow_digest), proposal)
    answer = lookup(target, context)
    if answer is None:
        return _unverifiable(store, action, actor)
    verdict = read_lookup(answer)
    if verdict == "found":
        return _found(store, target, action, answer, actor)
    if verdict == "not_found":
        return _not_found(store, action, actor)
    why = answer.error or answer.outcome
    return _finding(action, action, "pending", f"the destination did not answer: {why}")


def _finding(
    before: Action, after: Action, outcome: str, detail: str, result: Any = None
) -> Finding:
    return Finding(
        action_id=before.id, run_id=before.run_id, key=before.key, skill=before.skill,
        before=str(before.status), after=str(after.status), outcome=outcome, detail=detail,
        result=result,
    )  # fmt: skip


def _found(
    store: Store, target: Target, action: Action, answer: SkillResult, actor: str
) -> Finding:
    """The destination holds the action: it succeeded, with the destination's record."""
    now = store.now()
    detail = {"source": "recovery_lookup", **_status_of(answer)}
    found = SkillResult("succeeded", answer.output, detail=answer.detail)
    with run_locked(store, action.run_id) as conn:
        current = store.actions.get(conn, action.id)
        if current.status in NOT_SENT:
            output, problem = output_of(target.spec, answer.output)
            moved = None if problem is not None else store.actions.move(
                conn, current, ActionStatus.SUCCEEDED, now=now, actor=actor, result=output,
                error=None, finished_at=now, event={**detail, "result": output},
                expect=NOT_SENT,
            )  # fmt: skip
            admitted = current.status == ActionStatus.ADMITTED
            if moved is not None and admitted and target.document.get("spend"):
                spend.settle(store, conn, current.id, "committed", now)  # admission reserved it
        else:
            moved = settle_evidence(
                store, conn, current, found, target, latest=True, now=now, actor=actor,
                detail=detail,
            )  # fmt: skip
        after = moved or store.actions.get(conn, action.id)
        if after.status == ActionStatus.SUCCEEDED:
            store.runs.wake_for_action(conn, after, actor, "action.reconciled", now)
    if after.status != ActionStatus.SUCCEEDED:
        why = "the destination holds it, but its record does not fit the skill's output"
        return _finding(action, after, "pending", why)
    return _finding(action, after, "found", "the destination holds it", after.result)


def _not_found(store: Store, action: Action, actor: str) -> Finding:
    """Not at the destination: a ``dispatched`` action becomes ``unknown`` (reconciled as usual
    once recovery ends); any other keeps its status."""
    after = action
    if action.status == ActionStatus.DISPATCHED:
        note = "restored from a backup; the destination does not hold it"
        with run_locked(store, action.run_id) as conn:
            moved = store.actions.move(
                conn, action, ActionStatus.UNKNOWN, now=store.now(), actor=actor, note=note,
                error=note,
            )  # fmt: skip
            after = moved or store.actions.get(conn, action.id)
    return _finding(action, after, "not_found", "the destination does not hold it")


def _unverifiable(store: Store, action: Action, actor: str) -> Finding:
    """The skill declares no lookup: an action that may have been sent waits for an operator
    (``openseal actions resolve``), unless its approval is pending in the restored store: then
    the approver is asked again, and the report says the destination could not be checked."""
    if action.status == ActionStatus.WAITING_FOR_APPROVAL and _approval_pending(store, action):
        why = "no lookup declared: its approval is asked again (approving sends it)"
        return _finding(action, action, "no_lookup", why)
    if action.status == ActionStatus.NEEDS_ATTENTION:
        return _finding(action, action, "no_lookup", "no lookup declared; an operator decides")
    note = (
        "restored from a backup and its skill declares no lookup: check the destination, then "
        "`openseal actions resolve`"
    )
    with run_locked(store, action.run_id) as conn:
        moved = store.actions.move(
            conn, action, ActionStatus.NEEDS_ATTENTION, now=store.now(), actor=actor,
            note=note, error=note,
        )  # fmt: skip
        after = moved or store.actions.get(conn, action.id)
    return _finding(action, after, "no_lookup", note)


def _approval_pending(store: Store, action: Action) -> bool:
    return any(
        approval.proposal_hash == action.proposal_hash
        for approval in _pending_approvals(store, action.run_id)
    )


def _pending_approvals(store: Store, run_id: str | None = None) -> list[Approval]:
    """Every pending approval (of ``run_id`` only, when given), oldest first."""
    found: list[Approval] = []
    after: str | None = None
    while True:
        query = ListQuery(limit=PAGE, status=str(ApprovalStatus.PENDING), after=after)
        page = store.approvals.newest(query, run_id=run_id)
        found.extend(page)
        if len(page) < PAGE:
            break
        after = page[-1].id
    return sorted(found, key=lambda approval: approval.id)


def _asked_again(store: Store, findings: list[Finding]) -> list[dict[str, Any]]:
    """The approvals pending in the restored store: asked again (a decision after the backup
    point is gone), each with what recovery found for its action."""
    by_run: dict[str, Finding] = {}
    for found in findings:
        by_run.setdefault(found.run_id, found)
    asked = []
    for approval in _pending_approvals(store):
        finding = by_run.get(approval.run_id)
        asked.append({
            "approval_id": approval.id,
            "run_id": approval.run_id,
            "proposal": approval.proposal_name,
            "action": None if finding is None else finding.outcome,
        })  # fmt: skip
    return asked


def _working_without_action(store: Store, findings: list[Finding]) -> list[dict[str, str]]:
    """Runs that were working at the backup point with no action to look up: one that drafts
    an action next may be redoing what it did after the backup point (the same proposal gets
    the same key; another one is a new action), so the report lists them to watch."""
    looked_up = {finding.run_id for finding in findings}
    found: list[dict[str, str]] = []
    for status in WORKING:
        after: str | None = None
        while True:
            page = store.runs.query(status, limit=PAGE, after=after)
            found.extend(
                {"run_id": run.id, "status": str(run.status)}
                for run in page
                if run.id not in looked_up
            )
            if len(page) < PAGE:
                break
            after = page[-1].id
    return sorted(found, key=lambda run: run["run_id"])


def _status_of(result: SkillResult) -> dict[str, Any]:
    return {k: v for k, v in result.detail.items() if k == "status"}
