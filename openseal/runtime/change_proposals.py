"""Change proposals as stored: records, errors and the one way a proposal changes.

Every change to a proposal is an UPDATE that bumps its ``revision`` and ``last_event_seq`` plus
the event row describing it, in the caller's transaction, so each proposal's events form a
gap-free sequence and no state change goes unrecorded (the same discipline as run events).
Reviews and events are append-only; nothing here deletes or rewrites them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from openseal.errors import RuntimeFailure
from openseal.runtime import schema
from openseal.runtime.clock import new_id
from openseal.runtime.events import iso
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store_errors import NotFound, StaleRevision

proposals = schema.change_proposals
reviews = schema.change_proposal_reviews
proposal_events = schema.change_proposal_events

#: Statuses from which a proposal can still be activated (after a decision where needed).
OPEN_STATUSES: frozenset[S] = frozenset({S.PROPOSED, S.IN_REVIEW, S.APPROVED})

#: The actor of decisions the policy makes by itself (auto-approval of narrowing changes).
POLICY_ACTOR = "system:governance"


class GovernanceError(RuntimeFailure):
    """A governance operation was refused; ``code`` says why."""

    code = "governance_error"


class Conflict(StaleRevision, GovernanceError):
    """``expected_revision`` no longer matches: someone else changed the proposal first.

    The same refusal as :class:`StaleRevision` (``except StaleRevision`` catches both); it
    keeps the code ``conflict`` that the API has always answered for change proposals.
    """

    code = "conflict"


class StaleProposal(GovernanceError):
    """The active versions (or governance) changed since the proposal was diffed."""

    code = "stale_proposal"


class NotAllowed(GovernanceError):
    """The actor may not do this under the proposal's policy (``code`` is more specific)."""

    code = "not_allowed"


class ProposalKind(StrEnum):
    DEPLOY = "deploy"
    ROLLBACK = "rollback"


class Verdict(StrEnum):
    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes"


class Decision(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"


@dataclass(frozen=True)
class Target:
    """One deployment a proposal switches: ``name`` → version ``digest`` (a store key)."""

    name: str
    kind: str
    digest: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind, "digest": self.digest}


@dataclass(frozen=True)
class ChangeProposal:
    id: str
    kind: ProposalKind
    status: S
    author: str
    message: str | None
    content_key: str
    targets: tuple[Target, ...]
    #: deployment name → the digest active when the diff was made (None: not deployed yet)
    base: Mapping[str, str | None]
    policy: Mapping[str, Any]
    diff: Mapping[str, Any]
    risk_widening: bool
    round: int
    decision: Mapping[str, Any] | None
    superseded_by: str | None
    revision: int
    last_event_seq: int
    created_at: datetime
    updated_at: datetime
    activated_at: datetime | None

    @property
    def deployments(self) -> tuple[str, ...]:
        return tuple(target.name for target in self.targets)

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> ChangeProposal:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["kind"] = ProposalKind(row["kind"])
        values["status"] = S(row["status"])
        values["targets"] = tuple(Target(**target) for target in row["targets"])
        values["risk_widening"] = bool(row["risk_widening"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": str(self.kind),
            "status": str(self.status),
            "author": self.author,
            "message": self.message,
            "targets": [target.to_dict() for target in self.targets],
            "base": dict(self.base),
            "policy": dict(self.policy),
            "risk_widening": self.risk_widening,
            "round": self.round,
            "decision": None if self.decision is None else dict(self.decision),
            "superseded_by": self.superseded_by,
            "revision": self.revision,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "activated_at": iso(self.activated_at),
            "diff": dict(self.diff),
        }


@dataclass(frozen=True)
class Review:
    id: str
    proposal_id: str
    round: int
    reviewer: str
    verdict: Verdict
    comment: str | None
    at: datetime

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Review:
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["verdict"] = Verdict(row["verdict"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "round": self.round,
            "reviewer": self.reviewer,
            "verdict": str(self.verdict),
            "comment": self.comment,
            "at": iso(self.at),
        }


@dataclass(frozen=True)
class ProposalEvent:
    proposal_id: str
    seq: int
    type: str
    actor: str
    payload: dict[str, Any]
    at: datetime

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> ProposalEvent:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "type": self.type,
            "actor": self.actor,
            "payload": self.payload,
            "at": iso(self.at),
        }


# --------------------------------------------------------------------------- persistence


def insert_proposal(
    conn: sa.Connection, *, actor: str, now: datetime, payload: dict[str, Any], **values: Any
) -> ChangeProposal:
    """Insert a new proposal (status ``proposed``) and its ``change_proposal.filed`` event."""
    proposal_id = new_id()
    conn.execute(
        sa.insert(proposals).values(
            id=proposal_id,
            status=S.PROPOSED,
            round=1,
            decision=None,
            superseded_by=None,
            revision=0,
            last_event_seq=0,
            created_at=now,
            updated_at=now,
            activated_at=None,
            **values,
        )
    )
    proposal, _ = change_proposal(
        conn,
        proposal_id,
        event_type="change_proposal.filed",
        actor=actor,
        payload=payload,
        now=now,
    )
    return proposal


def change_proposal(
    conn: sa.Connection,
    proposal_id: str,
    *,
    event_type: str,
    actor: str,
    payload: dict[str, Any],
    now: datetime,
    values: dict[str, Any] | None = None,
) -> tuple[ChangeProposal, ProposalEvent]:
    """Apply ``values`` to the proposal and append one event describing the change."""
    stmt = (
        sa.update(proposals)
        .where(proposals.c.id == proposal_id)
        .values(
            last_event_seq=proposals.c.last_event_seq + 1,
            revision=proposals.c.revision + 1,
            updated_at=now,
            **(values or {}),
        )
        .returning(*proposals.c)
    )
    row = conn.execute(stmt).mappings().one_or_none()
    if row is None:
        raise NotFound(f"change proposal {proposal_id} not found")
    proposal = ChangeProposal.from_row(row)
    event = ProposalEvent(proposal_id, proposal.last_event_seq, event_type, actor, payload, now)
    conn.execute(
        sa.insert(proposal_events).values(
            proposal_id=proposal_id,
            seq=event.seq,
            type=event_type,
            actor=actor,
            payload=payload,
            at=now,
        )
    )
    return proposal, event


def load_proposal(
    conn: sa.Connection,
    proposal_id: str,
    *,
    for_update: Callable[[sa.Select[Any]], sa.Select[Any]] | None = None,
) -> ChangeProposal:
    """The proposal ``proposal_id``; ``for_update`` (the store's hook) locks its row."""
    stmt = sa.select(proposals).where(proposals.c.id == proposal_id)
    if for_update is not None:
        stmt = for_update(stmt)
    row = conn.execute(stmt).mappings().one_or_none()
    if row is None:
        raise NotFound(f"change proposal {proposal_id} not found")
    return ChangeProposal.from_row(row)


def resolve_id(conn: sa.Connection, reference: str) -> str:
    """A full proposal id from an id or a unique prefix of at least six characters."""
    exact = conn.execute(sa.select(proposals.c.id).where(proposals.c.id == reference))
    if exact.scalar_one_or_none() is not None:
        return reference
    if len(reference) >= 6 and all(c in "0123456789abcdef" for c in reference):
        found = conn.execute(
            sa.select(proposals.c.id).where(proposals.c.id.startswith(reference)).limit(2)
        ).scalars()
        matches = [str(m) for m in found]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise GovernanceError(
                f"change proposal id prefix {reference!r} is ambiguous; give more characters",
                code="ambiguous_id",
            )
    raise NotFound(f"change proposal {reference} not found")


def add_review(
    conn: sa.Connection,
    proposal: ChangeProposal,
    reviewer: str,
    verdict: Verdict,
    comment: str | None,
    now: datetime,
) -> Review:
    review = Review(new_id(), proposal.id, proposal.round, reviewer, verdict, comment, now)
    conn.execute(
        sa.insert(reviews).values(
            id=review.id,
            proposal_id=review.proposal_id,
            round=review.round,
            reviewer=reviewer,
            verdict=str(verdict),
            comment=comment,
            at=now,
        )
    )
    return review


def load_reviews(conn: sa.Connection, proposal_id: str) -> tuple[Review, ...]:
    rows = conn.execute(
        sa.select(reviews)
        .where(reviews.c.proposal_id == proposal_id)
        .order_by(reviews.c.at, reviews.c.id)
    ).mappings()
    return tuple(Review.from_row(row) for row in rows)


def current_verdicts(reviews_: tuple[Review, ...], round_: int) -> dict[str, Verdict]:
    """Each reviewer's latest verdict in ``round_`` (a later review replaces an earlier one)."""
    latest: dict[str, Verdict] = {}
    for review in reviews_:
        if review.round == round_:
            latest[review.reviewer] = review.verdict
    return latest


def load_events(
    conn: sa.Connection, proposal_id: str, after: int = 0, limit: int = 1000
) -> tuple[ProposalEvent, ...]:
    rows = conn.execute(
        sa.select(proposal_events)
        .where(proposal_events.c.proposal_id == proposal_id, proposal_events.c.seq > after)
        .order_by(proposal_events.c.seq)
        .limit(limit)
    ).mappings()
    return tuple(ProposalEvent.from_row(row) for row in rows)
