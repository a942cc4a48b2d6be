"""The change proposals repository: governed deployment changes, their reviews and events.

Every change to a proposal is an UPDATE that bumps its ``revision`` and ``last_event_seq`` plus
the event row describing it, in the caller's transaction, so each proposal's events form a
gap-free sequence and no state change goes unrecorded (the same discipline as run events).
Reviews and events are append-only; nothing here deletes or rewrites them. Writers hold the
governance lock (:meth:`ChangeProposals.lock_governance`) before they touch a proposal.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from openseal.runtime.clock import new_id
from openseal.runtime.statuses import OPEN_CHANGE_PROPOSAL_STATUSES
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import ListQuery

proposals = schema.change_proposals
reviews = schema.change_proposal_reviews
proposal_events = schema.change_proposal_events
#: the transaction advisory lock that serialises governance writers on PostgreSQL
GOVERNANCE_LOCK = zlib.crc32(b"openseal.governance")
OPEN = [str(s) for s in OPEN_CHANGE_PROPOSAL_STATUSES]


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
    #: where it lives: who files it decides, and only callers in it see or act on it
    scope: str = "default"

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


class ChangeProposals(Repository):
    """``store.change_proposals``: proposals, reviews and proposal events, in the caller's
    transaction (which holds the governance lock when it writes)."""

    def lock_governance(self, conn: sa.Connection) -> None:
        """Serialise governance mutations: they must see each other's effects on the base.

        SQLite's ``BEGIN IMMEDIATE`` already does; PostgreSQL takes a transaction advisory lock.
        """
        if self._store.dialect == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": GOVERNANCE_LOCK})

    def insert(
        self,
        conn: sa.Connection,
        *,
        actor: str,
        now: datetime,
        payload: dict[str, Any],
        **values: Any,
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
        proposal, _ = self.change(
            conn,
            proposal_id,
            event_type="change_proposal.filed",
            actor=actor,
            payload=payload,
            now=now,
        )
        return proposal

    def change(
        self,
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

    def load(self, conn: sa.Connection, proposal_id: str, *, lock: bool = False) -> ChangeProposal:
        """The proposal ``proposal_id``; ``lock`` takes its row lock."""
        stmt = sa.select(proposals).where(proposals.c.id == proposal_id)
        if lock:
            stmt = self._store.for_update(stmt)
        row = conn.execute(stmt).mappings().one_or_none()
        if row is None:
            raise NotFound(f"change proposal {proposal_id} not found")
        return ChangeProposal.from_row(row)

    def matching_ids(self, conn: sa.Connection, reference: str) -> list[str]:
        """``[reference]`` when it is an id; else the ids starting with it (two at most), for a
        reference of at least six hex characters; else nothing."""
        exact = conn.execute(sa.select(proposals.c.id).where(proposals.c.id == reference))
        if exact.scalar_one_or_none() is not None:
            return [reference]
        if len(reference) >= 6 and all(c in "0123456789abcdef" for c in reference):
            found = conn.execute(
                sa.select(proposals.c.id).where(proposals.c.id.startswith(reference)).limit(2)
            ).scalars()
            return [str(m) for m in found]
        return []

    def ids_ending_with(self, conn: sa.Connection, suffix: str) -> list[str]:
        """The ids ending with ``suffix`` (two at most): what finding one by handle needs."""
        found = conn.execute(
            sa.select(proposals.c.id).where(proposals.c.id.endswith(suffix)).limit(2)
        ).scalars()
        return [str(m) for m in found]

    def open_with_key(
        self, conn: sa.Connection, content_key: str, scope: str
    ) -> ChangeProposal | None:
        """The newest open proposal of exactly this content in ``scope``, if any (one filed in
        another scope is not its filer's to see or act on)."""
        row = (
            conn.execute(
                sa.select(proposals)
                .where(
                    proposals.c.content_key == content_key,
                    proposals.c.status.in_(OPEN),
                    proposals.c.scope == scope,
                )
                .order_by(proposals.c.created_at.desc(), proposals.c.id.desc())
                .limit(1)
            )
            .mappings()
            .one_or_none()
        )
        return None if row is None else ChangeProposal.from_row(row)

    def open_except(self, conn: sa.Connection, proposal_id: str) -> list[ChangeProposal]:
        """Every open proposal but ``proposal_id``."""
        rows = conn.execute(
            sa.select(proposals).where(proposals.c.status.in_(OPEN), proposals.c.id != proposal_id)
        ).mappings()
        return [ChangeProposal.from_row(row) for row in rows]

    def newest(
        self, statuses: Iterable[str] = (), query: ListQuery | None = None
    ) -> list[ChangeProposal]:
        """Proposals newest first, only those of ``statuses`` when given, narrowed to the
        cursor, ``since`` and ``scopes`` of ``query`` (its limit and workflow are the caller's:
        a proposal names its deployments in a JSON column)."""
        wanted = list(statuses)
        stmt = sa.select(proposals).order_by(proposals.c.created_at.desc(), proposals.c.id.desc())
        if query is not None and query.scopes is not None:
            stmt = stmt.where(proposals.c.scope.in_(list(query.scopes)))
        if wanted:
            stmt = stmt.where(proposals.c.status.in_(wanted))
        if query is not None and query.since is not None:
            stmt = stmt.where(proposals.c.created_at >= query.since)
        if query is not None and query.after is not None:
            cursor = sa.select(proposals.c.created_at).where(proposals.c.id == query.after)
            stmt = stmt.where(
                sa.or_(
                    proposals.c.created_at < cursor.scalar_subquery(),
                    sa.and_(
                        proposals.c.created_at == cursor.scalar_subquery(),
                        proposals.c.id < query.after,
                    ),
                )
            )
        with self._store.read() as conn:
            return [ChangeProposal.from_row(row) for row in conn.execute(stmt).mappings()]

    def add_review(
        self,
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

    def reviews(self, conn: sa.Connection, proposal_id: str) -> tuple[Review, ...]:
        rows = conn.execute(
            sa.select(reviews)
            .where(reviews.c.proposal_id == proposal_id)
            .order_by(reviews.c.at, reviews.c.id)
        ).mappings()
        return tuple(Review.from_row(row) for row in rows)

    def events(
        self, conn: sa.Connection, proposal_id: str, after: int = 0, limit: int = 1000
    ) -> tuple[ProposalEvent, ...]:
        rows = conn.execute(
            sa.select(proposal_events)
            .where(proposal_events.c.proposal_id == proposal_id, proposal_events.c.seq > after)
            .order_by(proposal_events.c.seq)
            .limit(limit)
        ).mappings()
        return tuple(ProposalEvent.from_row(row) for row in rows)
