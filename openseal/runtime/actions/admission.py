"""Admission: the one fenced transaction that lets an action be dispatched (invariant 7).

It re-checks, together and at the last moment: that the proposal's stored content is still the
content its hash names (the arguments about to be sent hash to the approved hash, and its
artefact is readable and intact — :mod:`~openseal.runtime.actions.proposal_check`), that
the run still holds its claim (a cancel or
pause bumped the epoch, so the fenced transaction refuses), the binding (the pinned version
still grants the skill to the proposal's actor, the skill's digest is the proposal's, the
grant's constraints hold for the exact arguments — and the *active* version of the workflow,
if another, grants no less: a revocation reaches runs in flight, a widening does not), the
approval (same hash, approved, decided
before it expired) and the spend budgets (the proposal's amount is reserved against the
workflow's and the owner's ``spend`` limits). A refusal marks the action ``denied`` with the
reason; the run then needs attention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from openseal.compiler import EvaluationError
from openseal.contract import ApprovalSettings
from openseal.runtime.actions.proposal_check import problem_in
from openseal.runtime.actions.proposals import proposal_name
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError, evaluate_json
from openseal.runtime.statuses import ActionStatus
from openseal.runtime.store import (
    Action,
    Approval,
    Connection,
    EventSink,
    NextMove,
    Proposal,
    ProposalContent,
    RowSink,
    Store,
)

#: statuses from which admission may be (re)tried
ADMISSIBLE = (ActionStatus.PROPOSED, ActionStatus.WAITING_FOR_APPROVAL, ActionStatus.DENIED)


@dataclass(frozen=True)
class Budget:
    scope: str
    limit: float
    currency: str | None
    #: seconds of a rolling window over which spend counts; ``None``: for ever
    period: float | None = None


def admit(
    conn: Connection,
    store: Store,
    workflow: CompiledWorkflow,
    proposal: Proposal,
    action: Action,
    *,
    state: str,
    now: datetime,
    actor: str,
    events: EventSink | None = None,
    fresh: bool = False,
    stored: bytes | None = None,
    encoded_from: dict[str, Any] | None = None,
    then: NextMove | None = None,
    unsaved: bool = False,
    active_digests: Mapping[str, str | None] | None = None,
    rows: RowSink | None = None,
) -> Action | str:
    """Admit ``action`` (inside the caller's fenced transaction) or return why not.

    ``fresh``: ``action`` was read in this same transaction, so it is not read again (the
    move to ``admitted`` is conditional on its revision either way). ``stored``: the
    proposal's artefact bytes, stored or checked by digest in this same transaction (see
    :func:`~openseal.runtime.actions.proposal_check.verify_in`); ``encoded_from``: the
    document this transaction drafted them from (see
    :func:`~openseal.runtime.actions.proposal_check.row_problem`). ``events`` receives the
    run events, as in ``store.actions.move``. ``then``: a move made by the same UPDATE as
    the one to ``admitted`` when admission passes (the ``dispatched`` mark of a dispatch in this
    transaction), so the action returned is in ``then.to``. ``unsaved``: ``action`` was made in
    this transaction and not stored yet (``store.actions.new``, implies ``fresh``); the move
    that decides it stores it as it leaves it (``denied``, or ``admitted`` and ``then``).
    ``active_digests``: deployments' active digests this transaction already read (with its
    fence, :attr:`FencedTx.active_digests`); the others are read here. ``rows``: where the
    rows this admission inserts go (as in ``store.actions.move``; nothing in the admission reads
    them back).
    """
    current = action if fresh or unsaved else store.actions.get(conn, action.id)
    if current.status not in ADMISSIBLE:
        return current
    active = active_grants(conn, store, workflow, proposal, active_digests)
    approval, reason = _approval(conn, store, workflow, proposal, active)
    reason = binding_refusal(workflow, proposal) or _active_binding(active, proposal) or reason
    # What will be sent is this proposal's document: it must still be the approved content.
    problem = problem_in(conn, store.artifacts, proposal, stored, encoded_from)
    if problem is not None:
        reason = f"proposal {proposal.name} ({proposal.hash}) is not verified: {problem}"
    budgets = spend_budgets(workflow, proposal.run_id)
    if reason is None:
        reason = _spend(conn, store, budgets, proposal, now)
    if reason is not None:
        store.actions.move(
            conn, current, ActionStatus.DENIED, now=now, actor=actor, expect=ADMISSIBLE,
            note=reason, error=reason, state=state, events=events, insert=unsaved, rows=rows,
        )  # fmt: skip
        return reason
    admitted = store.actions.move(
        conn, current, ActionStatus.ADMITTED, now=now, actor=actor, expect=ADMISSIBLE,
        approval_id=approval.id if approval else None, admitted_at=now, error=None, state=state,
        event={"approval_id": approval.id if approval else None}, events=events, then=then,
        insert=unsaved, rows=rows,
    )  # fmt: skip
    if admitted is None:
        return store.actions.get(conn, action.id)
    spend = proposal.spend
    if spend is not None:
        for budget in budgets:
            currency = str(spend.get("currency") or budget.currency or "")
            store.actions.reserve(
                conn, admitted, budget.scope, float(spend["amount"]), currency, now, rows
            )
    return admitted


# -- binding ---------------------------------------------------------------------------


def binding_refusal(workflow: CompiledWorkflow, proposal: ProposalContent) -> str | None:
    """Why the pinned version ``workflow`` does not grant ``proposal`` (skill, digest, actor,
    constraints on its arguments), or None when it does."""
    entry = (workflow.document.get("skills") or {}).get(proposal.skill)
    if entry is None:
        return f"skill {proposal.skill} is not granted in the pinned workflow version"
    if entry.get("digest") != proposal.skill_digest:
        return (
            f"skill {proposal.skill} is pinned at {entry.get('digest')}, "
            f"but the proposal was drafted for {proposal.skill_digest}"
        )
    grants = [g for g in entry.get("grants") or () if g.get("actor") == proposal.actor]
    if not grants:
        return f"no binding grants skill {proposal.skill} to {proposal.actor}"
    args = dict(proposal.document.get("args") or {})
    problems = [p for g in grants if (p := _constraints(g, args)) is not None]
    if len(problems) == len(grants):
        return problems[0]
    return None


@dataclass(frozen=True)
class ActiveGrants:
    """What the *active* version of the run's workflow grants the proposal's actor.

    A run keeps its pinned version (invariant 12), but a revocation must reach it: admission
    holds the proposal to the pinned grants *and* to these, so only the narrower of the two
    counts. A widening in the active version changes nothing for a run pinned before it.
    """

    digest: str
    #: the active version's grants of the proposal's skill to the proposal's actor
    grants: list[dict[str, Any]]
    #: the skill's effect, as the pinned version declares it
    effect: str | None

    @property
    def require_approval(self) -> bool:
        return any((g.get("approval") or {}).get("required") for g in self.grants)


#: effect/risk levels, lowest first (DESIGN §3)
RISK = ("read", "write", "external", "production", "destructive")


def active_grants(
    conn: Connection,
    store: Store,
    workflow: CompiledWorkflow,
    proposal: Proposal,
    read: Mapping[str, str | None] | None = None,
) -> ActiveGrants | None:
    """The active version's grants, or None when the run's pinned version is the active one
    (or the workflow has no deployment): then the pinned check is the whole check. ``read``:
    active digests this transaction already read, by deployment."""
    active = store.definitions.active_version_in(conn, workflow.name, read)
    if active is None or active.digest == workflow.digest:
        return None
    skills = active.document.get("skills")
    entry = skills.get(proposal.skill) if isinstance(skills, dict) else None
    grants = (entry.get("grants") or []) if isinstance(entry, dict) else []
    mine = [g for g in grants if isinstance(g, dict) and g.get("actor") == proposal.actor]
    pinned = (workflow.document.get("skills") or {}).get(proposal.skill) or {}
    return ActiveGrants(active.digest, mine, pinned.get("effect"))


def _active_binding(active: ActiveGrants | None, proposal: Proposal) -> str | None:
    if active is None:
        return None
    where = f"the active version {active.digest} of the workflow"
    if not active.grants:
        return f"{where} no longer grants skill {proposal.skill} to {proposal.actor}"
    problems = []
    for grant in active.grants:
        problem = _constraints(grant, proposal.args) or _risk(grant, active.effect)
        if problem is None:
            return None
        problems.append(problem)
    return f"{where} narrowed the grant: {problems[0]}"


def _risk(grant: dict[str, Any], effect: str | None) -> str | None:
    ceiling = grant.get("max_risk")
    if ceiling in RISK and effect in RISK and RISK.index(effect) > RISK.index(ceiling):
        return f"binding {grant.get('granted_by')}: risk ceiling {ceiling} is below {effect}"
    return None


def _constraints(grant: dict[str, Any], args: dict[str, Any]) -> str | None:
    for index, constraint in enumerate(grant.get("constraints") or ()):
        try:
            holds = evaluate_json(constraint, {"args": args})
        except (EvaluationError, DefinitionError) as exc:
            return f"binding {grant.get('granted_by')}: constraint {index + 1} failed: {exc}"
        if holds is not True:
            return f"binding {grant.get('granted_by')}: constraint {index + 1} does not hold"
    return None


# -- approval --------------------------------------------------------------------------


def approval_required(workflow: CompiledWorkflow, proposal: ProposalContent) -> bool:
    """An approval state binds this proposal, or the skill's or a grant's policy asks for one."""
    for state in workflow.states.values():
        if state.kind != "approval":
            continue
        if proposal_name(state.settings(ApprovalSettings)["proposal"]) == proposal.name:
            return True
    try:
        skill = workflow.dependency(f"skill.{proposal.skill}")
    except DefinitionError:
        return True  # cannot tell: be strict
    if ((skill.get("spec") or {}).get("approval") or {}).get("required"):
        return True
    entry = (workflow.document.get("skills") or {}).get(proposal.skill) or {}
    return any(
        (g.get("approval") or {}).get("required")
        for g in entry.get("grants") or ()
        if g.get("actor") == proposal.actor
    )


def _approval(
    conn: Connection,
    store: Store,
    workflow: CompiledWorkflow,
    proposal: Proposal,
    active: ActiveGrants | None,
) -> tuple[Approval | None, str | None]:
    stricter = active is not None and active.require_approval
    if not (stricter or approval_required(workflow, proposal)):
        return None, None
    found = store.approvals.approved(conn, proposal.run_id, proposal.hash)
    valid = [a for a in found if decided_in_time(a)]
    if valid:
        return valid[0], None
    if found:
        late = found[0]
        return None, (
            f"the approval of proposal {proposal.hash} was decided at {late.decided_at}, "
            f"after it expired at {late.expires_at}"
        )
    return None, f"proposal {proposal.name} ({proposal.hash}) has no approval"


def decided_in_time(approval: Approval) -> bool:
    """The approval was decided before it expired.

    Expiry bounds the *decision*: an approval given in time stays valid however long the
    worker takes to reach admission (a queue, a restart, a paused run resumed later).
    Decisions after ``expires_at`` are refused when they are made, so this only guards
    against rows that say otherwise.
    """
    if approval.expires_at is None:
        return True
    return approval.decided_at is not None and approval.decided_at < approval.expires_at


# -- spend -----------------------------------------------------------------------------


def spend_budgets(workflow: CompiledWorkflow, run_id: str) -> list[Budget]:
    """The spend limits an action of this run counts against: the workflow's (per run) and
    its owner's (a team or agent, across all its runs)."""
    budgets = workflow.document.get("budgets") or {}
    owner = str((workflow.document.get("spec") or {}).get("owner") or "owner")
    found = []
    for key, scope in (("workflow", f"run:{run_id}"), ("owner", owner)):
        entry = budgets.get(key) or {}
        if entry.get("spend") is not None:
            # A workflow's budget is per run; only the owner's counts over a period.
            period = entry.get("period") if key == "owner" else None
            limit, currency = float(entry["spend"]), entry.get("currency")
            found.append(Budget(scope, limit, currency, float(period) if period else None))
    return found


def _spend(
    conn: Connection, store: Store, budgets: list[Budget], proposal: Proposal, now: datetime
) -> str | None:
    spend = proposal.spend
    if spend is None:
        return None
    amount = float(spend["amount"])
    currency = spend.get("currency")
    for budget in budgets:
        if budget.currency and currency and currency != budget.currency:
            return f"spend is in {currency} but the {budget.scope} budget is in {budget.currency}"
        # Serialise reservations on one budget (a PostgreSQL advisory lock; SQLite's write
        # lock already does) so two runs cannot both fit into the last of a team's budget.
        store.actions.lock_budget(conn, budget.scope)
        since = now - timedelta(seconds=budget.period) if budget.period else None
        used = store.actions.reserved_total(conn, budget.scope, budget.currency or currency, since)
        if used + amount > budget.limit + 1e-9:
            unit = f" {budget.currency or currency or ''}".rstrip()
            return (
                f"spend budget exceeded: {budget.scope} would reach {used + amount:.2f} "
                f"of {budget.limit:.2f}{unit}"
            )
    return None
