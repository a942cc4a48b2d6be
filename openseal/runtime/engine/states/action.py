"""``action``: admit, dispatch once with the stable key, record, reconcile (invariants 7–9).

The action of a proposal moves through its statuses in separate, persisted steps, so a crash
between any two leaves a status the next worker acts on safely:

* not yet admitted → admission (one fenced transaction, :mod:`openseal.runtime.actions.admission`);
* ``admitted`` → marked ``dispatched`` (fenced: a cancel since admission stops it here), then
  the skill is called with ``idempotency_key = <run>:<proposal hash>``, then the outcome is
  recorded;
* ``dispatched`` with no outcome (the worker died mid-call) → ``unknown``, never re-sent
  blindly; ``unknown`` → reconciled by lookup or same-key retry
  (:mod:`~openseal.runtime.actions.reconcile`); while an earlier attempt may still be in flight, or
  the destination answers a lookup inconclusively, the run sleeps and reconciles later;
* ``succeeded`` → leave by ``done`` with the confirmed result; ``failed`` → by ``failed``;
  ``needs_attention`` → the run waits for ``openseal actions resolve``.

An action state may also name a skill and args directly instead of a proposal; its payload is
then drafted here (named after the state) exactly as a proposal state would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from openseal.contract import ActionSettings, ReconcileWait
from openseal.runtime.actions import admission, proposals
from openseal.runtime.actions.dispatch import (
    Fit,
    Target,
    confirmed,
    dispatch,
    output_of,
    target_for,
    unavailable,
)
from openseal.runtime.actions.proposals import Draft
from openseal.runtime.actions.reconcile import (
    Step,
    mark_unknown,
    reconcile,
    record,
    record_in,
    run_locked,
)
from openseal.runtime.clock import iso
from openseal.runtime.compiled import DefinitionError
from openseal.runtime.engine import quotas, rate_limits
from openseal.runtime.engine.capacity import WaitsFor, wait_for_capacity
from openseal.runtime.engine.states.base import (
    Advance,
    Attention,
    HeldForRecovery,
    LeaseLost,
    Outcome,
    RetryLater,
    Settle,
    StepContext,
    Suspend,
    TurnStopped,
    guarded,
)
from openseal.runtime.engine.states.proposal import store_draft_in
from openseal.runtime.statuses import ActionStatus, RunStatus
from openseal.runtime.store import (
    Action,
    Connection,
    FencedTx,
    NextMove,
    Proposal,
    RowSink,
    Store,
)
from openseal.skills.base import SkillResult

#: bound on status changes in one turn (admission, dispatches, reconciliation)
MAX_STEPS = 12


def execute(ctx: StepContext) -> Outcome:
    """The action state; a skill over its rate limit puts the run to sleep (:func:`guarded`)."""
    return guarded(ctx, lambda: _execute(ctx))


def _execute(ctx: StepContext) -> Outcome:
    # prepared with the turn's save, or (None) now
    prepared = ctx.prepared if ctx.prepared is not None else _prepare(ctx)
    if isinstance(prepared, str):
        return Attention(prepared)
    if isinstance(prepared, quotas.Over):
        return over_quota(ctx, prepared)
    if prepared.admitted:
        ctx.hook("action.admitted", ctx.claim)
    target, proposal, action, sent = (
        prepared.target,
        prepared.proposal,
        prepared.action,
        prepared.sent,
    )
    actor = f"worker:{ctx.claim.worker_id}"
    if sent is not None:
        result = _dispatch(ctx, target, sent, prepared.held)
        leaving = _leave_with(ctx, target, sent, result)
        if leaving is not None:
            return leaving
        action = record(ctx.store, sent, result, target, actor)
    for _ in range(MAX_STEPS):
        status = action.status
        held = _held_back(ctx, target, proposal, action)
        if held is not None:
            return Attention(held)
        if status in admission.ADMISSIBLE:
            admitted = _admit(ctx, proposal, action)
            if isinstance(admitted, str):
                return Attention(f"action {action.id} was not admitted: {admitted}")
            if isinstance(admitted, quotas.Over):
                return over_quota(ctx, admitted)
            action = admitted
        elif status == ActionStatus.ADMITTED:
            action = _send(ctx, target, action)
        elif status == ActionStatus.DISPATCHED:
            ctx.hook("action.found_dispatched", ctx.claim)
            note = "found dispatched with no recorded outcome; it may have taken effect"
            action = mark_unknown(ctx.store, action, note, actor)
        elif status == ActionStatus.UNKNOWN:
            step = reconcile(
                ctx.store, target, action, ctx.context, lambda a: _send(ctx, target, a), actor
            )
            if step.retry_at is not None:
                return _reconcile_later(ctx, step)
            if step.pending is not None:
                return Attention(f"action {action.id} outcome unknown: {step.pending}")
            action = step.action
        else:
            return leave(action)
    return Attention(f"action {action.id} did not settle (status {action.status})")


#: how many times in a row a run sleeps to reconcile one action before an operator must look
MAX_RECONCILE_WAITS = 12


def _reconcile_later(ctx: StepContext, step: Step) -> Outcome:
    """Sleep until reconciling can make progress (an earlier attempt is over, the destination
    may answer a lookup again); no worker is held meanwhile (invariant 5)."""
    action, due = step.action, step.retry_at
    assert due is not None
    previous = ctx.run.waiting
    waits = 1
    if (
        previous is not None
        and previous["kind"] == "reconcile"
        and previous["action_id"] == action.id
    ):
        waits = previous["waits"] + 1
    if waits > MAX_RECONCILE_WAITS:
        return Attention(
            f"action {action.id} outcome still unknown after {waits - 1} tries: {step.pending}"
        )
    document: ReconcileWait = {
        "kind": "reconcile",
        "state": ctx.state.name,
        "action_id": action.id,
        "reason": step.pending,
        "due": iso(due),
        "waits": waits,
    }

    def sleep(tx: FencedTx) -> None:
        tx.update_run(
            status=RunStatus.SLEEPING, wake_at=due, waiting=document, event="action.reconcile_later"
        )

    return Suspend(sleep, f"action {action.id}: {step.pending}; reconciling again at {iso(due)}")


@dataclass(frozen=True)
class Prepared:
    """What preparing an action state's turn left: the action, and whether to send it."""

    target: Target
    proposal: Proposal
    action: Action
    #: the action as this preparation marked it ``dispatched``: to be sent now
    sent: Action | None
    #: this preparation admitted the action
    admitted: bool
    #: the store was in recovery mode when the transaction marked ``sent``: not to be sent
    held: bool = False


def over_quota(ctx: StepContext, over: quotas.Over) -> Suspend:
    """The action's spend would pass a quota of its run's scope: it is not admitted (it keeps
    its status and its approval) and the run waits in ``waiting_for_capacity``, the quota
    named, holding no worker, until the quota has room for the amount (a new window, a raised
    or removed quota, spend given back); its next turn admits the action afresh."""
    waits_for = WaitsFor("quota", over.quota.key, over.detail())

    def wait(tx: FencedTx) -> None:
        wait_for_capacity(ctx.store, tx, waits_for)

    return Suspend(wait, f"the action's spend waits for {waits_for.describe()}")


def _prepare(ctx: StepContext) -> Prepared | str | quotas.Over:
    """In one fenced transaction of its own: record the draft (direct form), admit, mark
    dispatched (see :func:`_prepare_in`)."""
    drafted = _drafted(ctx)
    # A large artefact's file (SQLite) is written before the transaction, so no lock is held
    # over its fsync; a proposal's bytes go into its row, in the transaction.
    digest = ctx.store.artifacts.write_file(drafted.data) if drafted is not None else ""
    # the fence's statement also reads the active version the admission holds the grants to
    with ctx.store.leases.fenced(ctx.claim, deployment=ctx.workflow.name) as tx:
        return _prepare_in(ctx, tx, drafted, digest)


def prepare_in(ctx: StepContext, tx: FencedTx) -> Prepared | str | None:
    """Prepare the turn in ``tx``, the transaction that saves it (docs/decisions/0013), or
    return None: then the turn prepares in a transaction of its own when it is executed.

    That is the case when the draft is a large artefact (its file is written outside any
    transaction) and when preparing fails: nothing of it is kept here, and the failure is met
    again, and reported, where the turn is executed.
    """
    try:
        drafted = _drafted(ctx)
    except Exception:  # an expression that does not evaluate: reported by the turn itself
        return None
    if drafted is not None and not ctx.store.artifacts.inline(len(drafted.data)):
        return None
    digest = ctx.store.artifacts.write_file(drafted.data) if drafted is not None else ""
    prepared = tx.attempt(lambda: _prepare_in(ctx, tx, drafted, digest))
    # over a quota: nothing was counted; the turn meets it again and waits
    return None if isinstance(prepared, quotas.Over) else prepared


def _drafted(ctx: StepContext) -> Draft | None:
    """The direct form's draft, named after the state as a proposal state would name it; None
    for an action of a proposal drafted earlier."""
    config = ctx.state.settings(ActionSettings)
    if config["proposal"]:
        return None
    step, name = proposals.direct_step(config), ctx.state.name
    return proposals.draft(ctx.workflow, ctx.run.id, name, name, step, ctx.scope)


def _prepare_in(
    ctx: StepContext, tx: FencedTx, drafted: Draft | None, digest: str
) -> Prepared | str | quotas.Over:
    """In ``tx``: record the draft (direct form), admit, mark dispatched.

    Doing these together costs one commit instead of three and moves nothing earlier: the
    admission still re-checks everything at the last moment before ``dispatched`` is saved,
    and ``dispatched`` is still saved before the skill is called. Returns what the turn does
    next, or why the action was not admitted.
    """
    found: Action | None
    stored = True
    if drafted is not None:
        # A new proposal's action is stored by its admission's move (one INSERT in its
        # final status instead of an INSERT and an UPDATE)
        proposal, found, stored = store_draft_in(ctx, drafted, digest, tx, hold_new_action=True)
    else:
        reference = str(ctx.state.settings(ActionSettings)["proposal"])
        proposal = _stored_proposal(ctx, tx, reference)
        found = ctx.store.actions.by_key(tx.conn, proposal.action_key)
    if found is None:
        raise DefinitionError(f"action {proposal.action_key} was never proposed")
    action, sent, admitted = found, None, False
    target = target_for(ctx.workflow, proposal)
    held = _held_back(ctx, target, proposal, action)
    if held is not None:
        return held
    # a skill with a rate limit takes its place, and one with a concurrency cap its slot,
    # before it is marked dispatched (:func:`_send`)
    limited = _limited(ctx, target)
    if action.status in admission.ADMISSIBLE or (
        action.status == ActionStatus.ADMITTED and not limited
    ):
        # Whether a dispatch marked here may be sent is read in this transaction, with the
        # active version the admission holds the grants to: by the statement that reads that
        # version, or the one the transaction read it with (invariant 18, no statement more).
        tx.look_up(ctx.workflow.name)
    if action.status in admission.ADMISSIBLE:
        # Read in this transaction; its events join the transaction's held-back batch.
        # Admitted, it is marked dispatched by the same UPDATE.
        def admit() -> Action | str:
            return admission.admit(
                tx.row_conn, ctx.store, ctx.workflow, proposal, action, state=ctx.state.name,
                now=tx.now, actor=tx.actor, events=tx.append_event, fresh=True,
                stored=drafted.data if drafted is not None else None,
                encoded_from=drafted.document if drafted is not None else None,
                then=None if limited else _dispatching(action, tx.now), unsaved=not stored,
                active_digests=tx.active_digests, rows=tx.insert_with_flush,
            )  # fmt: skip

        verdict = within_quotas(
            ctx, tx.row_conn, tx.now, proposal, action, admit, rows=tx.insert_with_flush
        )
        if isinstance(verdict, str):
            return f"action {action.id} was not admitted: {verdict}"
        if isinstance(verdict, quotas.Over):
            return verdict
        # Sent only if this UPDATE marked it (not found so when re-read after a conflict).
        if _marked_here(verdict, found, tx):
            sent = verdict
        action, admitted = verdict, True
    if action.status == ActionStatus.ADMITTED and not limited:
        sent = _mark_dispatched(ctx.store, tx, action)
        action = sent or ctx.store.actions.get(tx.conn, action.id)
    return Prepared(target, proposal, action, sent, admitted, held=bool(tx.in_recovery))


def _held_back(ctx: StepContext, target: Target, proposal: Proposal, action: Action) -> str | None:
    """Why an action about to be admitted or sent is held back, or None: this worker lacks
    what its skill needs (the run then waits in ``needs_attention`` with the reason; the
    action keeps its status and approval, and is sent once a worker has it)."""
    if action.status not in admission.ADMISSIBLE and action.status != ActionStatus.ADMITTED:
        return None
    problem = unavailable(target, ctx.context)
    if problem is None:
        return None
    return (
        f"the action of proposal {proposal.name} was not sent: {problem}; once the workers' "
        f"runtime context has it, continue with `openseal runs intervene {ctx.run.id} "
        f"--reason ...`"
    )


def _stored_proposal(ctx: StepContext, tx: FencedTx, reference: str) -> Proposal:
    _, digest = proposals.current_hash(ctx.workflow, ctx.run.context["states"], reference)
    found = ctx.store.proposals.by_hash(tx.conn, ctx.run.id, digest)
    if found is None:
        raise DefinitionError(f"proposal {digest} is not stored for run {ctx.run.id}")
    return found


def _admit(ctx: StepContext, proposal: Proposal, action: Action) -> Action | str | quotas.Over:
    with ctx.store.leases.fenced(ctx.claim) as tx:
        # read again under the run's lock: admitted here only if it is admissible now
        current = ctx.store.actions.get(tx.conn, action.id)

        def admit() -> Action | str:
            return admission.admit(
                tx.conn, ctx.store, ctx.workflow, proposal, current, state=ctx.state.name,
                now=tx.now, actor=tx.actor, fresh=True,
            )  # fmt: skip

        verdict = within_quotas(ctx, tx.conn, tx.now, proposal, current, admit)
    if isinstance(verdict, Action):
        ctx.hook("action.admitted", ctx.claim)
    return verdict


def within_quotas(
    ctx: StepContext,
    conn: Connection,
    now: datetime,
    proposal: Proposal,
    action: Action,
    admit: Callable[[], Action | str],
    *,
    rows: RowSink | None = None,
) -> Action | str | quotas.Over:
    """``admit()`` ``action`` (read in this transaction) with its spend counted
    against its run's scope's quotas of money, in the same transaction: over one, it is not
    admitted and nothing is counted (the quota is returned: the run waits for it); refused or
    not admitted for another reason, what was counted is given back; admitted, what each quota
    counted is kept as a reservation of the action, settled with its others
    (:mod:`openseal.runtime.actions.spend`)."""
    spend = proposal.spend
    if (
        spend is None
        or action.status not in admission.ADMISSIBLE
        or not quotas.of_scope(ctx.store, ctx.run.scope)
    ):
        return admit()
    amount, currency = float(spend["amount"]), _currency(ctx, spend)
    holds = quotas.take_spend(ctx.store, conn, ctx.run.scope, amount, currency, now)
    if isinstance(holds, quotas.Over):
        return holds
    verdict = admit()
    admitted = isinstance(verdict, Action) and verdict.status in (
        ActionStatus.ADMITTED,
        ActionStatus.DISPATCHED,
    )
    if not admitted:
        quotas.give_back(ctx.store, conn, holds, quotas.micros(amount))
        return verdict
    assert isinstance(verdict, Action)
    for hold in holds:
        ctx.store.actions.reserve(conn, verdict, hold, amount, currency, now, rows)
    return verdict


def _currency(ctx: StepContext, spend: dict[str, object]) -> str:
    """The spend's currency: its own, else its budgets' (as admission reserves it)."""
    budgets = admission.spend_budgets(ctx.workflow, ctx.run.id)
    return str(spend.get("currency") or next((b.currency for b in budgets if b.currency), ""))


def _dispatching(action: Action, now: datetime) -> NextMove:
    """The move to ``dispatched`` of ``action``'s next attempt."""
    attempt = action.attempts + 1
    return NextMove(
        ActionStatus.DISPATCHED, {"attempts": attempt, "dispatched_at": now}, {"attempt": attempt}
    )


def _marked_here(action: Action, read: Action, tx: FencedTx) -> bool:
    """``action`` is ``read`` admitted and marked dispatched by this transaction's one UPDATE."""
    return (
        action.status == ActionStatus.DISPATCHED
        and action.revision == read.revision + 2
        and action.dispatched_at == tx.now
    )


def _mark_dispatched(store: Store, tx: FencedTx, action: Action) -> Action | None:
    """Persist ``dispatched`` (in a fenced transaction: a cancel since admission stops it)."""
    move = _dispatching(action, tx.now)
    return store.actions.move(
        tx.row_conn, action, move.to, now=tx.now, actor=tx.actor,
        expect=(ActionStatus.ADMITTED, ActionStatus.UNKNOWN), event=move.event,
        events=tx.append_event, **move.values,
    )  # fmt: skip


def _limited(ctx: StepContext, target: Target) -> bool:
    """Whether the call takes something of a shared limit before it is marked dispatched: a
    place in its skill's rate limit, a slot of its skill's concurrency cap."""
    if rate_limits.skill_bucket(target.skill, target.spec) is not None:
        return True
    return ctx.admission is not None and ctx.admission.caps_skill(target.skill, target.spec)


def _send(ctx: StepContext, target: Target, action: Action) -> Action:
    """Take the call's place in the skill's shared limit (a place further off than a turn's
    wait puts the run to sleep, the action still admitted), persist ``dispatched`` (fenced)
    with a slot of the skill's concurrency cap taken in the same transaction (a full cap moves
    the run to ``waiting_for_capacity`` instead, the action still admitted, and gives the
    place back), then call the skill once, then record the outcome."""
    bucket = rate_limits.skill_bucket(target.skill, target.spec)
    try:
        rate_limits.before_skill_call(ctx.store, bucket, ctx.lost)
    except rate_limits.SkillOverRateLimit as over:
        raise RetryLater(str(over), delay=over.wait, code="over_rate_limit") from None
    if ctx.lost.is_set():
        raise LeaseLost(ctx.claim.run_id)
    admission = ctx.admission
    # the statement that checks the claim reads whether the store is in recovery mode
    with ctx.store.leases.fenced(ctx.claim, recovery=True) as tx:
        if admission is not None and not admission.take_call(
            tx, target.skill, target.spec.concurrency, action.id
        ):
            ctx.wait_in(tx)
            sent = None
        else:
            sent = _mark_dispatched(ctx.store, tx, action)
            if sent is None:
                return ctx.store.actions.get(tx.conn, action.id)
        held = bool(tx.in_recovery)
    if sent is None:
        rate_limits.give_back_place(ctx.store, bucket)  # nothing went: the next caller may
        raise TurnStopped(f"action {action.id}: skill {target.skill} is at its concurrency cap")
    return _call(ctx, target, sent, held)


def _call(ctx: StepContext, target: Target, sent: Action, held: bool) -> Action:
    """Call the skill once for an action saved as ``dispatched``, then record the outcome."""
    result = _dispatch(ctx, target, sent, held)
    return record(ctx.store, sent, result, target, f"worker:{ctx.claim.worker_id}")


def _dispatch(ctx: StepContext, target: Target, sent: Action, held: bool) -> SkillResult:
    """Call the skill once for an action saved as ``dispatched``, unless ``held``: the
    transaction that marked it found the store in recovery mode."""
    ctx.hook("action.dispatched", ctx.claim)
    if ctx.lost.is_set():
        # Not sent: the next claim finds it dispatched, looks it up, and only then re-sends.
        raise LeaseLost(ctx.claim.run_id)
    actor = f"worker:{ctx.claim.worker_id}"

    def late(reply: SkillResult) -> None:  # evidence, whenever it comes (invariant 14)
        record(ctx.store, sent, reply, target, actor)

    if held:
        # Recovery began while this claim worked: not sent. The attempt is marked over, so
        # once recovery has looked it up (not found) it is sent again at once, with its key.
        _not_sent(ctx, sent, actor)
        raise HeldForRecovery(ctx.claim.run_id)
    result = dispatch(target, ctx.context, late)
    ctx.hook("action.before_record", ctx.claim)
    return result


def _not_sent(ctx: StepContext, sent: Action, actor: str) -> None:
    """Note on a ``dispatched`` action that its attempt ended before it was sent (the store is
    in recovery mode): ``action.not_sent``."""
    entry = {"ended": sent.attempts, "reply": "not_sent", "note": "recovery mode: not sent"}
    with run_locked(ctx.store, sent.run_id) as conn:
        ctx.store.actions.note(
            conn, sent, entry, now=ctx.store.now(), actor=actor, event="action.not_sent",
            payload=entry,
        )  # fmt: skip


def _leave_with(
    ctx: StepContext, target: Target, sent: Action, result: SkillResult
) -> Outcome | None:
    """Leave the state with the dispatch's outcome recorded in the same commit, when it is
    settled: confirmed with a reply that fits (``done``), or failed (``failed``).

    Anything else (unknown, a reply that does not fit) is recorded at once and goes through
    reconciliation as before. If the advance's commit is refused (the claim was lost), the
    outcome is recorded on its own: it describes the outside world either way.
    """
    actor = f"worker:{ctx.claim.worker_id}"
    fit: Fit | None = None
    if confirmed(result):
        fit = output_of(target.spec, result.output)
        output, problem = fit
        if problem is not None:
            return None
        leaving: Advance = Advance("done", output)
    elif result.outcome == "failed":
        leaving = Advance("failed", {"action_id": sent.id, "error": result.error})
    else:
        return None

    expected = ActionStatus.SUCCEEDED if leaving.event == "done" else ActionStatus.FAILED

    def within(tx: FencedTx) -> bool:
        recorded = record_in(
            ctx.store, tx.row_conn, sent, result, target, actor, tx.now, tx.append_event, fit=fit
        )
        # Another reply may have settled the action otherwise meanwhile (a confirmation of an
        # earlier attempt): then the state is executed again and leaves by what is recorded.
        return recorded.status == expected

    def alone() -> object:
        return record(ctx.store, sent, result, target, actor)

    return Advance(leaving.event, leaving.output, Settle(within, alone))


def leave(action: Action) -> Outcome:
    """How the state leaves with ``action`` settled (or why it cannot)."""
    if action.status == ActionStatus.SUCCEEDED:
        return Advance("done", action.result)
    if action.status == ActionStatus.FAILED:
        return Advance("failed", {"action_id": action.id, "error": action.error})
    if action.status == ActionStatus.NEEDS_ATTENTION:
        return Attention(
            f"action {action.id} needs an operator: {action.error} "
            f"(see `openseal actions show {action.id}`, then `openseal actions resolve`)"
        )
    return Attention(f"action {action.id} is {action.status}")
