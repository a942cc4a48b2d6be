"""The store: every SQL statement openseal runs lives in this package.

``open_store()`` returns a :class:`Store` that *has* one repository per table group; callers
never see a table, a statement or SQLAlchemy:

- ``store.definitions``: compiled versions and deployments (name → active version, history);
- ``store.objectives``: objectives and the first run of each;
- ``store.runs``: runs, their event pages, pause / resume / cancel / intervene;
- ``store.leases``: claims, heartbeats, releases and :class:`FencedTx` (invariant 3);
- ``store.inbound_events``: events from outside and the runs waiting for them;
- ``store.agent_requests``: work one run asks of an agent or team;
- ``store.dependencies``: the child runs a run spawned, in groups joined by a rule;
- ``store.proposals``: the exact payloads of governed actions;
- ``store.approvals``: approvals bound to a proposal's hash;
- ``store.actions``: actions and their spend reservations;
- ``store.change_proposals``: governed deployment changes, their reviews and events;
- ``store.idempotency``: the API's remembered responses by ``Idempotency-Key``, per principal;
- ``store.tokens``: principals' bearer tokens (their sha256), roles, scopes, expiry;
- ``store.triggers``: trigger deployments, their status and one firing row per occurrence;
- ``store.artifacts``: content-addressed artefacts, verified by digest on read;
- ``store.health``: readiness and the numbers ``/metrics`` reads at every scrape.

A repository method either opens its own transaction or, when it takes a ``conn``, works in
the caller's (``with store.write() as conn: ...``), so one commit can span repositories.

**The one lock order.** Every writer that touches a run locks the **run row first**
(``store.runs.load(conn, run_id, lock=True)``, or it holds a claim's :class:`FencedTx`),
then what belongs to the run: its actions, approvals, agent requests, proposals and inbound
events; after those, a delivery takes its event name's lock and a spend reservation its
budget's lock. Governance writers take the governance lock
(``store.change_proposals.lock_governance``), then the change proposal's row, then
deployments. Two runs are locked together only when a child run (a delegated request's
work, or a spawned child) ends: the child's row, then its parent's; whatever stops a child
because of its parent (the parent's cancellation, a decline, an expiry, a settled join) does
so after its own commit, never holding the parent. On SQLite ``BEGIN IMMEDIATE`` serialises
writers anyway; on PostgreSQL this order is what keeps two writers from deadlocking.

Inside the package: :mod:`.schema` (tables), :mod:`.migrations` (Alembic), :mod:`.base`
(engine, transactions, dialect hooks), :mod:`.dialects` (SQLite, PostgreSQL, ``open_store``),
:mod:`.fastsql` (hot statements), :mod:`.records` (frozen rows), :mod:`.events` (the one way a
run changes), :mod:`.fenced`, :mod:`.listener` (PostgreSQL ``LISTEN``), :mod:`.errors`, and the
repository modules. Only the names in ``__all__`` are for use outside the package (a test
in ``tests/test_boundaries.py`` holds every module to that).

The package is lazy: a name's module is imported when the name is first used, so a command that
only reads records (``openseal runs list`` on SQLite, :mod:`.sqlite_reads`) imports neither
SQLAlchemy nor the repositories. The imports under ``TYPE_CHECKING`` below are the package's
one list of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runtime.store.db.base import Connection
    from openseal.runtime.store.db.dialects import DATABASE_URL_ENV
    from openseal.runtime.store.db.errors import (
        ArtifactCorrupt,
        DatabaseFailure,
        DriverFailure,
        IdempotencyConflict,
        InvalidStatus,
        NotFound,
        StaleEpoch,
        StaleRevision,
        describe_fault,
        transient,
    )
    from openseal.runtime.store.db.group_commit import BATCH_POINTS, BatchHook, GroupCommit
    from openseal.runtime.store.repos.actions import (
        NOT_DISPATCHED,
        OPEN_OUTCOME,
        EventSink,
        NextMove,
        RowSink,
    )
    from openseal.runtime.store.repos.actions import boundary as action_boundary
    from openseal.runtime.store.repos.agent_requests import (
        OPEN_AGENT_REQUESTS,
        Restart,
        StopChild,
        caller_wakes,
    )
    from openseal.runtime.store.repos.approvals import summary as approval_summary
    from openseal.runtime.store.repos.artifacts import ArtifactStore
    from openseal.runtime.store.repos.carved_budgets import carved_limit
    from openseal.runtime.store.repos.carved_budgets import child_budget as carved_child_budget
    from openseal.runtime.store.repos.carved_budgets import release as release_carved
    from openseal.runtime.store.repos.change_proposals import (
        ChangeProposal,
        Decision,
        ProposalEvent,
        ProposalKind,
        Review,
        Target,
        Verdict,
    )
    from openseal.runtime.store.repos.dependencies import DependencyGroup, NewChild
    from openseal.runtime.store.repos.fenced import COMMIT_POINTS, FencedTx
    from openseal.runtime.store.repos.idempotency import StoredResponse
    from openseal.runtime.store.repos.inbound_events import (
        RECEIVE_POINTS,
        Delivery,
        ReceiveHook,
        correlation_matches,
    )
    from openseal.runtime.store.repos.runs import CancelSweep
    from openseal.runtime.store.repos.tokens import AccessToken
    from openseal.runtime.store.repos.triggers import (
        Occurrence,
        PrepareInputs,
        TriggerDeployment,
    )
    from openseal.runtime.store.sqlite_reads import SQLiteReads, open_reads
    from openseal.runtime.store.store import PostgresStore, SQLiteStore, Store, open_store
    from openseal.runtime.store.tables.listing import ListQuery
    from openseal.runtime.store.tables.reads import Reads
    from openseal.runtime.store.tables.records import (
        Action,
        Activation,
        Activity,
        AgentRequest,
        Approval,
        ArtifactInfo,
        Claim,
        DefinitionVersion,
        Deployment,
        Event,
        InboundEvent,
        NewObjective,
        Objective,
        Proposal,
        Run,
        TriggerFiring,
        Turn,
        UnwrittenRun,
        action_key,
    )
    from openseal.runtime.store.tables.values import DEFAULT_SCOPE, store_key

__getattr__ = lazy_exports(__name__, __file__)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "BATCH_POINTS",
    "COMMIT_POINTS",
    "DATABASE_URL_ENV",
    "DEFAULT_SCOPE",
    "NOT_DISPATCHED",
    "OPEN_AGENT_REQUESTS",
    "OPEN_OUTCOME",
    "RECEIVE_POINTS",
    "AccessToken",
    "Action",
    "Activation",
    "Activity",
    "AgentRequest",
    "Approval",
    "ArtifactCorrupt",
    "ArtifactInfo",
    "ArtifactStore",
    "BatchHook",
    "CancelSweep",
    "ChangeProposal",
    "Claim",
    "Connection",
    "DatabaseFailure",
    "Decision",
    "DefinitionVersion",
    "Delivery",
    "DependencyGroup",
    "Deployment",
    "DriverFailure",
    "Event",
    "EventSink",
    "FencedTx",
    "GroupCommit",
    "IdempotencyConflict",
    "InboundEvent",
    "InvalidStatus",
    "ListQuery",
    "NewChild",
    "NewObjective",
    "NextMove",
    "NotFound",
    "Objective",
    "Occurrence",
    "PostgresStore",
    "PrepareInputs",
    "Proposal",
    "ProposalEvent",
    "ProposalKind",
    "Reads",
    "ReceiveHook",
    "Restart",
    "Review",
    "RowSink",
    "Run",
    "SQLiteReads",
    "SQLiteStore",
    "StaleEpoch",
    "StaleRevision",
    "StopChild",
    "Store",
    "StoredResponse",
    "Target",
    "TriggerDeployment",
    "TriggerFiring",
    "Turn",
    "UnwrittenRun",
    "Verdict",
    "action_boundary",
    "action_key",
    "approval_summary",
    "caller_wakes",
    "carved_child_budget",
    "carved_limit",
    "correlation_matches",
    "describe_fault",
    "open_reads",
    "open_store",
    "release_carved",
    "store_key",
    "transient",
]
