"""The status vocabularies of the persistent runtime, named exactly as DESIGN §5 names them.

The names match the peer system users already know, so they are part of the public contract:
they appear in the database, in events, in the CLI and in the HTTP API. Each enum is a
``StrEnum`` so a member compares equal to (and serialises as) its plain string.
"""

from __future__ import annotations

from enum import StrEnum


class ObjectiveStatus(StrEnum):
    DRAFT = "draft"
    ACTIVE = "active"
    PAUSED = "paused"
    SATISFIED = "satisfied"
    FAILED = "failed"
    RETIRED = "retired"


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SLEEPING = "sleeping"
    WAITING_FOR_DEPENDENCY = "waiting_for_dependency"
    WAITING_FOR_AGENT = "waiting_for_agent"
    WAITING_FOR_APPROVAL = "waiting_for_approval"
    WAITING_FOR_EVENT = "waiting_for_event"
    #: over a concurrency cap (or another flow-control limit): holds no lease and no worker;
    #: ``waiting`` says which limit (``waits_for``); woken when it frees, higher priority first
    WAITING_FOR_CAPACITY = "waiting_for_capacity"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    NEEDS_ATTENTION = "needs_attention"


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CHANGES_REQUESTED = "changes_requested"
    EXPIRED = "expired"
    CANCELED = "canceled"


class ActionStatus(StrEnum):
    PROPOSED = "proposed"
    WAITING_FOR_APPROVAL = "waiting_for_approval"
    ADMITTED = "admitted"
    DISPATCHED = "dispatched"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNKNOWN = "unknown"
    NEEDS_ATTENTION = "needs_attention"
    DENIED = "denied"
    CANCELED = "canceled"


#: action statuses whose effect may have happened and is not settled
OPEN_OUTCOME = (ActionStatus.DISPATCHED, ActionStatus.UNKNOWN, ActionStatus.NEEDS_ATTENTION)


class ChangeProposalStatus(StrEnum):
    PROPOSED = "proposed"
    IN_REVIEW = "in_review"
    APPROVED = "approved"
    REJECTED = "rejected"
    ACTIVATED = "activated"
    SUPERSEDED = "superseded"


class AgentRequestStatus(StrEnum):
    """``requested → accepted → (clarification_requested ⇄ accepted) → completed | declined |
    failed | expired | canceled``; a completion the caller asked to review then becomes
    ``completion_reviewed`` or, sent back, ``accepted`` again."""

    REQUESTED = "requested"
    ACCEPTED = "accepted"
    CLARIFICATION_REQUESTED = "clarification_requested"
    COMPLETED = "completed"
    COMPLETION_REVIEWED = "completion_reviewed"
    DECLINED = "declined"
    FAILED = "failed"
    EXPIRED = "expired"
    CANCELED = "canceled"


# A run in one of these statuses waits for something durable (a timer, an event, a decision,
# another run) and therefore holds no lease and no worker (invariant 5).
WAITING_RUN_STATUSES: frozenset[RunStatus] = frozenset(
    {
        RunStatus.SLEEPING,
        RunStatus.WAITING_FOR_DEPENDENCY,
        RunStatus.WAITING_FOR_AGENT,
        RunStatus.WAITING_FOR_APPROVAL,
        RunStatus.WAITING_FOR_EVENT,
    }
)

#: a run waiting for a flow-control limit: it has no timer (``wake_at``); a freed slot wakes it
#: (``openseal.runtime.engine.capacity``), and a resumed or retried one is simply queued again
CAPACITY_WAIT_STATUSES: frozenset[RunStatus] = frozenset({RunStatus.WAITING_FOR_CAPACITY})

TERMINAL_RUN_STATUSES: frozenset[RunStatus] = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELED}
)
#: every status of a run that has not ended, in a fixed order (for SQL, where ``IN`` of them
#: finds the few such runs by an index that ``NOT IN`` the ended ones would not use)
LIVE_RUN_STATUSES: tuple[RunStatus, ...] = tuple(
    status for status in RunStatus if status not in TERMINAL_RUN_STATUSES
)

# Only a running run holds a lease; every other status releases it in the same transaction.
LEASED_RUN_STATUSES: frozenset[RunStatus] = frozenset({RunStatus.RUNNING})

#: a ``completed`` request is final unless its caller asked to review it
TERMINAL_AGENT_REQUEST_STATUSES: frozenset[AgentRequestStatus] = frozenset(
    {
        AgentRequestStatus.COMPLETED,
        AgentRequestStatus.COMPLETION_REVIEWED,
        AgentRequestStatus.DECLINED,
        AgentRequestStatus.FAILED,
        AgentRequestStatus.EXPIRED,
        AgentRequestStatus.CANCELED,
    }
)

#: change proposals that can still be activated (after a decision where needed)
OPEN_CHANGE_PROPOSAL_STATUSES: frozenset[ChangeProposalStatus] = frozenset(
    {ChangeProposalStatus.PROPOSED, ChangeProposalStatus.IN_REVIEW, ChangeProposalStatus.APPROVED}
)
