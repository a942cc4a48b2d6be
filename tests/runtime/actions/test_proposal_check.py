"""A proposal's row against its artefact's bytes: what admission re-checks (invariant 6)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from openseal.canonical import canonical_bytes
from openseal.runtime.actions import proposal_check
from openseal.runtime.clock import utcnow
from openseal.runtime.store import Proposal

DOCUMENT: dict[str, Any] = {
    "format": "openseal.proposal/v1",
    "run": "r1",
    "workflow": {"name": "w", "version": "sha256:" + "0" * 64},
    "name": "order",
    "skill": {"name": "buy", "digest": "sha256:" + "1" * 64},
    "actor": "agent:buyer",
    "args": {"total": 10},
    "spend": None,
}


def proposal_of(document: dict[str, Any], data: bytes) -> Proposal:
    digest = hashlib.sha256(data).hexdigest()
    return Proposal(
        id="p1", run_id="r1", name="order", state="draft", hash=digest, artifact_digest=digest,
        skill="buy", skill_digest=document["skill"]["digest"], actor="agent:buyer",
        document=document, created_at=utcnow(),
    )  # fmt: skip


def test_the_document_the_bytes_were_drafted_from_is_not_encoded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    document = copy.deepcopy(DOCUMENT)
    data = canonical_bytes(document)
    proposal = proposal_of(document, data)

    def refused(value: Any) -> bytes:
        raise AssertionError("encoded again")

    monkeypatch.setattr(proposal_check, "canonical_bytes", refused)
    assert proposal_check.row_problem(proposal, data, encoded_from=document) is None


def test_a_row_read_back_is_compared_even_when_the_drafted_document_is_given() -> None:
    drafted = copy.deepcopy(DOCUMENT)
    data = canonical_bytes(drafted)
    changed = {**copy.deepcopy(DOCUMENT), "args": {"total": 99}}  # the row, changed since
    problem = proposal_check.row_problem(proposal_of(changed, data), data, encoded_from=drafted)
    assert problem is not None and "changed after it was drafted" in problem
    # and the columns are still held to the document
    column_changed = proposal_of(drafted, data)
    object.__setattr__(column_changed, "actor", "agent:other")
    problem = proposal_check.row_problem(column_changed, data, encoded_from=drafted)
    assert problem is not None and "actor" in problem
