"""What the store returns: frozen dataclasses, never database rows.

Each record has a ``from_row`` that maps a SQLAlchemy row mapping to the record, so the column
names live in one place next to :mod:`openseal.runtime.store.tables.schema`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Self, TypeVar

from openseal.contract import RunContext, Waiting
from openseal.runtime.statuses import (
    ActionStatus,
    AgentRequestStatus,
    ApprovalStatus,
    ObjectiveStatus,
    RunStatus,
)

Row = Mapping[Any, Any]
JSONValue = Any
R = TypeVar("R")


def evolve(record: R, **changes: Any) -> R:
    """``record`` with ``changes``: :func:`dataclasses.replace` for the store's records.

    A record is a frozen dataclass whose ``__init__`` only assigns its fields (no
    ``__post_init__``, no slots, every field in ``__init__``), so a copy of its ``__dict__``
    with the changes is exactly what ``replace`` builds, for a sixth of the cost: ``replace``
    gathers every field and passes it through ``__init__`` and the frozen ``__setattr__``
    again, and a fenced transaction makes a new run this way for every change and event.
    A name that is not a field is refused, as ``replace`` refuses it.
    """
    kind = type(record)
    names = kind.__dataclass_fields__.keys()  # type: ignore[attr-defined]
    if not changes.keys() <= names:  # compared in place, no set built
        raise TypeError(f"{kind.__name__} has no field {sorted(changes.keys() - names)[0]!r}")
    copy = object.__new__(kind)
    fields = copy.__dict__
    fields.update(record.__dict__)
    fields.update(changes)
    return copy


def assembled(kind: type[R], fields: dict[str, Any]) -> R:
    """A record of ``kind`` holding ``fields``, every one of its fields: what its ``__init__``
    builds (see :func:`evolve`), without the keyword passing and the frozen ``__setattr__``
    per field, which cost more than the rest of reading a row."""
    record = object.__new__(kind)
    record.__dict__.update(fields)
    return record


class RowRecord:
    """A record whose fields are exactly the columns of its row, by name."""

    @classmethod
    def from_row(cls, row: Row) -> Self:
        names = cls.__dataclass_fields__  # type: ignore[attr-defined]
        return assembled(cls, {name: row[name] for name in names})


@dataclass(frozen=True)
class DefinitionVersion:
    digest: str
    kind: str
    name: str
    document: dict[str, JSONValue]
    created_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> DefinitionVersion:
        return cls(
            digest=row["digest"],
            kind=row["kind"],
            name=row["name"],
            document=json.loads(row["document"]),
            created_at=row["created_at"],
        )


@dataclass(frozen=True)
class Deployment:
    name: str
    active_digest: str
    revision: int


@dataclass(frozen=True)
class Activation(RowRecord):
    id: str
    name: str
    digest: str
    previous_digest: str | None
    actor: str
    change_proposal_id: str | None
    reason: str | None
    at: datetime


@dataclass(frozen=True)
class Objective:
    id: str
    project: str
    workflow_name: str
    workflow_digest: str
    inputs: dict[str, JSONValue]
    status: ObjectiveStatus
    request_key: str | None
    request_hash: str
    revision: int
    created_at: datetime
    updated_at: datetime
    #: the principal who asked for it (None: made before objectives recorded it)
    created_by: str | None
    scope: str
    #: what it is for, in the words of who asked (None: not said)
    goal: str | None = None
    #: the agent or team that owns it: its workflow's owner (``team.procurement``)
    owner: str | None = None
    #: its runs' claim order among ready runs: higher first
    priority: int = 0
    #: the retry policy of the version it started on (``max_attempts``, ``backoff``,
    #: ``max_backoff`` in seconds); None: one run only
    retry: dict[str, JSONValue] | None = None
    #: the runs it started, the first included
    attempts: int = 1

    @classmethod
    def from_row(cls, row: Row, project: str) -> Objective:
        return cls(
            id=row["id"],
            project=project,
            workflow_name=row["workflow_name"],
            workflow_digest=row["workflow_digest"],
            inputs=row["inputs"],
            status=ObjectiveStatus(row["status"]),
            request_key=row["request_key"],
            request_hash=row["request_hash"],
            revision=row["revision"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            created_by=row["created_by"],
            scope=row["scope"],
            goal=row["goal"],
            owner=row["owner"],
            priority=row["priority"],
            retry=row["retry"],
            attempts=row["attempts"],
        )


@dataclass(frozen=True)
class Run:
    id: str
    objective_id: str
    parent_run_id: str | None
    workflow_digest: str
    status: RunStatus
    current_state: str | None
    #: what the run waits for (:mod:`openseal.contract`), tagged by ``kind``
    waiting: Waiting | None
    paused_from_status: RunStatus | None
    #: its inputs, each state's latest output and where it is (:mod:`openseal.contract`)
    context: RunContext
    epoch: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    wake_at: datetime | None
    last_event_seq: int
    stale_writes: int
    budget_used: dict[str, JSONValue]
    revision: int
    created_at: datetime
    updated_at: datetime
    #: its objective's scope: everything of the run (approvals, actions, events) is in it
    scope: str
    #: its objective's priority: claims take higher first
    priority: int = 0
    #: which run of its objective this is (1: the first; a retry counts on)
    attempt: int = 1

    @classmethod
    def from_row(cls, row: Row) -> Run:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["status"] = run_status(row["status"])
        paused_from = row["paused_from_status"]
        values["paused_from_status"] = run_status(paused_from) if paused_from else None
        return assembled(cls, values)


#: every run status by its value
_RUN_STATUSES = {status.value: status for status in RunStatus}


def run_status(value: str) -> RunStatus:
    """``RunStatus(value)`` (the same error for an unknown value) by one dictionary look-up:
    the enum's call costs several, and a fenced transaction makes one for every run it reads
    and every status change it holds back."""
    status = _RUN_STATUSES.get(value)
    return RunStatus(value) if status is None else status


@dataclass(frozen=True)
class UnwrittenRun:
    """A run created and not written yet, with what its ``run.created`` says: inserted by
    ``store.objectives`` (a new objective's first run, a child, a retry), or, for the first
    run of an objective created with ``write_run=False``, by its claim in the same transaction
    (``Leases.claim_and_start(unwritten=...)``), already claimed."""

    #: the run as created (its ``run.created`` counted in ``last_event_seq``)
    run: Run
    #: who created it, and the payload of its ``run.created``
    actor: str
    payload: dict[str, JSONValue]

    @property
    def created_event(self) -> tuple[str, str, dict[str, JSONValue]]:
        """Its ``run.created`` as an event to append: (type, actor, payload)."""
        return ("run.created", self.actor, self.payload)


@dataclass(frozen=True)
class NewObjective:
    """The result of ``create_objective``: ``created`` is False on an idempotent replay."""

    objective: Objective
    #: its first run (None: a draft, which starts it when activated)
    run: Run | None
    created: bool
    #: its first run when the creation left it for the caller's claim to write
    #: (``write_run=False``), else None
    unwritten: UnwrittenRun | None = None


@dataclass(frozen=True)
class Event(RowRecord):
    run_id: str
    seq: int
    type: str
    actor: str
    payload: dict[str, JSONValue]
    at: datetime


@dataclass(frozen=True)
class Turn(RowRecord):
    id: str
    run_id: str
    seq: int
    state: str
    phase: str
    status: str
    epoch: int
    worker: str
    started_at: datetime
    finished_at: datetime | None
    error: str | None


@dataclass(frozen=True)
class Activity(RowRecord):
    run_id: str
    activity_id: str
    kind: str
    input_hash: str
    result: JSONValue
    created_at: datetime


@dataclass(frozen=True)
class InboundEvent(RowRecord):
    id: str
    name: str
    correlation: dict[str, JSONValue]
    payload: JSONValue
    received_at: datetime
    consumed_by_run_id: str | None
    consumed_at: datetime | None
    #: the sender's id for this delivery (event id or ``Idempotency-Key``), when it gave one
    delivery_key: str | None = None
    #: the scopes whose runs it may wake, its sender's (None: every scope)
    scopes: list[str] | None = None

    def reaches(self, scope: str) -> bool:
        """Whether the event may wake a run in ``scope``."""
        return self.scopes is None or scope in self.scopes


@dataclass(frozen=True)
class AgentRequest:
    id: str
    caller_run_id: str
    callee: str
    child_run_id: str | None
    status: AgentRequestStatus
    request: JSONValue
    response: JSONValue
    #: the clarification rounds, oldest first: ``{question, asked_by, answer, answered_by}``
    clarification: JSONValue
    #: the completion reviews, oldest first: ``{by, verdict, reason}``
    review: JSONValue
    created_at: datetime
    updated_at: datetime
    deadline: datetime | None = None

    @classmethod
    def from_row(cls, row: Row) -> AgentRequest:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["status"] = AgentRequestStatus(row["status"])
        # Rows written before rounds were kept hold one round (or one review) as an object.
        for name in ("clarification", "review"):
            if isinstance(values[name], dict):
                values[name] = [values[name]]
        return cls(**values)

    @property
    def review_requested(self) -> bool:
        return isinstance(self.request, dict) and bool(self.request.get("review"))


@dataclass(frozen=True)
class Claim:
    """A worker's lease on one run. Pass it to ``heartbeat``, ``release`` and ``fenced``.

    ``claimed_from`` is the status the run had before the claim (``queued``, ``running`` for a
    takeover after lease expiry, or a waiting status whose wake-up came); ``run`` is the run
    as it is after the claim, including ``waiting`` so the engine sees what woke it.
    """

    run_id: str
    worker_id: str
    epoch: int
    lease_expires_at: datetime
    claimed_from: RunStatus
    run: Run


@dataclass(frozen=True)
class ArtifactInfo(RowRecord):
    digest: str
    size: int
    media_type: str
    created_at: datetime


@dataclass(frozen=True)
class Approval:
    id: str
    run_id: str
    proposal_id: str
    proposal_hash: str
    proposal_name: str
    state: str
    approvers: list[str]
    scope: str
    status: ApprovalStatus
    on_timeout: str
    expires_at: datetime | None
    decision: str | None
    decided_by: str | None
    decided_hash: str | None
    reason: str | None
    decided_at: datetime | None
    created_at: datetime
    revision: int

    @classmethod
    def from_row(cls, row: Row) -> Approval:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["status"] = ApprovalStatus(row["status"])
        values["approvers"] = list(row["approvers"] or [])
        return cls(**values)

    def expired_at(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


@dataclass(frozen=True)
class Proposal(RowRecord):
    id: str
    run_id: str
    name: str
    state: str
    hash: str
    artifact_digest: str
    skill: str
    skill_digest: str
    actor: str
    document: dict[str, Any]
    created_at: datetime

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.document.get("args") or {})

    @property
    def spend(self) -> dict[str, Any] | None:
        spend = self.document.get("spend")
        return dict(spend) if spend else None

    @property
    def action_key(self) -> str:
        return action_key(self.run_id, self.hash)


def action_key(run_id: str, proposal_hash: str) -> str:
    """The stable action key ``<run>:<proposal hash>``: one per exact proposal, never per try."""
    return f"{run_id}:{proposal_hash}"


@dataclass(frozen=True)
class TriggerFiring(RowRecord):
    id: str
    trigger_name: str
    trigger_digest: str
    occurrence_key: str
    source: str
    occurred_at: datetime
    inbound_event_id: str | None
    outcome: str
    objective_id: str | None
    inputs: dict[str, Any] | None
    detail: str | None
    recorded_at: datetime
    started_at: datetime | None


@dataclass(frozen=True)
class Action:
    id: str
    key: str
    run_id: str
    proposal_id: str
    proposal_hash: str
    proposal_name: str
    skill: str
    state: str | None
    status: ActionStatus
    approval_id: str | None
    attempts: int
    admitted_at: datetime | None
    dispatched_at: datetime | None
    finished_at: datetime | None
    result: Any
    error: str | None
    history: list[dict[str, Any]]
    resolution: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    revision: int

    @classmethod
    def from_row(cls, row: Row) -> Action:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["status"] = ActionStatus(row["status"])
        values["history"] = list(row["history"] or [])
        return cls(**values)


#: who a trigger's objectives are created by: ``trigger:<its name>``
TRIGGER_ACTOR: Final = "trigger:"
