"""``proposal``: draft the exact payload of an action and store it before moving on.

Each ``proposal "name" {...}`` block is evaluated into its canonical document
(:mod:`openseal.runtime.actions.proposals`); the bytes are stored as an immutable artefact and the
proposal and its action (``proposed``) are recorded in a fenced transaction — all before the
run leaves the state, so an approval can only ever bind to something that is stored. The
state's output maps each name to the proposal's id, hash, skill, actor, args and spend.
"""

from __future__ import annotations

from typing import Any

from openseal.contract import ProposalSettings
from openseal.runtime.actions import proposals
from openseal.runtime.actions.proposals import Draft
from openseal.runtime.engine.states.base import Advance, Outcome, StepContext
from openseal.runtime.statuses import ActionStatus
from openseal.runtime.store import Action, FencedTx, Proposal, Store


def execute(ctx: StepContext) -> Outcome:
    output: dict[str, Any] = {}
    for name, drafted in drafts(ctx):
        output[name] = proposals.output_of(store_draft(ctx, drafted))
    return Advance("done", output)


def drafts(ctx: StepContext) -> list[tuple[str, Draft]]:
    """The state's proposals evaluated into their exact payloads, by name; nothing stored
    (replay compares them with the recorded ones)."""
    return [
        (name, proposals.draft(ctx.workflow, ctx.run.id, ctx.state.name, name, config, ctx.scope))
        for name, config in sorted(ctx.state.settings(ProposalSettings).items())
    ]


def store_draft(ctx: StepContext, drafted: Draft, tx: FencedTx | None = None) -> Proposal:
    """Store ``drafted`` as an artefact, then record it and its action (idempotent by hash).

    With ``tx`` the rows are written in that fenced transaction (the caller commits them with
    what it does next); otherwise in one of their own.
    """
    # a large artefact's file first (SQLite), so no row points at a missing file; otherwise
    # the row carries the bytes itself
    digest = ctx.store.artifacts.write_file(drafted.data)
    if tx is not None:
        return store_draft_in(ctx, drafted, digest, tx)[0]
    with ctx.store.leases.fenced(ctx.claim) as own:
        return store_draft_in(ctx, drafted, digest, own)[0]


def store_draft_in(
    ctx: StepContext, drafted: Draft, digest: str, tx: FencedTx, *, hold_new_action: bool = False
) -> tuple[Proposal, Action, bool]:
    """Record ``drafted`` (prepared by ``write_file`` as ``digest``, outside any transaction)
    and its action in the caller's transaction ``tx``; both are returned, and whether the
    action is stored. With ``hold_new_action`` the action of a proposal new in this
    transaction is not stored (``store.actions.new``): the caller's move of it, in ``tx``,
    stores it."""
    return _record(tx, ctx.store, drafted, digest, hold_new_action)


def _record(
    tx: FencedTx, store: Store, drafted: Draft, digest: str, hold_new_action: bool
) -> tuple[Proposal, Action, bool]:
    # Rows of other tables, which append no run event: the run's held-back changes stay held
    # back (with a turn saved in this transaction, one flush writes them all).
    conn = tx.row_conn
    # the artefact and the proposal inserted together (on PostgreSQL by one statement)
    data = drafted.data
    artifact = store.artifacts.new_row(digest, len(data), proposals.MEDIA_TYPE, data)
    proposal = store.proposals.new(tx.claim.run_id, drafted, digest, tx.now)
    if tx.row_stored:
        inserted = store.insert_new_rows(conn, [artifact, store.proposals.new_row(proposal)])
    else:
        # The run is written by this transaction's flush: it has no proposal yet, and its
        # first one is inserted with it, after its row.
        table, _key, row = store.proposals.new_row(proposal)
        tx.insert_with_flush(table, row)
        inserted = [*store.insert_new_rows(conn, [artifact]), True]
    store.artifacts.recorded(conn, artifact, inserted[0])
    proposal, created = store.proposals.recorded(conn, proposal, inserted[1])
    if created and hold_new_action:
        action, stored = store.actions.new(proposal, tx.now), False
    else:
        action, stored = store.actions.ensure(conn, proposal, tx.now), True
    if action.status in (ActionStatus.DENIED, ActionStatus.CANCELED):
        # The same exact content drafted again (after changes were requested, say):
        # it is proposed afresh and needs a fresh approval.
        action = store.actions.move(
            tx.conn, action, ActionStatus.PROPOSED, now=tx.now, actor=tx.actor,
            note="drafted again", error=None,
        ) or store.actions.get(tx.conn, action.id)  # fmt: skip
    tx.append_event(
        "proposal.drafted",
        {
            "proposal_id": proposal.id,
            "name": proposal.name,
            "hash": proposal.hash,
            "artifact": proposal.artifact_digest,
            "skill": proposal.skill,
            "new": created,
        },
    )
    return proposal, action, stored
