"""Applying a change proposal's migration: at activation, and by an operator afterwards.

:func:`migrate` is ``openseal runs migrate --proposal ID`` and
``POST /api/v1/change-proposals/{id}/migrate``: with ``dry_run`` it shows, for any proposal
that carries a migration, which runs would move where (the review's view); otherwise it needs
the proposal activated and the actor a decider under its policy, and moves the runs (again
after a crash: a run already moved is not moved twice). :func:`after_activation` is what
activation runs once its transaction committed, and records the outcome on the proposal.
"""

from __future__ import annotations

from openseal.runtime.governance.change_proposals import GovernanceError, NotAllowed, resolve_id
from openseal.runtime.governance.migration import (
    Migration,
    MigrationReport,
    Selection,
    migrate_runs,
    migrations_of,
)
from openseal.runtime.governance.policy import Policy
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store import ChangeProposal, InvalidStatus, Store


def migrate(
    store: Store,
    proposal_id: str,
    actor: str,
    *,
    dry_run: bool = False,
    selection: Selection | None = None,
    roles: frozenset[str] = frozenset(),
) -> MigrationReport:
    """Move (or with ``dry_run`` plan to move) the waiting runs the proposal's migration
    covers, narrowed by ``selection``; each run in its own transaction."""
    with store.read() as conn:
        proposal = store.change_proposals.load(conn, resolve_id(store, conn, proposal_id))
        migrations = migrations_of(store, conn, proposal.targets)
    if not migrations:
        raise GovernanceError(
            f"change proposal {proposal.id} migrates no runs: none of its workflow versions "
            "has a `migrate` block",
            code="no_migration",
        )
    if not dry_run:
        _check_may_apply(proposal, actor, roles)
    return migrate_runs(store, migrations, proposal.id, actor, dry_run=dry_run, selection=selection)


def _check_may_apply(proposal: ChangeProposal, actor: str, roles: frozenset[str]) -> None:
    if proposal.status is not S.ACTIVATED:
        raise InvalidStatus(
            f"change proposal {proposal.id} is {proposal.status}; its runs move once it is "
            "activated (`--dry-run` shows what would move)"
        )
    if not Policy.from_dict(proposal.policy).may_decide(actor, roles):
        raise NotAllowed(f"{actor} may not migrate runs: not a decider of {proposal.id}")


def after_activation(store: Store, proposal: ChangeProposal, actor: str) -> ChangeProposal:
    """Move the runs an activated proposal's migration covers, then record what moved (and
    what stayed, and why) as the proposal's ``change_proposal.migrated`` event."""
    with store.read() as conn:
        migrations: list[Migration] = migrations_of(store, conn, proposal.targets)
    if not migrations:
        return proposal
    report = migrate_runs(store, migrations, proposal.id, actor)
    stayed = [
        {"run_id": m.run_id, "outcome": m.outcome, "reason": m.reason}
        for m in report.moves
        if m.outcome != "migrated"
    ]
    with store.write() as conn:
        recorded, _ = store.change_proposals.change(
            conn,
            proposal.id,
            event_type="change_proposal.migrated",
            actor=actor,
            payload={"counts": report.counts, "not_moved": stayed[:100]},
            now=store.now(),
        )
    return recorded
