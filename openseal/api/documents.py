"""The documents the API answers: each route's success body, typed for the OpenAPI document.

A route declares its document with ``responses(..., ok=Document)``
(:func:`openseal.api.errors.responses`); the body it sends is still the records' own JSON
(:func:`openseal.wire.jsonable`, the CLI's ``--output json``), so these models only
describe it. A record travels as its dataclass's fields (:mod:`openseal.wire`), so each is
described by its dataclass itself; only what a route assembles by hand has its model here.
Every document's top level is closed (``additionalProperties: false``); what users write
(inputs, outputs, payloads, compiled documents) stays free-form inside.
``tests/api/test_documents.py`` checks real answers against these schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from typing import Any, get_type_hints

from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, create_model

from openseal.runtime.service import (
    ActorView,
    Capability,
    RunView,
    ScopeLimit,
    ScopeQueue,
    ScopeQuota,
    ScopeRetention,
    TriggerView,
    TurnView,
)
from openseal.runtime.service.governance import (
    CapabilityInUse,
    DeploymentInfo,
    DeployResult,
    MigrationReport,
    RunMove,
    VersionRuns,
)
from openseal.runtime.store import (
    Action,
    Activation,
    AgentRequest,
    Approval,
    ChangeProposal,
    Event,
    InboundEvent,
    Objective,
    ProposalEvent,
    Review,
    Run,
    TriggerFiring,
)

Free = dict[str, Any]
Cursor = str | None


class Document(BaseModel):
    model_config = ConfigDict(extra="forbid")


def extended(record: type, name: str, **added: tuple[Any, Any]) -> type[Document]:
    """A closed document of ``record``'s fields (a dataclass, as the wire sends it) and the
    ``added`` ones a route puts beside them, so the document follows the record."""
    hints = get_type_hints(record)
    definitions: dict[str, Any] = {f.name: (hints[f.name], ...) for f in fields(record)}
    definitions.update(added)
    return create_model(name, __base__=Document, **definitions)


# -- records written by hand ---------------------------------------------------------------


class TokenRecord(Document):
    """A bearer token as shown: everything but its hash, with its state now."""

    id: str
    principal: str
    roles: list[str]
    scopes: list[str]
    state: str
    note: str | None
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    revoked_by: str | None


class RunPosition(Document):
    previous: str | None
    current: str | None
    next: list[str]


# -- the documents ---------------------------------------------------------------------------


class Capabilities(Document):
    capabilities: list[Capability]


class DefinitionDocument(Document):
    digest: str
    kind: str
    name: str
    created_at: datetime
    document: Free


class Deployments(Document):
    deployments: list[DeploymentInfo]


class DeploymentShown(Document):
    deployment: DeploymentInfo
    #: the versions with live (not ended) runs, most runs first, and how many each
    live: list[VersionRuns]
    #: live runs of every version together
    live_runs: int


class DeploymentHistory(Document):
    name: str
    activations: list[Activation]


#: a filed (or found, or unneeded) change proposal: ``created`` is false when an identical open
#: one was returned; ``unchanged`` lists the deployments whose version would not change
Filing = extended(DeployResult, "Filing")


class ProposalPage(Document):
    proposals: list[ChangeProposal]
    next_after: Cursor


class ReplayedRun(Document):
    """One run's verdict: ``same``, ``diverges``, ``needs_input`` or ``unsupported``; where
    (``state``) and why, unless ``same``."""

    run: str
    workflow: str
    version: str
    status: str
    verdict: str
    state: str | None
    why: str | None


class ReplayReason(Document):
    why: str
    runs: int


class ReplayGroup(Document):
    """The runs that share a verdict and a first differing state."""

    verdict: str
    state: str
    runs: int
    run_ids: list[str]
    reasons: list[ReplayReason]
    #: the proposal's risk-widening diff lines that bear on the state
    risk_widening: list[str]


class ReplaySummary(Document):
    runs: int
    same: int
    diverges: int
    needs_input: int
    unsupported: int
    groups: list[ReplayGroup]
    risk_widening: list[str]


class ReplayReport(Document):
    """Recorded runs re-driven through a proposed version: the summary, then each run."""

    subject: str
    #: workflow name → the version replayed
    versions: dict[str, str]
    summary: ReplaySummary
    runs: list[ReplayedRun]
    #: only for a proposal that migrates waiting runs: where each would move (a dry run)
    migration: list[RunMove] | None = None


class ProposalShown(Document):
    proposal: ChangeProposal
    reviews: list[Review]
    events: list[ProposalEvent]
    #: what the change removes that live runs of older versions still pin, counted now
    in_use: list[CapabilityInUse]


class ProposalChanged(Document):
    proposal: ChangeProposal


class MigrationDone(Document):
    #: each run considered: ``migrated``, ``would_move`` (a dry run), ``blocked``, ``stays``
    migration: MigrationReport
    #: runs by outcome
    counts: dict[str, int]


class ObjectiveStarted(Document):
    objective: Objective
    #: null for a draft, which starts its first run when activated
    run: Run | None
    #: false when an ``Idempotency-Key`` or trigger had started it already
    created: bool


class ObjectivePage(Document):
    objectives: list[Objective]
    next_after: Cursor


class ObjectiveShown(Document):
    objective: Objective
    runs: list[Run]


class RunPage(Document):
    runs: list[Run]
    next_after: Cursor


#: a run as ``GET /runs/{id}`` shows it: the service's view of it, and its position
RunShown = extended(RunView, "RunShown", position=(RunPosition, ...))


class RunChanged(Document):
    run: Run


class RunCanceled(Document):
    run: Run
    #: the ``run.canceled`` event's payload: what was prevented and what may have happened
    report: Free
    #: false when the run had been canceled already (a repeated cancel changes nothing)
    changed: bool


class EventPage(Document):
    events: list[Event]
    next_after: int


#: a turn with the input and output tokens of its model calls
TurnRecord = extended(TurnView, "TurnRecord", tokens=(dict[str, int], ...))


class Turns(Document):
    turns: list[TurnRecord]  # type: ignore[valid-type]


class ApprovalPage(Document):
    approvals: list[Approval]
    next_after: Cursor


class ApprovalShown(Document):
    approval: Approval
    #: the exact proposal, every field
    proposal: Free
    hash: str
    verified: bool
    unverified_reason: str | None


class ApprovalDecided(Document):
    approval: Approval
    #: false when the same decision had been made already
    changed: bool


class ActionPage(Document):
    actions: list[Action]
    next_after: Cursor


class ActionShown(Document):
    action: Action
    proposal: Free
    spend: list[Free]


class ActionReconciled(Document):
    action: Action
    #: why its outcome is still open, if it is
    pending: str | None


class ActionChanged(Document):
    action: Action


class EventDelivered(Document):
    event: InboundEvent
    duplicate: bool
    triggered: list[TriggerFiring]


class Triggers(Document):
    triggers: list[TriggerView]


class AgentShown(Document):
    agent: ActorView


class TeamShown(Document):
    team: ActorView


class ScopeLimits(Document):
    limits: list[ScopeLimit]


class ScopeLimitSet(Document):
    limit: ScopeLimit


class ScopeQuotas(Document):
    quotas: list[ScopeQuota]


class ScopeQuotaSet(Document):
    #: null when the quota was removed
    quota: ScopeQuota | None


class ScopeQueueSet(Document):
    queue: ScopeQueue


class ScopeRetentions(Document):
    retention: list[ScopeRetention]


class ScopeRetentionSet(Document):
    retention: ScopeRetention


class TriggerShown(Document):
    trigger: TriggerView
    firings: list[TriggerFiring]


class TriggerChanged(Document):
    trigger: TriggerView


class AgentRequests(Document):
    agent_requests: list[AgentRequest]


class AgentRequestShown(Document):
    agent_request: AgentRequest


class Draft(Document):
    """A compiled draft: its files, the changes that widen authority, the semantic diff, and
    every round of the draft–compile–repair loop."""

    draft: Free
    #: with ``propose``: the change proposal filed (or the identical open one found); None
    #: without ``propose``, or when the draft changes nothing
    proposal: ChangeProposal | None
    #: whether ``proposal`` was filed by this request
    created: bool
    #: deployments the draft leaves at their active version
    unchanged: list[str]
    note: str | None
    #: what the change removes that live runs of older versions still pin
    in_use: list[CapabilityInUse]


class AskPlanned(Document):
    """What would start: nothing has yet."""

    plan: Free


class AskStarted(ObjectiveStarted):
    """The confirmed plan, started: its objective (the prompt as its goal) and first run."""

    plan: Free


class Tokens(Document):
    tokens: list[TokenRecord]


class TokenIssued(Document):
    token: TokenRecord
    #: the bearer secret, shown once
    secret: str


class TokenChanged(Document):
    token: TokenRecord


# -- the console's views -------------------------------------------------------------------


class OperationAllowed(Document):
    allowed: bool
    reason: str | None


class Me(Document):
    principal: str
    via_token: bool
    roles: list[str]
    scopes: list[str]
    approver_roles: list[str]
    operations: dict[str, OperationAllowed]


class ConsoleRunRow(Document):
    id: str
    objective_id: str
    status: str
    reason: str | None
    workflow: str
    version: str
    current_state: str | None
    revision: int
    created_at: datetime
    updated_at: datetime


class ConsoleRuns(Document):
    runs: list[ConsoleRunRow]
    next_after: Cursor
    #: the deployed workflows, to filter on
    workflows: list[str]


class ConsoleApprovals(ApprovalPage):
    #: each approval's skill, spend, plain arguments and whether its proposal is verified
    glance: dict[str, Free]


class ConsoleRun(Document):
    run: ConsoleRunRow
    budget_used: Free
    position: RunPosition
    trail: list[str]
    outputs: Free
    actions: list[Action]
    #: the workflow's graph laid out for drawing
    graph: Free
    #: what the run leads to: objective, parent run, pending approvals, agent requests, child
    #: runs and the event it waits for
    related: Free


class ConsoleRunSummary(Document):
    id: str
    status: str
    budget_used: Free


class ConsoleApproval(ApprovalShown):
    #: the skill and the grants that allow it, each constraint evaluated
    skill: Free
    run: ConsoleRunSummary
    may_decide: bool
    #: why the caller may not decide it (None when it may): the page shows it instead of buttons
    why_not: str | None


class Documented(APIRoute):
    """A route whose success document is declared in ``responses`` (``ok=``), not inferred from
    its return annotation: FastAPI neither re-validates nor re-serialises the body, so it stays
    the records' own JSON."""

    def __init__(
        self, path: str, endpoint: Callable[..., Any], *, response_model: Any = None, **kwargs: Any
    ) -> None:
        if isinstance(response_model, DefaultPlaceholder):
            response_model = None
        super().__init__(path, endpoint, response_model=response_model, **kwargs)
