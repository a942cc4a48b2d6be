"""The store: every SQL statement openseal runs lives in this package.

``open_store()`` returns a :class:`Store` that *has* one repository per aggregate; callers
never see a table, a statement or SQLAlchemy:

- ``store.definitions``: compiled versions and deployments (name → active version, history);
- ``store.objectives``: objectives and the first run of each;
- ``store.runs``: runs, their event pages, pause / resume / intervene, a run's part of a cancel;
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
- ``store.archive``: the rows of ended run trees, out of and back into the live store;
- ``store.capacity``: concurrency slots, runs waiting for capacity, operators' settings;
- ``store.rate_limits``: the token buckets every worker shares (model endpoints, skills);
- ``store.quotas``: what each scope used of its quotas, day by day or month by month;
- ``store.health``: readiness and the numbers ``/metrics`` reads at every scrape;
- ``store.recoveries``: recovery mode after a restore, and what reconciling it found;
- ``store.retention``: how long each scope's ended runs stay live, as operators set it.

A repository method either opens its own transaction or, when it takes a ``conn``, works in
the caller's (``with store.write() as conn: ...``), so one commit can span repositories. A
repository never calls another: what a change touches beyond its aggregate is decided above
the store (canceling a run: :mod:`openseal.runtime.engine.cascade`; what a run's end settles:
:mod:`openseal.runtime.engine.endings`).

**The one lock order.** Every writer that touches a run locks the **run row first**
(``store.runs.load(conn, run_id, lock=True)``, or it holds a claim's :class:`FencedTx`),
then what belongs to the run: its actions, approvals, agent requests, proposals and inbound
events; after those, a delivery takes its event name's lock, a spend reservation its
budget's lock, and a claim taking concurrency slots its keys' locks (advisory locks, in
the order of :func:`~openseal.runtime.store.repos.capacity.lock_ids`), then
the rows of its scope's quotas it counts (in key order; a model or tool call's counting too);
a waker of
runs waiting for capacity locks each run before its wait and holds no key's lock. Governance
writers take the governance lock (``store.change_proposals.lock_governance``), then the
change proposal's row, then
deployments. Two runs are locked together only when a child run (a delegated request's
work, or a spawned child) ends: the child's row, then its parent's; whatever stops a child
because of its parent (the parent's cancellation, a decline, an expiry, a settled join) does
so after its own commit, never holding the parent. On SQLite ``BEGIN IMMEDIATE`` serialises
writers anyway; on PostgreSQL this order is what keeps two writers from deadlocking.

Inside the package, three rooms, each importing only those before it: :mod:`.db`
(connections, dialects, statements on the cursor, group commit, the listener and wake-ups),
:mod:`.tables` (schema, migrations, records, values, listing, shared statements) and
:mod:`.repos` (the repositories, :mod:`.repos.events`, the one way a run changes, and
:mod:`.repos.fenced`); :mod:`.store` assembles ``Store`` and ``open_store``. Only the names
listed below are for use outside the package, and the crash tests' hooks on
:mod:`.testing` (a test in ``tests/test_boundaries.py`` holds every module to that).

The package is lazy: a name's module is imported when the name is first used, so a command that
only reads records (``openseal runs list`` on SQLite, :mod:`.sqlite_reads`) imports neither
SQLAlchemy nor the repositories. The imports under ``TYPE_CHECKING`` below are the package's
one list of its names (each ``X as X``, so type checkers see it exported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runtime.statuses import OPEN_OUTCOME as OPEN_OUTCOME
    from openseal.runtime.store.db.base import Connection as Connection
    from openseal.runtime.store.db.dialects import DATABASE_URL_ENV as DATABASE_URL_ENV
    from openseal.runtime.store.db.errors import ArtifactCorrupt as ArtifactCorrupt
    from openseal.runtime.store.db.errors import DatabaseFailure as DatabaseFailure
    from openseal.runtime.store.db.errors import DriverFailure as DriverFailure
    from openseal.runtime.store.db.errors import IdempotencyConflict as IdempotencyConflict
    from openseal.runtime.store.db.errors import InRecoveryMode as InRecoveryMode
    from openseal.runtime.store.db.errors import InvalidStatus as InvalidStatus
    from openseal.runtime.store.db.errors import NotFound as NotFound
    from openseal.runtime.store.db.errors import StaleEpoch as StaleEpoch
    from openseal.runtime.store.db.errors import StaleRevision as StaleRevision
    from openseal.runtime.store.db.errors import describe_fault as describe_fault
    from openseal.runtime.store.db.errors import transient as transient
    from openseal.runtime.store.db.group_commit import GroupCommit as GroupCommit
    from openseal.runtime.store.repos.actions import NOT_DISPATCHED as NOT_DISPATCHED
    from openseal.runtime.store.repos.actions import EventSink as EventSink
    from openseal.runtime.store.repos.actions import NextMove as NextMove
    from openseal.runtime.store.repos.actions import RowSink as RowSink
    from openseal.runtime.store.repos.actions import action_boundary as action_boundary
    from openseal.runtime.store.repos.agent_requests import (
        OPEN_AGENT_REQUESTS as OPEN_AGENT_REQUESTS,
    )
    from openseal.runtime.store.repos.agent_requests import Restart as Restart
    from openseal.runtime.store.repos.agent_requests import StopChild as StopChild
    from openseal.runtime.store.repos.agent_requests import caller_wakes as caller_wakes
    from openseal.runtime.store.repos.approvals import approval_summary as approval_summary
    from openseal.runtime.store.repos.archive import EndedRun as EndedRun
    from openseal.runtime.store.repos.artifacts import ArtifactStore as ArtifactStore
    from openseal.runtime.store.repos.capacity import CallSlot as CallSlot
    from openseal.runtime.store.repos.capacity import Full as Full
    from openseal.runtime.store.repos.capacity import Setting as Setting
    from openseal.runtime.store.repos.capacity import Slot as Slot
    from openseal.runtime.store.repos.capacity import Taking as Taking
    from openseal.runtime.store.repos.carved_budgets import carve as carve
    from openseal.runtime.store.repos.carved_budgets import (
        carved_child_budget as carved_child_budget,
    )
    from openseal.runtime.store.repos.carved_budgets import carved_limit as carved_limit
    from openseal.runtime.store.repos.carved_budgets import release_carved as release_carved
    from openseal.runtime.store.repos.change_proposals import ChangeProposal as ChangeProposal
    from openseal.runtime.store.repos.change_proposals import Decision as Decision
    from openseal.runtime.store.repos.change_proposals import ProposalEvent as ProposalEvent
    from openseal.runtime.store.repos.change_proposals import ProposalKind as ProposalKind
    from openseal.runtime.store.repos.change_proposals import Review as Review
    from openseal.runtime.store.repos.change_proposals import Target as Target
    from openseal.runtime.store.repos.change_proposals import Verdict as Verdict
    from openseal.runtime.store.repos.dependencies import DependencyGroup as DependencyGroup
    from openseal.runtime.store.repos.dependencies import NewChild as NewChild
    from openseal.runtime.store.repos.dependencies import join_outcome as join_outcome
    from openseal.runtime.store.repos.fenced import FencedTx as FencedTx
    from openseal.runtime.store.repos.fenced import RunEnd as RunEnd
    from openseal.runtime.store.repos.idempotency import StoredResponse as StoredResponse
    from openseal.runtime.store.repos.inbound_events import Delivery as Delivery
    from openseal.runtime.store.repos.inbound_events import (
        correlation_matches as correlation_matches,
    )
    from openseal.runtime.store.repos.proposals import ProposalContent as ProposalContent
    from openseal.runtime.store.repos.rate_limits import Bucket as Bucket
    from openseal.runtime.store.repos.rate_limits import Taken as Taken
    from openseal.runtime.store.repos.recoveries import Recovery as Recovery
    from openseal.runtime.store.repos.retention import RetentionSetting as RetentionSetting
    from openseal.runtime.store.repos.runs import CancelSweep as CancelSweep
    from openseal.runtime.store.repos.tokens import AccessToken as AccessToken
    from openseal.runtime.store.repos.triggers import Occurrence as Occurrence
    from openseal.runtime.store.repos.triggers import StartObjective as StartObjective
    from openseal.runtime.store.repos.triggers import TriggerDeployment as TriggerDeployment
    from openseal.runtime.store.sqlite_reads import SQLiteReads as SQLiteReads
    from openseal.runtime.store.sqlite_reads import open_reads as open_reads
    from openseal.runtime.store.store import PostgresStore as PostgresStore
    from openseal.runtime.store.store import SQLiteStore as SQLiteStore
    from openseal.runtime.store.store import Store as Store
    from openseal.runtime.store.store import open_store as open_store
    from openseal.runtime.store.store import plan_upgrade as plan_upgrade
    from openseal.runtime.store.tables.listing import ListQuery as ListQuery
    from openseal.runtime.store.tables.migrations.plan import (
        PlannedMigration as PlannedMigration,
    )
    from openseal.runtime.store.tables.migrations.plan import UpgradePlan as UpgradePlan
    from openseal.runtime.store.tables.reads import Reads as Reads
    from openseal.runtime.store.tables.records import Action as Action
    from openseal.runtime.store.tables.records import Activation as Activation
    from openseal.runtime.store.tables.records import Activity as Activity
    from openseal.runtime.store.tables.records import AgentRequest as AgentRequest
    from openseal.runtime.store.tables.records import Approval as Approval
    from openseal.runtime.store.tables.records import ArtifactInfo as ArtifactInfo
    from openseal.runtime.store.tables.records import Claim as Claim
    from openseal.runtime.store.tables.records import DefinitionVersion as DefinitionVersion
    from openseal.runtime.store.tables.records import Deployment as Deployment
    from openseal.runtime.store.tables.records import Event as Event
    from openseal.runtime.store.tables.records import InboundEvent as InboundEvent
    from openseal.runtime.store.tables.records import NewObjective as NewObjective
    from openseal.runtime.store.tables.records import Objective as Objective
    from openseal.runtime.store.tables.records import Proposal as Proposal
    from openseal.runtime.store.tables.records import Run as Run
    from openseal.runtime.store.tables.records import TriggerFiring as TriggerFiring
    from openseal.runtime.store.tables.records import Turn as Turn
    from openseal.runtime.store.tables.records import UnwrittenRun as UnwrittenRun
    from openseal.runtime.store.tables.records import action_key as action_key
    from openseal.runtime.store.tables.statements import request_hash as request_hash
    from openseal.runtime.store.tables.values import DEFAULT_SCOPE as DEFAULT_SCOPE
    from openseal.runtime.store.tables.values import store_key as store_key

__getattr__ = lazy_exports(__name__, __file__)
