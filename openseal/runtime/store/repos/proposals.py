"""The proposals repository: the rows of proposals, the exact payloads of governed actions.

A proposal's identity is the sha256 of its canonical document (invariant 6); the document's
bytes are also stored as an artefact. A run records each hash once: the same draft again
returns the stored row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa

from openseal.runtime.clock import new_id
from openseal.runtime.store.db import combined, fastsql
from openseal.runtime.store.db.errors import NotFound
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import Proposal

proposals = schema.proposals
BY_HASH = sa.select(proposals).where(
    proposals.c.run_id == sa.bindparam("p_run"), proposals.c.hash == sa.bindparam("p_hash")
)


class ProposalContent(Protocol):
    """What a proposal asks, stored (a :class:`Proposal`) or drafted (the runtime's ``Draft``,
    which replay evaluates without storing it): what admission reads of it."""

    @property
    def name(self) -> str: ...
    @property
    def skill(self) -> str: ...
    @property
    def skill_digest(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def document(self) -> dict[str, Any]: ...


class NewProposal(ProposalContent, Protocol):
    """What a drafted proposal tells the store (the runtime's ``Draft``): its content, the
    state that drafted it and its hash."""

    @property
    def state(self) -> str: ...
    @property
    def hash(self) -> str: ...


class Proposals(Repository):
    """``store.proposals``: proposal rows, in the caller's transaction."""

    def insert(
        self,
        conn: sa.Connection,
        run_id: str,
        draft: NewProposal,
        artifact_digest: str,
        now: datetime,
    ) -> tuple[Proposal, bool]:
        """Record ``draft`` for ``run_id``; the same hash again returns the stored proposal."""
        proposal = self.new(run_id, draft, artifact_digest, now)
        (inserted,) = self._store.insert_new_rows(conn, [self.new_row(proposal)])
        return self.recorded(conn, proposal, inserted)

    @staticmethod
    def new(run_id: str, draft: NewProposal, artifact_digest: str, now: datetime) -> Proposal:
        """:meth:`insert` in steps, for a caller inserting other rows with it: the proposal,
        its row to insert unless the run has its hash (:meth:`new_row`,
        ``store.insert_new_rows``), then :meth:`recorded`."""
        return Proposal(
            id=new_id(),
            run_id=run_id,
            name=draft.name,
            state=draft.state,
            hash=draft.hash,
            artifact_digest=artifact_digest,
            skill=draft.skill,
            skill_digest=draft.skill_digest,
            actor=draft.actor,
            document=draft.document,
            created_at=now,
        )

    @staticmethod
    def new_row(proposal: Proposal) -> combined.NewRow:
        return proposals, ("run_id", "hash"), proposal.__dict__

    def recorded(
        self, conn: sa.Connection, proposal: Proposal, inserted: bool
    ) -> tuple[Proposal, bool]:
        """``proposal`` if it was ``inserted``, else the one stored with its hash; and which."""
        if inserted:
            return proposal, True
        existing = self.by_hash(conn, proposal.run_id, proposal.hash)
        assert existing is not None  # it is why nothing was inserted
        return existing, False

    def by_hash(self, conn: sa.Connection, run_id: str, proposal_hash: str) -> Proposal | None:
        params = {"p_run": run_id, "p_hash": proposal_hash}
        found = fastsql.one_or_none(fastsql.execute(conn, BY_HASH, params))
        return None if found is None else Proposal.from_row(found)

    def get(self, conn: sa.Connection, proposal_id: str) -> Proposal:
        row = conn.execute(sa.select(proposals).where(proposals.c.id == proposal_id))
        found = row.mappings().one_or_none()
        if found is None:
            raise NotFound(f"proposal {proposal_id} not found")
        return Proposal.from_row(found)
