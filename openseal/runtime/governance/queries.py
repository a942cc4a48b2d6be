"""Read-only views of governance: proposals, their reviews and events, deployments."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from openseal.errors import UsageError
from openseal.runtime.governance.change_proposals import resolve_id
from openseal.runtime.listing import list_query
from openseal.runtime.statuses import OPEN_CHANGE_PROPOSAL_STATUSES as OPEN_STATUSES
from openseal.runtime.statuses import ChangeProposalStatus as S
from openseal.runtime.store import (
    Activation,
    ChangeProposal,
    NotFound,
    ProposalEvent,
    Review,
    Store,
)


@dataclass(frozen=True)
class DeploymentInfo:
    name: str
    kind: str
    active_digest: str
    revision: int
    activated_at: datetime | None
    activated_by: str | None
    change_proposal_id: str | None


def get_proposal(store: Store, proposal_id: str) -> ChangeProposal:
    """A proposal by id or unique id prefix (six characters or more)."""
    with store.read() as conn:
        return store.change_proposals.load(conn, resolve_id(store, conn, proposal_id))


def list_proposals(
    store: Store,
    *,
    statuses: Iterable[str] = (),
    deployment: str | None = None,
    limit: int = 100,
    after: str | None = None,
    since: str | None = None,
    scopes: Iterable[str] | None = None,
) -> tuple[ChangeProposal, ...]:
    """Proposals, newest first, optionally only some statuses or those touching ``deployment``
    (a workflow's name), older than the proposal ``after`` and created ``since``; only those
    in ``scopes`` when given."""
    wanted = [_status(s) for s in statuses]
    query = list_query(
        limit=limit, after=after, since=since, workflow=deployment,
        scopes=None if scopes is None else tuple(scopes),
    )  # fmt: skip
    rows = store.change_proposals.newest(wanted, query)
    if deployment is not None:
        rows = [p for p in rows if deployment in p.deployments]
    return tuple(rows[:limit])


def proposal_reviews(store: Store, proposal_id: str) -> tuple[Review, ...]:
    with store.read() as conn:
        return store.change_proposals.reviews(conn, resolve_id(store, conn, proposal_id))


def proposal_events(store: Store, proposal_id: str, after: int = 0) -> tuple[ProposalEvent, ...]:
    """The proposal's events in order; ``seq`` is gap-free from 1."""
    with store.read() as conn:
        return store.change_proposals.events(conn, resolve_id(store, conn, proposal_id), after)


def list_deployments(store: Store) -> tuple[DeploymentInfo, ...]:
    """Every deployment with its active version and who activated it, by name."""
    with store.read() as conn:
        out = []
        for deployment, kind in store.definitions.deployments_in(conn):
            last = store.definitions.history_in(conn, deployment.name)[-1:]
            out.append(
                DeploymentInfo(
                    name=deployment.name,
                    kind=kind,
                    active_digest=deployment.active_digest,
                    revision=deployment.revision,
                    activated_at=last[0].at if last else None,
                    activated_by=last[0].actor if last else None,
                    change_proposal_id=last[0].change_proposal_id if last else None,
                )
            )
    return tuple(out)


def deployment_history(store: Store, name: str) -> tuple[Activation, ...]:
    """Every activation of deployment ``name``, oldest first."""
    history = store.definitions.history(name)
    if not history:
        raise NotFound(f"deployment {name} not found")
    return history


def wait_for_activation(
    read: Callable[[], ChangeProposal],
    timeout: float,
    *,
    poll_interval: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
) -> ChangeProposal:
    """Poll ``read`` (the proposal, from a store or a server) until the proposal is activated
    or closed (rejected, superseded) or ``timeout``.

    Returns the proposal as last seen; the caller checks its status.
    """
    deadline = clock() + timeout
    while True:
        proposal = read()
        if proposal.status not in OPEN_STATUSES or clock() >= deadline:
            return proposal
        time.sleep(max(0.0, min(poll_interval, deadline - clock())))


def _status(value: str) -> str:
    try:
        return str(S(value))
    except ValueError:
        choices = ", ".join(str(member) for member in S)
        raise UsageError(f"unknown status {value!r}; expected one of {choices}") from None
