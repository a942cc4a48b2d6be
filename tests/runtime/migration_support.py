"""Helpers for the migration tests: a procurement run waiting for approval on version 1, and
version 2 of its workflow (with a ``migrate`` block) deployed through a change proposal."""

from __future__ import annotations

import shutil
from pathlib import Path

from openseal.compiler import CompiledDocument, compile_paths
from openseal.runtime.governance import flow as gov
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store import ChangeProposal, Event, Store

WORKFLOW = "procure_laptops"
ALICE, BOB, CAROL = "user:alice", "user:bob", "user:carol"

MIGRATE = """  migrate {
    version = "%(version)s"
    state "review" {
      to = state.review
    }
    leave = ["submit"]
  }

  state "done" {"""


def version_two(v1_folder: Path, tmp: Path, v1: str, *, constraint: str | None = None) -> Path:
    """Version 2 of the example in ``v1_folder``: a new description, a ``migrate`` block from
    ``v1``, and optionally the order binding's total limit tightened to ``constraint``."""
    root = tmp / f"v2_{constraint or 'same'}"
    shutil.copytree(v1_folder.parent, root)
    folder = root / v1_folder.name
    workflow = folder / "workflow.hcl"
    text = workflow.read_text("utf-8").replace('  state "done" {', MIGRATE % {"version": v1[:12]})
    text = text.replace("submit it once.", "submit it once (reviewed again).")
    workflow.write_text(text, "utf-8")
    if constraint is not None:
        team = folder / "team.hcl"
        tightened = team.read_text("utf-8").replace("args.total <= 20000", constraint)
        assert constraint in tightened
        team.write_text(tightened, "utf-8")
    return folder


def compiled(folder: Path) -> dict[str, CompiledDocument]:
    result = compile_paths([folder])
    assert result.ok, [str(d) for d in result.diagnostics]
    return result.documents


def approve_and_activate(store: Store, documents: dict[str, CompiledDocument]) -> ChangeProposal:
    """File, review, decide and activate ``documents`` under the default policy."""
    filed = gov.deploy(store, documents, ALICE)
    assert filed.proposal is not None, filed.note
    proposal = filed.proposal
    assert proposal.status is S.PROPOSED  # a migration is never approved by the policy alone
    gov.review(store, proposal.id, BOB, "approve")
    gov.decide(store, proposal.id, CAROL, "approve")
    return gov.activate(store, proposal.id, CAROL)


def migrated_events(store: Store, run_id: str) -> list[Event]:
    return [e for e in store.runs.events(run_id, limit=1000) if e.type == "run.migrated"]
