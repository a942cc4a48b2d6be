"""Governed definition changes: deploy → change proposal → review → decision → activation.

A **deployment** is a name pointing at one active definition version. Each compiled workflow,
runbook, trigger and governance definition is a deployment named after it; agents, teams, skills,
bindings and models are stored as versions its documents depend on by digest, so their changes
show in the diff of every deployment that uses them.

:func:`deploy` stores a bundle's versions (immutable, deduplicated by digest) and files a change
proposal holding the semantic diff against the active versions, whether it widens risk, its
**base** (the active digests it was diffed against) and the governance policy that rules it.
The proposal is then reviewed (:func:`review`), decided (:func:`decide`) and, as a separate
step, activated (:func:`activate`). Saving a decision never activates anything.

Every mutation records an event with its actor in the same transaction, and takes an optional
``expected_revision`` that refuses a concurrent change (``conflict``). Mutations are serialised
by one governance lock: they are rare, and it makes "is the base still current?" exact.

Example::

    result = deploy(store, compile_paths([Path("definitions")]).documents, "user:alice")
    review(store, result.proposal.id, "user:bob", "approve")
    decide(store, result.proposal.id, "user:carol", "approve")
    activate(store, result.proposal.id, "user:carol")
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from openseal.canonical import canonical_bytes, sha256_digest
from openseal.compiler import Bundle, CompiledDocument, check_migrations
from openseal.errors import UsageError
from openseal.runtime.clock import iso
from openseal.runtime.governance.change_proposals import (
    POLICY_ACTOR,
    Conflict,
    GovernanceError,
    NotAllowed,
    StaleProposal,
    current_verdicts,
    resolve_id,
)
from openseal.runtime.governance.in_use import CapabilityInUse
from openseal.runtime.governance.plan import (
    Lookup,
    Plan,
    active_governance,
    make_plan,
)
from openseal.runtime.governance.policy import GOVERNANCE_KIND, Policy
from openseal.runtime.governance.queries import (
    DeploymentInfo,
    deployment_history,
    get_proposal,
    list_deployments,
    list_proposals,
    proposal_events,
    proposal_reviews,
    wait_for_activation,
)
from openseal.runtime.statuses import OPEN_CHANGE_PROPOSAL_STATUSES as OPEN_STATUSES
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store import (
    DEFAULT_SCOPE,
    Activation,
    ChangeProposal,
    Connection,
    Decision,
    InvalidStatus,
    NotFound,
    ProposalKind,
    Store,
    Target,
    Verdict,
    store_key,
)

#: Kinds that are deployments of their own; every other kind is a dependency version.
DEPLOYABLE_KINDS = frozenset({"workflow", "runbook", "trigger", GOVERNANCE_KIND})
E = TypeVar("E", Verdict, Decision, S)

__all__ = [
    "ChangeProposal",
    "Conflict",
    "Decision",
    "DeployResult",
    "DeploymentInfo",
    "GovernanceError",
    "NotAllowed",
    "StaleProposal",
    "Verdict",
    "activate",
    "decide",
    "deploy",
    "deployment_history",
    "get_proposal",
    "list_deployments",
    "list_proposals",
    "proposal_events",
    "proposal_reviews",
    "refresh",
    "review",
    "rollback",
    "store_key",
    "wait_for_activation",
]


@dataclass(frozen=True)
class DeployResult:
    """What :func:`deploy` (or :func:`rollback`) did.

    ``proposal`` is None when nothing changed (``note`` says why); ``created`` is False when an
    identical open proposal already existed and was returned instead of filing a second one.
    """

    proposal: ChangeProposal | None
    created: bool
    unchanged: tuple[str, ...] = ()
    note: str | None = None
    #: what the change removes that live runs of older versions still pin (filled in by the
    #: service face, which reads it at filing: :mod:`~openseal.runtime.governance.in_use`)
    in_use: tuple[CapabilityInUse, ...] = ()


@dataclass(frozen=True)
class _Entry:
    kind: str
    name: str
    digest: str
    document: dict[str, Any]


# --------------------------------------------------------------------------- filing


def deploy(
    store: Store,
    source: Mapping[str, CompiledDocument] | Bundle,
    actor: str,
    *,
    message: str | None = None,
    scope: str = DEFAULT_SCOPE,
) -> DeployResult:
    """Store every version of ``source`` and file a change proposal (in ``scope``) for what
    changed.

    ``source`` is a compile result's documents or a verified bundle. Nothing is activated.
    Filing the same change again returns the open proposal (``created=False``); when every
    deployment already runs the bundle's versions no proposal is filed.
    """
    _check_actor(actor)
    entries = _entries(source)
    _check_migrations(store, entries)
    for entry in entries:
        store.definitions.put(entry.digest, entry.kind, entry.name, entry.document)
    deployable = sorted((e for e in entries if e.kind in DEPLOYABLE_KINDS), key=lambda e: e.name)
    if not deployable:
        note = (
            "nothing to deploy: the bundle has no workflow, runbook, trigger or governance "
            "definition"
        )
        return DeployResult(None, False, (), note)
    by_digest = {e.digest: (f"{e.kind}.{e.name}", e.document) for e in entries}
    names = [e.name for e in deployable]
    # The diff is planned in a read transaction: on SQLite the write lock is held only to
    # check that nothing the plan depends on moved meanwhile, and to file the proposal.
    for attempt in range(PLAN_ATTEMPTS):
        with store.read() as conn:
            seen = _plan_basis(store, conn, names)
            planned = _plan_deploy(store, conn, deployable, by_digest.get)
        with store.write() as conn:
            store.change_proposals.lock_governance(conn)
            if _plan_basis(store, conn, names) != seen:
                if attempt + 1 < PLAN_ATTEMPTS:
                    continue  # an activation landed meanwhile: plan again
                planned = _plan_deploy(store, conn, deployable, by_digest.get)  # under the lock
            targets, unchanged, plan = planned
            if plan is None:
                note = "nothing changed: every deployment already runs these versions"
                return DeployResult(None, False, unchanged, note)
            return _file(
                store, conn, store.now(), ProposalKind.DEPLOY, targets, actor, message,
                by_digest.get, unchanged, plan, scope,
            )  # fmt: skip
    raise AssertionError("unreachable")


def _plan_deploy(
    store: Store, conn: Connection, deployable: list[_Entry], lookup: Lookup
) -> tuple[list[Target], tuple[str, ...], Plan | None]:
    """The targets that change, the names that do not, and the plan (None: nothing changes)."""
    active = store.definitions.active_in(conn, [e.name for e in deployable])
    _check_kinds(deployable, active)
    targets = [
        Target(e.name, e.kind, e.digest)
        for e in deployable
        if active.get(e.name, (None, None))[0] != e.digest
    ]
    unchanged = tuple(e.name for e in deployable if e.name not in {t.name for t in targets})
    return targets, unchanged, (make_plan(store, conn, targets, lookup) if targets else None)


#: how often a deploy plans outside the write lock before it plans under it
PLAN_ATTEMPTS = 3


def _plan_basis(store: Store, conn: Connection, names: list[str]) -> tuple[object, ...]:
    """What a deploy's plan depends on: the active versions of its names and of governance."""
    governance = store.definitions.active_digests(conn, GOVERNANCE_KIND)
    return (sorted(store.definitions.active_in(conn, names).items()), governance)


def rollback(
    store: Store,
    name: str,
    actor: str,
    *,
    to: str | None = None,
    message: str | None = None,
    scope: str = DEFAULT_SCOPE,
) -> DeployResult:
    """File a ``rollback`` proposal that re-activates an earlier version of deployment ``name``.

    ``to`` is a digest (or unique prefix) that was active before; by default the version active
    before the current one. It goes through the same review, decision and activation as any
    change; undoing a risk-widening change is a narrowing one, so it may auto-approve.
    """
    _check_actor(actor)
    with store.write() as conn:
        store.change_proposals.lock_governance(conn)
        current = store.definitions.active_in(conn, [name]).get(name)
        if current is None:
            raise NotFound(f"deployment {name} not found")
        history = store.definitions.history_in(conn, name)
        target = _rollback_target(name, current[0], history, to)
        kind = store.definitions.kind_of(conn, target)
        targets = [Target(name, kind, target)]
        return _file(
            store, conn, store.now(), ProposalKind.ROLLBACK, targets, actor, message,
            scope=scope,
        )  # fmt: skip


def _file(
    store: Store,
    conn: Connection,
    now: datetime,
    kind: ProposalKind,
    targets: list[Target],
    actor: str,
    message: str | None,
    lookup: Lookup | None = None,
    unchanged: tuple[str, ...] = (),
    plan: Plan | None = None,
    scope: str = DEFAULT_SCOPE,
) -> DeployResult:
    content_key = _content_key(kind, targets)
    existing = store.change_proposals.open_with_key(conn, content_key, scope)
    if existing is not None:
        return DeployResult(existing, False, unchanged)
    plan = plan or make_plan(store, conn, targets, lookup)
    proposal = store.change_proposals.insert(
        conn,
        actor=actor,
        now=now,
        payload={
            "kind": str(kind),
            "targets": [t.to_dict() for t in targets],
            "base": plan.base,
            "risk_widening": plan.risk_widening,
            "policy_source": plan.policy.source,
            "message": message,
        },
        kind=str(kind),
        author=actor,
        message=message,
        content_key=content_key,
        targets=[t.to_dict() for t in targets],
        base=plan.base,
        policy=plan.policy.to_dict(),
        diff=plan.diff,
        risk_widening=plan.risk_widening,
        scope=scope,
    )
    return DeployResult(_auto_approve(store, conn, proposal, now), True, unchanged)


def _entries(source: Mapping[str, CompiledDocument] | Bundle) -> list[_Entry]:
    if isinstance(source, Bundle):
        items = [(e.kind, e.name, e.digest, e.document) for e in source.entries.values()]
    else:
        items = [(d.kind, d.name, d.digest, d.document) for d in source.values()]
    return [_Entry(kind, name, store_key(digest), doc) for kind, name, digest, doc in items]


def migrates_runs(store: Store, conn: Connection, proposal: ChangeProposal) -> bool:
    """Whether a target of ``proposal`` is a workflow version with a ``migrate`` block."""
    for target in proposal.targets:
        if target.kind != "workflow":
            continue
        found = store.definitions.document(conn, target.digest)
        if found is not None and found[1].get("spec", {}).get("migrate"):
            return True
    return False


def _check_migrations(store: Store, entries: list[_Entry]) -> None:
    """Refuse a workflow whose ``migrate`` blocks do not check against the stored earlier
    versions they name (``migration_invalid``, with the compiler's diagnostics)."""
    found = []
    for entry in entries:
        if entry.kind == "workflow" and entry.document.get("spec", {}).get("migrate"):
            with store.read() as conn:
                earlier = store.definitions.versions_named(conn, "workflow", entry.name)
            earlier.pop(entry.digest, None)
            found += check_migrations(entry.document, earlier)
    errors = [d for d in found if d.is_error]
    if errors:
        said = "; ".join(f"{d.span}: {d.code} {d.message}" for d in errors)
        raise GovernanceError(
            f"the migration does not check against the earlier version; nothing deployed: {said}",
            code="migration_invalid",
        )


def _check_kinds(deployable: list[_Entry], active: Mapping[str, tuple[str, str]]) -> None:
    """One deployment name, one kind: a runbook may not silently replace a workflow."""
    seen: dict[str, str] = {}
    for entry in deployable:
        other = seen.setdefault(entry.name, entry.kind)
        if other != entry.kind:
            raise GovernanceError(
                f"the bundle defines both {other}.{entry.name} and {entry.kind}.{entry.name}; "
                "deployment names must be unique across workflows, runbooks, triggers and "
                "governance",
                code="kind_mismatch",
            )
        if entry.name in active and active[entry.name][1] != entry.kind:
            raise GovernanceError(
                f"deployment {entry.name} is a {active[entry.name][1]}; "
                f"{entry.kind}.{entry.name} cannot replace it",
                code="kind_mismatch",
            )


def _content_key(kind: ProposalKind, targets: list[Target]) -> str:
    content = {"kind": str(kind), "targets": sorted((t.to_dict() for t in targets), key=str)}
    return store_key(sha256_digest(canonical_bytes(content)))


# --------------------------------------------------------------------------- lifecycle


def review(
    store: Store,
    proposal_id: str,
    actor: str,
    verdict: Verdict | str,
    *,
    comment: str | None = None,
    expected_revision: int | None = None,
    roles: frozenset[str] = frozenset(),
) -> ChangeProposal:
    """Approve or request changes (``verdict``); moves the proposal to ``in_review``.

    Only reviewers the policy names (a principal, or ``role:R`` for a role R in ``roles``) may
    review (anyone when it names none); the author may not review their own change. A
    reviewer's later review replaces their earlier one.
    """
    verdict = _choice(Verdict, verdict, "verdict")
    with _mutation(store, proposal_id, actor, expected_revision) as (conn, proposal, now):
        _require(proposal, (S.PROPOSED, S.IN_REVIEW), "reviewed")
        if actor == proposal.author:
            raise NotAllowed(
                f"{actor} filed change proposal {proposal.id} and may not review it",
                code="self_review",
            )
        policy = Policy.from_dict(proposal.policy)
        if not policy.may_review(actor, roles):
            raise NotAllowed(f"{actor} is not a reviewer under {_governed_by(policy)}")
        added = store.change_proposals.add_review(conn, proposal, actor, verdict, comment, now)
        updated, _ = store.change_proposals.change(
            conn,
            proposal.id,
            event_type="change_proposal.reviewed",
            actor=actor,
            payload={
                "review_id": added.id,
                "verdict": str(verdict),
                "comment": comment,
                "round": added.round,
            },
            now=now,
            values={"status": S.IN_REVIEW},
        )
    return updated


def decide(
    store: Store,
    proposal_id: str,
    actor: str,
    decision: Decision | str,
    *,
    comment: str | None = None,
    expected_revision: int | None = None,
    roles: frozenset[str] = frozenset(),
) -> ChangeProposal:
    """Approve or reject the proposal. Saving a decision never activates it.

    Only deciders the policy names (a principal, or ``role:R`` for a role R in ``roles``) may
    decide. Approval needs the policy's number of approving reviews in the current round and
    no outstanding request for changes; the author may never
    approve their own risk-widening change. An approved proposal may still be rejected.
    """
    decision = _choice(Decision, decision, "decision")
    allowed: tuple[S, ...] = (S.PROPOSED, S.IN_REVIEW)
    if decision is Decision.REJECT:
        allowed = (*allowed, S.APPROVED)
    with _mutation(store, proposal_id, actor, expected_revision) as (conn, proposal, now):
        _require(proposal, allowed, "decided")
        policy = Policy.from_dict(proposal.policy)
        if not policy.may_decide(actor, roles):
            raise NotAllowed(f"{actor} is not a decider under {_governed_by(policy)}")
        if decision is Decision.APPROVE:
            _check_approvable(store, conn, proposal, policy, actor)
        outcome = "approved" if decision is Decision.APPROVE else "rejected"
        record = {"decision": outcome, "by": actor, "comment": comment, "at": iso(now)}
        updated, _ = store.change_proposals.change(
            conn,
            proposal.id,
            event_type="change_proposal.decided",
            actor=actor,
            payload={"decision": outcome, "comment": comment, "round": proposal.round},
            now=now,
            values={
                "status": S.APPROVED if decision is Decision.APPROVE else S.REJECTED,
                "decision": {**record, "auto": False},
            },
        )
    return updated


def _check_approvable(
    store: Store, conn: Connection, proposal: ChangeProposal, policy: Policy, actor: str
) -> None:
    if proposal.risk_widening and actor == proposal.author:
        raise NotAllowed(
            f"{actor} filed change proposal {proposal.id}, which widens risk; "
            "its author may not approve it",
            code="self_approval",
        )
    verdicts = current_verdicts(store.change_proposals.reviews(conn, proposal.id), proposal.round)
    blocking = sorted(who for who, v in verdicts.items() if v is Verdict.REQUEST_CHANGES)
    if blocking:
        raise NotAllowed(
            f"change proposal {proposal.id} has changes requested by {', '.join(blocking)}",
            code="changes_requested",
        )
    approvals = sum(v is Verdict.APPROVE for v in verdicts.values())
    if approvals < policy.required_reviews:
        raise NotAllowed(
            f"change proposal {proposal.id} needs {policy.required_reviews} approving "
            f"review(s) under {_governed_by(policy)}; it has {approvals}",
            code="reviews_required",
        )


def activate(
    store: Store,
    proposal_id: str,
    actor: str,
    *,
    expected_revision: int | None = None,
    roles: frozenset[str] = frozenset(),
) -> ChangeProposal:
    """Switch every target deployment to the proposal's version, in one transaction.

    The proposal must be ``approved`` and fresh: if any active version or the active governance
    changed since it was diffed, it is refused with ``stale_proposal`` until :func:`refresh`.
    New runs use the new versions; runs already started keep theirs, except the waiting runs
    a workflow version's ``migrate`` block moves, each in its own transaction once the
    activation committed (:mod:`.moves`). Older open proposals for the same deployments become
    ``superseded``.
    """
    with _mutation(store, proposal_id, actor, expected_revision) as (conn, proposal, now):
        if proposal.status is not S.APPROVED:
            hint = " (it needs an approving decision first)"
            raise InvalidStatus(
                f"change proposal {proposal.id} is {proposal.status}; only an approved proposal "
                f"can be activated{hint if proposal.status in OPEN_STATUSES else ''}"
            )
        policy = Policy.from_dict(proposal.policy)
        if not policy.may_decide(actor, roles):
            raise NotAllowed(
                f"{actor} may not activate: not a decider under {_governed_by(policy)}"
            )
        _check_fresh(store, conn, proposal)
        active = store.definitions.active_in(conn, proposal.deployments)
        switched = []
        for target in proposal.targets:
            if active.get(target.name, (None, None))[0] == target.digest:
                continue
            done = store.definitions.activate_in(
                conn, target.name, target.digest, actor,
                change_proposal_id=proposal.id, reason=_reason(proposal),
            )  # fmt: skip
            switched.append(
                {"name": target.name, "digest": target.digest, "previous": done.previous_digest}
            )
        updated, _ = store.change_proposals.change(
            conn,
            proposal.id,
            event_type="change_proposal.activated",
            actor=actor,
            payload={"activations": switched},
            now=now,
            values={"status": S.ACTIVATED, "activated_at": now},
        )
        _supersede_older(store, conn, updated, actor, now)
    # Runs move after the versions switched, each in its own transaction (invariant 17).
    from openseal.runtime.governance.moves import after_activation

    return after_activation(store, updated, actor)


def _reason(proposal: ChangeProposal) -> str:
    label = "rollback" if proposal.kind is ProposalKind.ROLLBACK else "change"
    return f"{label} proposal {proposal.id}" + (f": {proposal.message}" if proposal.message else "")


def _check_fresh(store: Store, conn: Connection, proposal: ChangeProposal) -> None:
    active = store.definitions.active_in(conn, proposal.deployments)
    moved = sorted(
        name
        for name, digest in proposal.base.items()
        if active.get(name, (None, None))[0] != digest
    )
    basis = {g.name: g.digest for g in active_governance(store, conn)}
    reasons = []
    if moved:
        reasons.append(f"the active version of {', '.join(moved)} changed")
    if basis != dict(proposal.policy.get("basis") or {}):
        reasons.append("the active governance changed")
    if reasons:
        raise StaleProposal(
            f"change proposal {proposal.id} is stale: {' and '.join(reasons)} since it was "
            f"diffed; run `openseal proposals refresh {proposal.id}` and review it again"
        )


def _supersede_older(
    store: Store, conn: Connection, activated: ChangeProposal, actor: str, now: datetime
) -> None:
    names = set(activated.deployments)
    for other in store.change_proposals.open_except(conn, activated.id):
        older = (other.created_at, other.id) < (activated.created_at, activated.id)
        if older and names & set(other.deployments):
            store.change_proposals.change(
                conn,
                other.id,
                event_type="change_proposal.superseded",
                actor=actor,
                payload={"by": activated.id},
                now=now,
                values={"status": S.SUPERSEDED, "superseded_by": activated.id},
            )


def refresh(
    store: Store, proposal_id: str, actor: str, *, expected_revision: int | None = None
) -> ChangeProposal:
    """Re-diff an open proposal against the versions and governance active now.

    Like a stale Terraform plan: if the diff or the policy's rules changed, its reviews and
    decision no longer apply — it goes back to ``proposed`` in a new review round (and may
    auto-approve again). If every target already runs its version, it is ``superseded``.
    """
    with _mutation(store, proposal_id, actor, expected_revision) as (conn, proposal, now):
        _require(proposal, tuple(OPEN_STATUSES), "refreshed")
        plan = make_plan(store, conn, list(proposal.targets))
        if all(plan.base[t.name] == t.digest for t in proposal.targets):
            updated, _ = store.change_proposals.change(
                conn,
                proposal.id,
                event_type="change_proposal.superseded",
                actor=actor,
                payload={"reason": "every target version is already active"},
                now=now,
                values={"status": S.SUPERSEDED, "base": plan.base},
            )
            return updated
        diff_changed = _json(plan.diff) != _json(proposal.diff)
        new_policy = plan.policy.to_dict()
        rules_changed = _json(_rules(new_policy)) != _json(_rules(proposal.policy))
        reset = diff_changed or rules_changed
        values: dict[str, Any] = {
            "base": plan.base,
            "diff": plan.diff,
            "risk_widening": plan.risk_widening,
            "policy": new_policy,
        }
        if reset:
            values.update(status=S.PROPOSED, round=proposal.round + 1, decision=None)
        updated, _ = store.change_proposals.change(
            conn,
            proposal.id,
            event_type="change_proposal.refreshed",
            actor=actor,
            payload={
                "base": plan.base,
                "diff_changed": diff_changed,
                "policy_changed": rules_changed,
                "reset": reset,
            },
            now=now,
            values=values,
        )
        if reset:
            updated = _auto_approve(store, conn, updated, now)
    return updated


def _rules(policy: Mapping[str, Any]) -> dict[str, Any]:
    """What decides who may do what; the basis alone changing does not reset reviews."""
    return {"source": policy.get("source"), "rules": policy.get("rules")}


def _auto_approve(
    store: Store, conn: Connection, proposal: ChangeProposal, now: datetime
) -> ChangeProposal:
    """Approve a change that widens nothing when the policy says so (activation stays manual)."""
    policy = Policy.from_dict(proposal.policy)
    if proposal.risk_widening or not policy.auto_approve_narrowing:
        return proposal
    if migrates_runs(store, conn, proposal):
        return proposal  # moving runs is never approved by the policy alone
    decision = {
        "decision": "approved",
        "by": POLICY_ACTOR,
        "comment": "auto_approve_narrowing: the change widens nothing",
        "at": iso(now),
        "auto": True,
    }
    updated, _ = store.change_proposals.change(
        conn,
        proposal.id,
        event_type="change_proposal.auto_approved",
        actor=POLICY_ACTOR,
        payload={"governance": [r.governance for r in policy.rules], "round": proposal.round},
        now=now,
        values={"status": S.APPROVED, "decision": decision},
    )
    return updated


# --------------------------------------------------------------------------- helpers


@contextmanager
def _mutation(
    store: Store, proposal_id: str, actor: str, expected_revision: int | None
) -> Iterator[tuple[Connection, ChangeProposal, datetime]]:
    """One write transaction under the governance lock, with the proposal locked and checked."""
    _check_actor(actor)
    with store.write() as conn:
        store.change_proposals.lock_governance(conn)
        proposal = store.change_proposals.load(
            conn, resolve_id(store, conn, proposal_id), lock=True
        )
        if expected_revision is not None and expected_revision != proposal.revision:
            raise Conflict(
                f"change proposal {proposal.id} is at revision {proposal.revision}, "
                f"not {expected_revision}; reload it and try again"
            )
        yield conn, proposal, store.now()


def _check_actor(actor: str) -> None:
    if not actor.strip():
        raise UsageError("an actor is required (e.g. user:alice)")


def _require(proposal: ChangeProposal, allowed: tuple[S, ...], verb: str) -> None:
    if proposal.status not in allowed:
        raise InvalidStatus(
            f"change proposal {proposal.id} is {proposal.status}; it can be {verb} only when "
            + " or ".join(str(s) for s in allowed)
        )


def _choice(enum: type[E], value: E | str, what: str) -> E:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(member) for member in enum)
        raise UsageError(f"unknown {what} {value!r}; expected one of {choices}") from None


def _governed_by(policy: Policy) -> str:
    if not policy.rules:
        return "the default policy"
    names = ", ".join(f"governance.{r.governance}" for r in policy.rules)
    return f"{names} ({policy.source})"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _rollback_target(
    name: str, current: str, history: tuple[Activation, ...], to: str | None
) -> str:
    if to is None:
        previous = history[-1].previous_digest if history else None
        if previous is None:
            raise GovernanceError(
                f"deployment {name} has no earlier version to roll back to",
                code="no_previous_version",
            )
        return previous
    wanted = store_key(to.strip().lower())
    known = sorted(
        {a.digest for a in history} | {a.previous_digest for a in history if a.previous_digest}
    )
    matches = [d for d in known if d == wanted] or [d for d in known if d.startswith(wanted)]
    if len(wanted) < 6 or len(matches) != 1:
        problem = "is ambiguous" if len(matches) > 1 else "was never active"
        raise GovernanceError(
            f"version {to} {problem} for deployment {name}; "
            f"see `openseal deployments history {name}`",
            code="unknown_version",
        )
    if matches[0] == current:
        raise GovernanceError(
            f"deployment {name} already runs {matches[0][:12]}; nothing to roll back",
            code="nothing_to_roll_back",
        )
    return matches[0]
