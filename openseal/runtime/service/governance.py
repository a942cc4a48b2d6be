"""Governance as the API, the CLI and authoring reach it: each mutation takes a request
object and a :class:`~openseal.runtime.caller.Caller`, whose actor is recorded as the author,
reviewer or decider; reads take plain arguments. A caller sees and acts on change proposals
in its scopes only (another scope's is not found); deployments and definition versions are
the catalogue every caller shares."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from openseal.runtime.access import check_scope
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.governance import flow as gov
from openseal.runtime.governance import moves
from openseal.runtime.governance.flow import (
    ChangeProposal,
    Conflict,
    Decision,
    DeploymentInfo,
    DeployResult,
    GovernanceError,
    NotAllowed,
    StaleProposal,
    Verdict,
    deployment_history,
    list_deployments,
    proposal_events,
    proposal_reviews,
    store_key,
    wait_for_activation,
)
from openseal.runtime.governance.in_use import (
    CapabilityInUse,
    DeploymentVersions,
    VersionRuns,
    deployment_versions,
    removed_in_use,
)
from openseal.runtime.governance.migration import MigrationReport, RunMove, Selection
from openseal.runtime.requests import (
    Deployment,
    ProposalCommand,
    ProposalDecision,
    ProposalReview,
    Rollback,
    RunMigration,
)
from openseal.runtime.store import Store

__all__ = [
    "CapabilityInUse",
    "ChangeProposal",
    "Conflict",
    "Decision",
    "DeployResult",
    "Deployment",
    "DeploymentInfo",
    "DeploymentVersions",
    "GovernanceError",
    "MigrationReport",
    "NotAllowed",
    "ProposalCommand",
    "ProposalDecision",
    "ProposalReview",
    "Rollback",
    "RunMigration",
    "RunMove",
    "StaleProposal",
    "Verdict",
    "VersionRuns",
    "activate",
    "decide",
    "deploy",
    "deployment_history",
    "deployment_versions",
    "get_proposal",
    "list_deployments",
    "list_proposals",
    "migrate_runs",
    "proposal_events",
    "proposal_in_use",
    "proposal_reviews",
    "refresh",
    "review",
    "rollback",
    "store_key",
    "wait_for_activation",
    "with_in_use",
]


def list_proposals(
    store: Store,
    *,
    statuses: Iterable[str] = (),
    deployment: str | None = None,
    limit: int = 100,
    after: str | None = None,
    since: str | None = None,
    caller: Caller = CLI,
) -> tuple[ChangeProposal, ...]:
    """Newest first, only those in the caller's scopes; the next page after ``after``, and
    only those filed ``since`` (an age or an ISO 8601 time)."""
    return gov.list_proposals(
        store, statuses=statuses, deployment=deployment, limit=limit, after=after, since=since,
        scopes=caller.grant.visible(),
    )  # fmt: skip


def get_proposal(store: Store, proposal_id: str, caller: Caller = CLI) -> ChangeProposal:
    """A proposal by id or unique prefix; another scope's is not found."""
    proposal = gov.get_proposal(store, proposal_id)
    check_scope(caller.grant, proposal.scope, f"change proposal {proposal_id}")
    return proposal


def proposal_in_use(
    store: Store, proposal_id: str, caller: Caller = CLI
) -> tuple[CapabilityInUse, ...]:
    """What the proposal removes that live runs still pin, counted now (another scope's
    proposal is not found)."""
    return removed_in_use(store, get_proposal(store, proposal_id, caller))


def with_in_use(store: Store, result: DeployResult) -> DeployResult:
    """``result`` with what its proposal removes that live runs still pin."""
    if result.proposal is None:
        return result
    return replace(result, in_use=removed_in_use(store, result.proposal))


def deploy(store: Store, request: Deployment, caller: Caller) -> DeployResult:
    """Store every version and file a change proposal for what changed; nothing is activated.
    The result says what the change removes that live runs still pin."""
    result = gov.deploy(
        store, request.source, caller.actor, message=request.message, scope=_home(caller)
    )
    return with_in_use(store, result)


def rollback(store: Store, request: Rollback, caller: Caller) -> DeployResult:
    """File a rollback proposal; it is reviewed, decided and activated like any change."""
    result = gov.rollback(
        store, request.name, caller.actor, to=request.to, message=request.message,
        scope=_home(caller),
    )  # fmt: skip
    return with_in_use(store, result)


def _home(caller: Caller) -> str:
    return caller.grant.home() or "default"


def review(store: Store, request: ProposalReview, caller: Caller) -> ChangeProposal:
    get_proposal(store, request.proposal_id, caller)
    return gov.review(
        store, request.proposal_id, caller.actor, request.verdict, comment=request.comment,
        expected_revision=request.expected_revision, roles=caller.grant.roles,
    )  # fmt: skip


def decide(store: Store, request: ProposalDecision, caller: Caller) -> ChangeProposal:
    """Approve or reject; saving a decision never activates the proposal."""
    get_proposal(store, request.proposal_id, caller)
    return gov.decide(
        store, request.proposal_id, caller.actor, request.decision, comment=request.comment,
        expected_revision=request.expected_revision, roles=caller.grant.roles,
    )  # fmt: skip


def activate(store: Store, request: ProposalCommand, caller: Caller) -> ChangeProposal:
    """Switch every target deployment to the proposal's version, in one transaction."""
    get_proposal(store, request.proposal_id, caller)
    return gov.activate(
        store, request.proposal_id, caller.actor, expected_revision=request.expected_revision,
        roles=caller.grant.roles,
    )  # fmt: skip


def refresh(store: Store, request: ProposalCommand, caller: Caller) -> ChangeProposal:
    """Re-diff an open proposal against what is active now."""
    get_proposal(store, request.proposal_id, caller)
    return gov.refresh(
        store, request.proposal_id, caller.actor, expected_revision=request.expected_revision
    )


def migrate_runs(store: Store, request: RunMigration, caller: Caller) -> MigrationReport:
    """Move the waiting runs an activated proposal migrates (each in its own transaction), or
    with ``dry_run`` show which would move where; only a decider under its policy moves them."""
    get_proposal(store, request.proposal_id, caller)
    selection = Selection(
        request.workflow, request.version, request.state, scopes=caller.grant.visible()
    )
    return moves.migrate(
        store, request.proposal_id, caller.actor, dry_run=request.dry_run,
        selection=selection, roles=caller.grant.roles,
    )  # fmt: skip
