"""Deployments and change proposals: list, show with the diff, file, review, decide, activate,
refresh, roll back — the same service functions as ``openseal deploy|proposals|deployments``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from openseal.api import documents
from openseal.api.capabilities import requires
from openseal.api.errors import responses
from openseal.api.models import (
    Migration,
    ProposalChange,
    ProposalDecision,
    ProposalFiling,
    ProposalReplay,
    ProposalReview,
    Rollback,
)
from openseal.api.routes.common import (
    After,
    Id,
    Limit,
    Since,
    State,
    Who,
    Workflow,
    next_after,
    runtime_caller,
    scoped,
)
from openseal.runtime import service
from openseal.runtime.service import governance as gov
from openseal.wire import jsonable

router = APIRouter(tags=["deployments"], route_class=documents.Documented)

Name = Annotated[str, Path(min_length=1, max_length=200, description="A deployment name")]


@router.get(
    "/deployments",
    operation_id="deployments.list",
    dependencies=requires("deployments.list"),
    responses=responses(ok=documents.Deployments),
)
def list_deployments(state: State) -> dict[str, Any]:
    """Every deployment with its active version and who activated it."""
    return {"deployments": jsonable(gov.list_deployments(state.store))}


@router.get(
    "/deployments/{name}",
    operation_id="deployments.show",
    dependencies=requires("deployments.show"),
    responses=responses(404, ok=documents.DeploymentShown),
)
def show_deployment(name: Name, state: State) -> dict[str, Any]:
    """The deployment with the versions its live (not ended) runs are pinned to, and how
    many runs each: an old version is still in use while it has any."""
    shown: dict[str, Any] = jsonable(gov.deployment_versions(state.store, name))
    return shown


@router.get(
    "/deployments/{name}/history",
    operation_id="deployments.history",
    dependencies=requires("deployments.history"),
    responses=responses(404, ok=documents.DeploymentHistory),
)
def deployment_history(name: Name, state: State) -> dict[str, Any]:
    """Every activation of the deployment, oldest first."""
    return {"name": name, "activations": jsonable(gov.deployment_history(state.store, name))}


@router.post(
    "/deployments/{name}/rollback",
    operation_id="deployments.rollback",
    dependencies=requires("deployments.rollback"),
    responses=responses(404, 409, ok=documents.Filing, ok_statuses=(201, 200)),
    status_code=201,
)
def rollback(name: Name, body: Rollback, state: State, who: Who, response: Response) -> Any:
    """File a rollback proposal; it is reviewed, decided and activated like any change."""
    request = gov.Rollback(name, body.to, body.message)
    result = gov.rollback(state.store, request, runtime_caller(state, who))
    return _filed(result, response)


@router.get(
    "/proposals",
    operation_id="proposals.list",
    dependencies=requires("proposals.list"),
    responses=responses(ok=documents.ProposalPage),
)
def list_proposals(
    state: State,
    who: Who,
    status: Annotated[
        list[service.ChangeProposalStatus] | None,
        Query(max_length=len(service.ChangeProposalStatus), description="Only these statuses"),
    ] = None,
    deployment: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    workflow: Workflow = None,
    since: Since = None,
    after: After = None,
    limit: Limit = 100,
) -> dict[str, Any]:
    """Change proposals, newest first, each as ``show`` has it (``status`` may repeat;
    ``workflow`` is another name for ``deployment``); the next page starts after
    ``next_after`` (null on the last page)."""
    found = gov.list_proposals(
        state.store, statuses=[str(s) for s in status or ()], deployment=deployment or workflow,
        since=since, after=after, limit=limit, caller=scoped(who),
    )  # fmt: skip
    return {"proposals": jsonable(found), "next_after": next_after(found, limit)}


@router.post(
    "/proposals",
    operation_id="proposals.file",
    dependencies=requires("proposals.file"),
    responses=responses(409, ok=documents.Filing, ok_statuses=(201, 200)),
    status_code=201,
)
def file_proposal(body: ProposalFiling, state: State, who: Who, response: Response) -> Any:
    """Store the posted compiled documents and file a change proposal for what changed.

    201 when a proposal was filed; 200 when an identical one was already open (returned) or
    nothing changed (``proposal`` is null and ``note`` says why). Nothing is activated.
    """
    request = gov.Deployment(body.documents, body.message)
    result = service.deploy_documents(state.store, request, runtime_caller(state, who))
    return _filed(result, response)


@router.get(
    "/proposals/{proposal_id}",
    operation_id="proposals.show",
    dependencies=requires("proposals.show"),
    responses=responses(404, ok=documents.ProposalShown),
)
def show_proposal(proposal_id: Id, state: State, who: Who) -> dict[str, Any]:
    """The proposal with its targets, base, policy, decision and semantic diff, its reviews and
    its events."""
    proposal = gov.get_proposal(state.store, proposal_id, scoped(who))
    return {
        "proposal": jsonable(proposal),
        "reviews": jsonable(gov.proposal_reviews(state.store, proposal.id)),
        "events": jsonable(gov.proposal_events(state.store, proposal.id)),
        "in_use": jsonable(gov.proposal_in_use(state.store, proposal.id, scoped(who))),
    }


@router.post(
    "/proposals/{proposal_id}/review",
    operation_id="proposals.review",
    dependencies=requires("proposals.review"),
    responses=responses(403, 404, 409, ok=documents.ProposalChanged),
)
def review(proposal_id: Id, body: ProposalReview, state: State, who: Who) -> dict[str, Any]:
    """Approve or request changes, as the calling principal."""
    request = gov.ProposalReview(proposal_id, body.verdict, body.comment, body.expected_revision)
    proposal = gov.review(state.store, request, runtime_caller(state, who))
    return {"proposal": jsonable(proposal)}


@router.post(
    "/proposals/{proposal_id}/decide",
    operation_id="proposals.decide",
    dependencies=requires("proposals.decide"),
    responses=responses(403, 404, 409, ok=documents.ProposalChanged),
)
def decide(proposal_id: Id, body: ProposalDecision, state: State, who: Who) -> dict[str, Any]:
    """Approve or reject. Saving a decision does not activate anything."""
    request = gov.ProposalDecision(proposal_id, body.decision, body.comment, body.expected_revision)
    proposal = gov.decide(state.store, request, runtime_caller(state, who))
    return {"proposal": jsonable(proposal)}


@router.post(
    "/proposals/{proposal_id}/activate",
    operation_id="proposals.activate",
    dependencies=requires("proposals.activate"),
    responses=responses(403, 404, 409, ok=documents.ProposalChanged),
)
def activate(proposal_id: Id, body: ProposalChange, state: State, who: Who) -> dict[str, Any]:
    """Switch every deployment of an approved, fresh proposal in one transaction."""
    request = gov.ProposalCommand(proposal_id, body.expected_revision)
    proposal = gov.activate(state.store, request, runtime_caller(state, who))
    return {"proposal": jsonable(proposal)}


@router.post(
    "/proposals/{proposal_id}/refresh",
    operation_id="proposals.refresh",
    dependencies=requires("proposals.refresh"),
    responses=responses(404, 409, ok=documents.ProposalChanged),
)
def refresh(proposal_id: Id, body: ProposalChange, state: State, who: Who) -> dict[str, Any]:
    """Re-diff against the versions active now (reviews reset when the diff changed)."""
    request = gov.ProposalCommand(proposal_id, body.expected_revision)
    proposal = gov.refresh(state.store, request, runtime_caller(state, who))
    return {"proposal": jsonable(proposal)}


@router.post(
    "/proposals/{proposal_id}/replay",
    operation_id="proposals.replay",
    dependencies=requires("proposals.replay"),
    responses=responses(404, ok=documents.ReplayReport),
)
def replay(proposal_id: Id, body: ProposalReplay, state: State, who: Who) -> dict[str, Any]:
    """Re-drive recorded runs of each workflow the proposal changes through the proposed
    version — no model call, no tool call, no effect — and say per run whether it goes the
    same way. Reads only; deterministic for the same proposal and runs."""
    selection = service.replay.selection(
        runs=body.runs, since=body.since, run_ids=tuple(body.run or ())
    )
    report = service.replay.replay_proposal(state.store, proposal_id, selection, scoped(who))
    return report.to_json()


@router.post(
    "/proposals/{proposal_id}/migrate",
    operation_id="proposals.migrate",
    dependencies=requires("proposals.migrate"),
    responses=responses(403, 404, 409, 422, ok=documents.MigrationDone),
)
def migrate(proposal_id: Id, body: Migration, state: State, who: Who) -> dict[str, Any]:
    """Move the waiting runs an activated proposal's migration covers, each in its own
    transaction with one ``run.migrated`` event (``dryRun``: which would move where, nothing
    changed). A run with an unsettled action stays and is reported ``blocked``."""
    request = gov.RunMigration(proposal_id, body.dry_run, body.workflow, body.version, body.state)
    report = gov.migrate_runs(state.store, request, runtime_caller(state, who))
    return {"migration": jsonable(report), "counts": report.counts}


def _filed(result: gov.DeployResult, response: Response) -> dict[str, Any]:
    if not result.created:
        response.status_code = 200
    answer: dict[str, Any] = jsonable(result)  # proposal, created, unchanged, note
    return answer
