"""Verifying a stored proposal against its hash: what is shown, approved and sent (invariant 6).

A proposal is stored twice: as an immutable artefact (its canonical bytes, whose sha256 is the
proposal's hash) and as a row the runtime queries (its document and a few columns taken from
it). Only the artefact is protected by its digest, so before a proposal is shown as verified,
approved, or admitted for dispatch, the row must say exactly what the artefact says:

* the artefact's digest is the proposal's hash, and the artefact can be read here (on any
  host) and still hashes to it;
* the row's document, in canonical form, *is* the artefact's bytes — so the arguments that
  will be sent hash to the approved hash;
* the row's columns (run, name, skill, skill digest, actor) are the document's.

Anything else is reported with the reason, never silently shown as the approved content.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from openseal.canonical import canonical_bytes
from openseal.errors import RuntimeFailure, StoreError
from openseal.runtime.store import ArtifactStore, Connection, Proposal


class ProposalUnverified(RuntimeFailure):
    """A proposal's stored content does not match its hash (or cannot be read to check)."""

    code = "proposal_unverified"


@dataclass(frozen=True)
class Verification:
    """What a stored proposal says and whether it is the content its hash names."""

    #: the artefact's document when it could be read, else the row's (flagged by ``problem``)
    document: dict[str, Any]
    #: why the proposal is not verified; None when it is
    problem: str | None = None

    @property
    def verified(self) -> bool:
        return self.problem is None


def verify_in(
    conn: Connection, artifacts: ArtifactStore, proposal: Proposal, stored: bytes | None = None
) -> Verification:
    """Check ``proposal`` (its row) against its artefact, reading in ``conn``'s transaction.

    ``stored``: the artefact's bytes, when this transaction stored them or checked the stored
    ones against their digest (drafting does both), so they need not be read back."""
    data, problem = _checked(conn, artifacts, proposal, stored)
    return Verification(proposal.document if data is None else json.loads(data), problem)


def problem_in(
    conn: Connection,
    artifacts: ArtifactStore,
    proposal: Proposal,
    stored: bytes | None = None,
    encoded_from: dict[str, Any] | None = None,
) -> str | None:
    """Why ``proposal`` is not verified (see :func:`verify_in`), or None when it is: for a
    caller that only decides (admission, approval), without decoding the artefact's document.

    ``encoded_from``: the document ``stored`` are the canonical bytes of, when this
    transaction drafted them from it (see :func:`row_problem`)."""
    return _checked(conn, artifacts, proposal, stored, encoded_from)[1]


def _checked(
    conn: Connection,
    artifacts: ArtifactStore,
    proposal: Proposal,
    stored: bytes | None,
    encoded_from: dict[str, Any] | None = None,
) -> tuple[bytes | None, str | None]:
    """The artefact's bytes when they could be read, and why the proposal is not verified."""
    if proposal.artifact_digest != proposal.hash:
        return None, f"its artefact {proposal.artifact_digest} is not the one its hash names"
    try:
        data = stored if stored is not None else artifacts.read_in(conn, proposal.artifact_digest)
    except StoreError as exc:  # not found here, or corrupt
        return None, f"its artefact cannot be verified: {exc.message}"
    return data, row_problem(proposal, data, encoded_from if stored is not None else None)


def row_problem(
    proposal: Proposal, data: bytes, encoded_from: dict[str, Any] | None = None
) -> str | None:
    """Why the proposal's row does not say what its artefact ``data`` says, or None.

    A row whose document is ``encoded_from`` itself — the very object ``data`` was encoded
    from when it was drafted, in the caller's transaction — holds what ``data`` says by
    construction, so it is not encoded a second time; a row read back from the database is
    another object and is always compared."""
    if proposal.document is not encoded_from:
        stored = canonical_bytes(proposal.document)
        if stored != data:
            now = hashlib.sha256(stored).hexdigest()
            return (
                f"its stored content was changed after it was drafted: it now hashes to {now}, "
                f"not to {proposal.hash}"
            )
    document = proposal.document
    skill = document.get("skill") or {}
    expected = {
        "run_id": document.get("run"),
        "name": document.get("name"),
        "skill": skill.get("name"),
        "skill_digest": skill.get("digest"),
        "actor": document.get("actor"),
    }
    for column, value in expected.items():
        if getattr(proposal, column) != value:
            return f"its stored {column} is not the one its content names ({value})"
    return None


def payload_hash(document: dict[str, Any]) -> str:
    """The hash of a proposal document: what a dispatch recomputes for what it sends."""
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def check_payload(document: dict[str, Any], approved: str, what: str) -> None:
    """Raise :class:`ProposalUnverified` unless ``document`` hashes to ``approved``."""
    found = payload_hash(document)
    if found != approved:
        raise ProposalUnverified(
            f"{what} was not sent: its content hashes to {found}, not to the approved {approved}"
        )
