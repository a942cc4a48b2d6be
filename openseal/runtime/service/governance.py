"""Governance as the API, the CLI and authoring reach it: each mutation takes a request
object and a :class:`~openseal.runtime.caller.Caller`, whose actor is recorded as the author,
reviewer or decider; reads take plain arguments."""

from __future__ import annotations

from openseal.runtime import governance as gov
from openseal.runtime.caller import Caller
from openseal.runtime.governance import (
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
    get_proposal,
    list_deployments,
    list_proposals,
    proposal_events,
    proposal_reviews,
    store_key,
    wait_for_activation,
)
from openseal.runtime.requests import (
    Deployment,
    ProposalCommand,
    ProposalDecision,
    ProposalReview,
    Rollback,
)
from openseal.runtime.store import Store

__all__ = [
    "ChangeProposal",
    "Conflict",
    "Decision",
    "DeployResult",
    "Deployment",
    "DeploymentInfo",
    "GovernanceError",
    "NotAllowed",
    "ProposalCommand",
    "ProposalDecision",
    "ProposalReview",
    "Rollback",
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


def deploy(store: Store, request: Deployment, caller: Caller) -> DeployResult:
    """Store every version and file a change proposal for what changed; nothing is activated."""
    return gov.deploy(store, request.source, caller.actor, message=request.message)


def rollback(store: Store, request: Rollback, caller: Caller) -> DeployResult:
    """File a rollback proposal; it is reviewed, decided and activated like any change."""
    return gov.rollback(store, request.name, caller.actor, to=request.to, message=request.message)


def review(store: Store, request: ProposalReview, caller: Caller) -> ChangeProposal:
    return gov.review(
        store, request.proposal_id, caller.actor, request.verdict, comment=request.comment,
        expected_revision=request.expected_revision,
    )  # fmt: skip


def decide(store: Store, request: ProposalDecision, caller: Caller) -> ChangeProposal:
    """Approve or reject; saving a decision never activates the proposal."""
    return gov.decide(
        store, request.proposal_id, caller.actor, request.decision, comment=request.comment,
        expected_revision=request.expected_revision,
    )  # fmt: skip


def activate(store: Store, request: ProposalCommand, caller: Caller) -> ChangeProposal:
    """Switch every target deployment to the proposal's version, in one transaction."""
    return gov.activate(
        store, request.proposal_id, caller.actor, expected_revision=request.expected_revision
    )


def refresh(store: Store, request: ProposalCommand, caller: Caller) -> ChangeProposal:
    """Re-diff an open proposal against what is active now."""
    return gov.refresh(
        store, request.proposal_id, caller.actor, expected_revision=request.expected_revision
    )
