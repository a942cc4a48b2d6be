"""The database schema of the persistent runtime: one MetaData, SQLAlchemy Core tables.

Portable choices, kept consistent everywhere:

* ids are 32-character time-sortable hex strings (:func:`openseal.runtime.clock.new_id`);
* timestamps are aware UTC datetimes in Python, stored as epoch seconds in a double column
  (:class:`UtcTimestamp`) so comparisons in claim queries behave the same on both dialects;
* structured values are ``sa.JSON``.

The migrations under ``openseal/runtime/migrations/versions`` must produce exactly this schema;
a test compares the two.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from openseal.runtime.store.tables.values import DEFAULT_SCOPE, epoch_seconds, from_epoch_seconds


class UtcTimestamp(sa.types.TypeDecorator[datetime]):
    """An aware UTC datetime stored as epoch seconds (double precision)."""

    impl = sa.Float(precision=53)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> float | None:
        return epoch_seconds(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return from_epoch_seconds(value)

    # The processors SQLAlchemy calls are the two functions themselves rather than
    # TypeDecorator's wrappers, which add two calls to each of the dozens of timestamps a turn
    # writes and reads (one to ``process_*`` with the dialect, one to the double's processor).
    # Nothing is lost: a double's bind processor (``float()`` on SQLite) returns what
    # ``epoch_seconds`` returns, a float or None, unchanged, and its result processor (none, or
    # ``float()`` for a numeric column) does nothing ``from_epoch_seconds`` does not.

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], float | None]:
        return epoch_seconds

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], datetime | None]:
        return from_epoch_seconds


ID = sa.String(32)
NAME = sa.String(200)
DIGEST = sa.String(64)
STATUS = sa.String(32)
SCOPE = sa.String(100)
#: the runs an archive may take, as ``ix_runs_ended_roots`` and its query spell them (literal
#: statuses: a partial index is used only for a query whose terms match it as written)
ENDED_ROOTS = "parent_run_id IS NULL AND status IN ('completed', 'failed', 'canceled')"
#: the runs ``ix_runs_claim_timer`` and ``ix_runs_event_wait`` hold: a comparison of the
#: column (``wake_at <= :now``, ``wait_name = :name``) implies it on both backends
HAS_TIMER = "wake_at IS NOT NULL"
WAITS_FOR_EVENT = "wait_name IS NOT NULL"

metadata = sa.MetaData()


def partial_index(name: str, *columns: str, where: str) -> sa.Index:
    """An index of the rows ``where`` matches (SQL, as both backends spell it)."""
    return sa.Index(name, *columns, sqlite_where=sa.text(where), postgresql_where=sa.text(where))


definition_versions = sa.Table(
    "definition_versions",
    metadata,
    sa.Column("digest", DIGEST, primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("name", NAME, nullable=False),
    sa.Column("document", sa.Text, nullable=False),  # canonical JSON, byte-exact
    sa.Column("created_at", UtcTimestamp, nullable=False),
)

deployments = sa.Table(
    "deployments",
    metadata,
    sa.Column("name", NAME, primary_key=True),
    sa.Column("active_digest", DIGEST, sa.ForeignKey("definition_versions.digest"), nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
)

deployment_activations = sa.Table(
    "deployment_activations",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("name", NAME, nullable=False, index=True),
    sa.Column("digest", DIGEST, sa.ForeignKey("definition_versions.digest"), nullable=False),
    sa.Column("previous_digest", DIGEST, nullable=True),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("change_proposal_id", ID, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("at", UtcTimestamp, nullable=False),
)

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("name", NAME, nullable=False, unique=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
)

objectives = sa.Table(
    "objectives",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("project_id", ID, sa.ForeignKey("projects.id"), nullable=False),
    sa.Column("workflow_name", NAME, nullable=False),
    sa.Column(
        "workflow_digest", DIGEST, sa.ForeignKey("definition_versions.digest"), nullable=False
    ),
    sa.Column("inputs", sa.JSON, nullable=False),
    sa.Column("status", STATUS, nullable=False),
    sa.Column("request_key", sa.String(200), nullable=True),
    sa.Column("request_hash", DIGEST, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    # who asked for it (NULL: created before objectives recorded it), and where it lives
    sa.Column("created_by", sa.String(200), nullable=True),
    sa.Column("scope", SCOPE, nullable=False, server_default=DEFAULT_SCOPE),
    # what it is for (``--goal``), the agent or team that owns it (the workflow's owner), its
    # runs' claim order (higher first), the retry policy of the version it started on, and
    # how many runs it started
    sa.Column("goal", sa.Text, nullable=True),
    sa.Column("owner", NAME, nullable=True),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("retry", sa.JSON, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="1"),
    # a request key is the asking principal's: another principal's equal key is another key
    sa.Index("uq_objectives_request_key", "created_by", "request_key", unique=True),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("objective_id", ID, sa.ForeignKey("objectives.id"), nullable=False, index=True),
    sa.Column("parent_run_id", ID, sa.ForeignKey("runs.id"), nullable=True),
    # Pinned at creation (invariant 12): a run executes this version to its end.
    sa.Column(
        "workflow_digest", DIGEST, sa.ForeignKey("definition_versions.digest"), nullable=False
    ),
    sa.Column("status", STATUS, nullable=False),
    sa.Column("current_state", sa.String(200), nullable=True),
    sa.Column("waiting", sa.JSON, nullable=True),
    # The event name of an undelivered event wait (ix_runs_event_wait finds the waiters).
    sa.Column("wait_name", sa.String(200), nullable=True),
    sa.Column("paused_from_status", STATUS, nullable=True),
    sa.Column("context", sa.JSON, nullable=False),
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("lease_owner", sa.String(200), nullable=True),
    sa.Column("lease_expires_at", UtcTimestamp, nullable=True),
    sa.Column("wake_at", UtcTimestamp, nullable=True),
    sa.Column("last_event_seq", sa.Integer, nullable=False),
    sa.Column("stale_writes", sa.Integer, nullable=False),
    sa.Column("budget_used", sa.JSON, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    # its objective's scope (a child run takes its parent's); everything of a run is in it
    sa.Column("scope", SCOPE, nullable=False, server_default=DEFAULT_SCOPE),
    # its objective's priority (claims take higher first) and which of its objective's runs
    # it is (1: the first; a retry counts on)
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    sa.Column("attempt", sa.Integer, nullable=False, server_default="1"),
    # Every index is written by every write of the columns it holds: a run's turns write
    # status, lease and updated_at, so the indexes below are the ones something reads, and
    # those for what few runs have (a timer, an event wait) hold only those runs.
    # queued runs in claim order: higher priority first, then least recently changed; also
    # the running runs, whose leases a claim and the next expiry read (a worker holds few)
    sa.Index("ix_runs_claim_queued", "status", "priority", "updated_at"),
    # runs with a timer, by when it is due: the claim's waiting runs to wake
    partial_index("ix_runs_claim_timer", "status", "wake_at", where=HAS_TIMER),
    # runs waiting for an event, by its name: the waiters an inbound event may wake
    partial_index("ix_runs_event_wait", "wait_name", where=WAITS_FOR_EVENT),
    # a scope's runs by status: its ready queue, counted at the door, and its runs
    sa.Index("ix_runs_scope_status", "scope", "status"),
    # the statuses of child runs only (runs started by another's spawn or agent request):
    # a worker's look for children left running reads the few not ended, not every waiting
    # run (openseal.runtime.engine.cascade)
    partial_index("ix_runs_children", "status", where="parent_run_id IS NOT NULL"),
    # ended root runs in the order an archive takes them (oldest end first): its look for
    # candidates reads them, not every run (openseal.runtime.store.repos.archive)
    partial_index("ix_runs_ended_roots", "updated_at", "id", where=ENDED_ROOTS),
)

turns = sa.Table(
    "turns",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("state", sa.String(200), nullable=False),
    sa.Column("phase", sa.String(64), nullable=False),
    sa.Column("status", STATUS, nullable=False),
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("worker", sa.String(200), nullable=False),
    sa.Column("started_at", UtcTimestamp, nullable=False),
    sa.Column("finished_at", UtcTimestamp, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.UniqueConstraint("run_id", "seq", name="uq_turns_run_seq"),
)

activities = sa.Table(
    "activities",
    metadata,
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("activity_id", sa.String(400), primary_key=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("input_hash", DIGEST, nullable=False),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("type", sa.String(100), nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("at", UtcTimestamp, nullable=False),
    # Only ever read by its key: on SQLite the rows live in the key's B-tree (migration 0005).
    sqlite_with_rowid=False,
)

inbound_events = sa.Table(
    "inbound_events",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("correlation", sa.JSON, nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("received_at", UtcTimestamp, nullable=False),
    sa.Column("consumed_by_run_id", ID, sa.ForeignKey("runs.id"), nullable=True),
    sa.Column("consumed_at", UtcTimestamp, nullable=True),
    # the sender's event id or Idempotency-Key: a redelivery finds the first delivery
    sa.Column("delivery_key", sa.String(200), nullable=True),
    # the scopes whose runs it may wake (its sender's; NULL: every scope)
    sa.Column("scopes", sa.JSON, nullable=True),
    sa.Index("ix_inbound_events_name_consumed", "name", "consumed_at"),
    sa.Index("uq_inbound_events_delivery_key", "name", "delivery_key", unique=True),
)

# -- triggers ---------------------------------------------------------------------------

#: What operators set on a trigger deployment (no row: ``active``). ``retired`` holds for the
#: version it was set on (``digest``); a newly activated version is active again from
#: ``since`` (when it was activated), so a retired period is never caught up.
trigger_states = sa.Table(
    "trigger_states",
    metadata,
    sa.Column("name", NAME, primary_key=True),
    sa.Column("status", STATUS, nullable=False),
    sa.Column("digest", DIGEST, nullable=False),
    sa.Column("since", UtcTimestamp, nullable=True),
    sa.Column("changed_by", sa.String(200), nullable=False),
    sa.Column("changed_at", UtcTimestamp, nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("revision", sa.Integer, nullable=False),
)

#: One row per occurrence a trigger handled, unique on (trigger, occurrence): a schedule's
#: ``at:<time>`` or an inbound event's ``event:<id>``. A ``started`` row commits with the
#: objective it created, so each occurrence starts at most one, whichever worker got there.
trigger_firings = sa.Table(
    "trigger_firings",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("trigger_name", NAME, nullable=False),
    sa.Column("trigger_digest", DIGEST, nullable=False),
    sa.Column("occurrence_key", sa.String(240), nullable=False),
    sa.Column("source", sa.String(16), nullable=False),  # schedule | event
    sa.Column("occurred_at", UtcTimestamp, nullable=False),
    sa.Column("inbound_event_id", ID, sa.ForeignKey("inbound_events.id"), nullable=True),
    # started | queued | skipped | missed | failed
    sa.Column("outcome", STATUS, nullable=False),
    sa.Column("objective_id", ID, sa.ForeignKey("objectives.id"), nullable=True),
    sa.Column("inputs", sa.JSON, nullable=True),
    sa.Column("detail", sa.Text, nullable=True),
    sa.Column("recorded_at", UtcTimestamp, nullable=False),
    sa.Column("started_at", UtcTimestamp, nullable=True),
    sa.Index("uq_trigger_firings_occurrence", "trigger_name", "occurrence_key", unique=True),
    sa.Index("ix_trigger_firings_trigger_at", "trigger_name", "occurred_at"),
)

agent_requests = sa.Table(
    "agent_requests",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("caller_run_id", ID, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("callee", NAME, nullable=False),
    sa.Column("child_run_id", ID, sa.ForeignKey("runs.id"), nullable=True, index=True),
    sa.Column("status", STATUS, nullable=False),
    sa.Column("request", sa.JSON, nullable=False),
    sa.Column("response", sa.JSON, nullable=True),
    sa.Column("clarification", sa.JSON, nullable=True),
    sa.Column("review", sa.JSON, nullable=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    # when an open request expires (the caller's wake-up time while it waits); NULL: never
    sa.Column("deadline", UtcTimestamp, nullable=True),
)

# A run's dependency group: the child runs one visit of a ``spawn`` state started, and the
# rule that settles it (``needed`` of them must complete).
dependency_groups = sa.Table(
    "dependency_groups",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("parent_run_id", ID, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("state", sa.String(200), nullable=False),
    sa.Column("visit", sa.Integer, nullable=False),
    sa.Column("join_rule", sa.String(16), nullable=False),
    sa.Column("needed", sa.Integer, nullable=False),
    sa.Column("detach", sa.Boolean, nullable=False),
    # open → done | failed | expired | canceled
    sa.Column("status", STATUS, nullable=False),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("deadline", UtcTimestamp, nullable=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("settled_at", UtcTimestamp, nullable=True),
    sa.UniqueConstraint("parent_run_id", "state", "visit", name="uq_dependency_groups_visit"),
)

# One child run of a dependency group; ``status`` is how it ended (NULL while it runs).
dependency_members = sa.Table(
    "dependency_members",
    metadata,
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), primary_key=True),
    sa.Column("group_id", ID, sa.ForeignKey("dependency_groups.id"), nullable=False, index=True),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("workflow", NAME, nullable=False),
    sa.Column("status", STATUS, nullable=True),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("digest", DIGEST, primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("media_type", sa.String(200), nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    # The bytes, where the artefact lives in the database (all on PostgreSQL: every host reads
    # them from here; small ones on SQLite); NULL where it is a file (large ones on SQLite, and
    # rows from before), see openseal.runtime.store.repos.artifacts.
    sa.Column("content", sa.LargeBinary, nullable=True),
)

# --------------------------------------------------------------------------- governance
# Change proposals (openseal.runtime.governance.flow): a deployable change with its semantic diff,
# the active digests it was diffed against (``base``) and the governance policy that rules it.
# Reviews and events are append-only; ``round`` counts refreshes that changed the diff, and
# only reviews of the current round count.

change_proposals = sa.Table(
    "change_proposals",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),  # deploy | rollback
    sa.Column("status", STATUS, nullable=False, index=True),
    sa.Column("author", sa.String(200), nullable=False),
    sa.Column("message", sa.Text, nullable=True),
    # sha256 of the canonical target list: filing the same change twice finds the open one.
    sa.Column("content_key", DIGEST, nullable=False, index=True),
    sa.Column("targets", sa.JSON, nullable=False),
    sa.Column("base", sa.JSON, nullable=False),
    sa.Column("policy", sa.JSON, nullable=False),
    sa.Column("diff", sa.JSON, nullable=False),
    sa.Column("risk_widening", sa.Boolean, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("decision", sa.JSON, nullable=True),
    sa.Column("superseded_by", ID, nullable=True),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("last_event_seq", sa.Integer, nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    sa.Column("activated_at", UtcTimestamp, nullable=True),
    sa.Column("scope", SCOPE, nullable=False, server_default=DEFAULT_SCOPE),
)

change_proposal_reviews = sa.Table(
    "change_proposal_reviews",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("proposal_id", ID, sa.ForeignKey("change_proposals.id"), nullable=False, index=True),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("reviewer", sa.String(200), nullable=False),
    sa.Column("verdict", sa.String(32), nullable=False),  # approve | request_changes
    sa.Column("comment", sa.Text, nullable=True),
    sa.Column("at", UtcTimestamp, nullable=False),
)

change_proposal_events = sa.Table(
    "change_proposal_events",
    metadata,
    sa.Column("proposal_id", ID, sa.ForeignKey("change_proposals.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("type", sa.String(100), nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("at", UtcTimestamp, nullable=False),
)

# --------------------------------------------------------------------------- governed actions
# Proposals (immutable: identity is the sha256 of their canonical JSON, also stored as an
# artefact), approvals bound to a proposal hash, actions keyed ``<run>:<proposal hash>``, and
# spend reservations against workflow and owner budgets (openseal.runtime.actions.proposals,
# approvals, actions).

proposals = sa.Table(
    "proposals",
    metadata,
    sa.Column("id", ID, primary_key=True),
    # a run's proposals are found by uq_proposals_run_hash, which begins with run_id
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("name", NAME, nullable=False),
    sa.Column("state", NAME, nullable=False),
    sa.Column("hash", DIGEST, nullable=False, index=True),
    sa.Column("artifact_digest", DIGEST, nullable=False),
    sa.Column("skill", NAME, nullable=False),
    sa.Column("skill_digest", sa.String(80), nullable=False),
    sa.Column("actor", sa.String(200), nullable=False),
    sa.Column("document", sa.JSON, nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.UniqueConstraint("run_id", "hash", name="uq_proposals_run_hash"),
)

approvals = sa.Table(
    "approvals",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("proposal_id", ID, sa.ForeignKey("proposals.id"), nullable=False),
    sa.Column("proposal_hash", DIGEST, nullable=False, index=True),
    sa.Column("proposal_name", NAME, nullable=False),
    sa.Column("state", NAME, nullable=False),
    sa.Column("approvers", sa.JSON, nullable=False),
    sa.Column("scope", sa.String(200), nullable=False),
    sa.Column("status", STATUS, nullable=False, index=True),
    sa.Column("on_timeout", sa.String(16), nullable=False),
    sa.Column("expires_at", UtcTimestamp, nullable=True),
    sa.Column("decision", sa.String(32), nullable=True),
    sa.Column("decided_by", sa.String(200), nullable=True),
    sa.Column("decided_hash", DIGEST, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("decided_at", UtcTimestamp, nullable=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
)

actions = sa.Table(
    "actions",
    metadata,
    sa.Column("id", ID, primary_key=True),
    # ``<run id>:<proposal hash>``: stable across attempts, sent as the idempotency key.
    sa.Column("key", sa.String(200), nullable=False, unique=True),
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), nullable=False, index=True),
    sa.Column("proposal_id", ID, sa.ForeignKey("proposals.id"), nullable=False),
    sa.Column("proposal_hash", DIGEST, nullable=False),
    sa.Column("proposal_name", NAME, nullable=False),
    sa.Column("skill", NAME, nullable=False),
    sa.Column("state", NAME, nullable=True),
    sa.Column("status", STATUS, nullable=False, index=True),
    sa.Column("approval_id", ID, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("admitted_at", UtcTimestamp, nullable=True),
    sa.Column("dispatched_at", UtcTimestamp, nullable=True),
    sa.Column("finished_at", UtcTimestamp, nullable=True),
    sa.Column("result", sa.JSON, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("history", sa.JSON, nullable=False),
    sa.Column("resolution", sa.JSON, nullable=True),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
)

spend_reservations = sa.Table(
    "spend_reservations",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("action_id", ID, sa.ForeignKey("actions.id"), nullable=False, index=True),
    sa.Column("run_id", ID, sa.ForeignKey("runs.id"), nullable=False),
    # ``run:<id>`` for a workflow budget, the owner reference (``team.procurement``) for its.
    sa.Column("scope", sa.String(200), nullable=False, index=True),
    sa.Column("amount", sa.Float(precision=53), nullable=False),
    sa.Column("currency", sa.String(8), nullable=False),
    sa.Column("status", STATUS, nullable=False),  # reserved | committed | released
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
)

# -- flow control ----------------------------------------------------------------------

#: One row per shared rate limit (``model:<profile>``, ``model:<profile>:tokens``,
#: ``skill:<name>``), read and moved in one short transaction by every worker that calls the
#: endpoint. ``due`` is the limit's virtual clock (epoch seconds): each unit taken moves it one
#: interval on, and a unit may go once ``due`` is no more than ``burst`` intervals ahead of
#: now. An endpoint's ``429`` sets ``held_until`` (epoch seconds): nothing goes before it.
rate_limits = sa.Table(
    "rate_limits",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("due", sa.Float(precision=53), nullable=False),
    sa.Column("held_until", sa.Float(precision=53), nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
)

# -- the HTTP API ----------------------------------------------------------------------

#: Responses to creates made with an ``Idempotency-Key``: the same key and body replay the
#: stored response; the same key with another body is refused (``idempotency_conflict``).
idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    # a key is its principal's: another principal's equal key is another key
    sa.Column("principal", sa.String(200), primary_key=True),
    sa.Column("key", sa.String(200), primary_key=True),
    # ``POST /api/v1/objectives``: a key belongs to one operation
    sa.Column("operation", sa.String(200), nullable=False),
    sa.Column("request_hash", DIGEST, nullable=False),
    sa.Column("status_code", sa.Integer, nullable=False),
    sa.Column("response", sa.JSON, nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
)

#: Bearer tokens of principals (``user:alice``, ``service:ci``): only the sha256 of a token is
#: kept, with the roles and scopes it grants; a token stops working when it expires or is
#: revoked (the row stays, for the record).
access_tokens = sa.Table(
    "access_tokens",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("principal", sa.String(200), nullable=False, index=True),
    sa.Column("token_sha256", DIGEST, nullable=False, unique=True),
    sa.Column("roles", sa.JSON, nullable=False),
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("note", sa.Text, nullable=True),
    sa.Column("created_by", sa.String(200), nullable=False),
    sa.Column("created_at", UtcTimestamp, nullable=False),
    sa.Column("expires_at", UtcTimestamp, nullable=True),
    sa.Column("revoked_at", UtcTimestamp, nullable=True),
    sa.Column("revoked_by", sa.String(200), nullable=True),
)

#: Recovery mode of a store restored from a backup (invariant 18): while a row has no
#: ``finished_at``, no run is claimed and no action sent. ``report`` is what the last
#: reconciliation pass found, action by action.
recoveries = sa.Table(
    "recoveries",
    metadata,
    sa.Column("id", ID, primary_key=True),
    sa.Column("reason", sa.String(32), nullable=False),
    sa.Column("source", sa.Text, nullable=True),
    sa.Column("backup_at", UtcTimestamp, nullable=True),
    sa.Column("started_by", sa.String(200), nullable=False),
    sa.Column("started_at", UtcTimestamp, nullable=False),
    sa.Column("report", sa.JSON, nullable=True),
    sa.Column("checked_at", UtcTimestamp, nullable=True),
    sa.Column("finished_by", sa.String(200), nullable=True),
    sa.Column("finished_at", UtcTimestamp, nullable=True),
)

#: Operator settings of flow control, by limit key (``scope:<name>``, ``agent:<name>``,
#: ``team:<name>``, ``quota:<scope>:<measure>:<period>``): a scope's concurrency cap and
#: ready-queue depth, whether an agent or a team is paused, a scope's quota and what happens
#: to work over it. Definition-declared caps live in the definitions; only what has no
#: definition is here.
capacity_settings = sa.Table(
    "capacity_settings",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("max_slots", sa.Integer, nullable=True),
    sa.Column("paused", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("updated_by", sa.String(200), nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
    sa.Column("quota", sa.BigInteger, nullable=True),
    sa.Column("when_over", sa.String(16), nullable=True),
    sa.Column("max_queued", sa.Integer, nullable=True),
)

#: What a scope used of one quota (``quota:<scope>:<measure>:<period>``) in one window (a
#: day ``2026-12-07``, a month ``2026-12``, by the store's clock in UTC), added to in the
#: transactions that consume it; a new window starts from nothing.
quota_usage = sa.Table(
    "quota_usage",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("window", sa.String(16), primary_key=True),
    sa.Column("used", sa.BigInteger, nullable=False),
)

#: One row per limit key a concurrency cap has been checked for, recording its cap. Takers of
#: a key count one after another under the key's lock (invariant 20): an advisory lock on
#: PostgreSQL (``repos/capacity.py``), not this row.
capacity_limits = sa.Table(
    "capacity_limits",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    # the cap its last taker counted against (what a waker counts free slots against)
    sa.Column("max_slots", sa.Integer, nullable=True),
)

#: Concurrency slots: run ``run_id`` holds a slot of ``key`` while it is ``running`` at
#: ``epoch`` (the claim that took it). The slot is given back by whatever ends that claim —
#: the status leaving ``running`` or a takeover raising the epoch — in that transaction; a row
#: left behind counts for nothing and is removed by the next taker of the key. No foreign key
#: to ``runs``: an archived run's row may leave one behind, and it counts for nothing either.
capacity_slots = sa.Table(
    "capacity_slots",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("run_id", ID, primary_key=True),
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("taken_at", UtcTimestamp, nullable=False),
    sa.Index("ix_capacity_slots_run", "run_id"),
)

#: Calls in flight to a skill's destination (``skill:<name>`` keys). An action's call (``epoch``
#: NULL) took its slot in the transaction marking it ``dispatched``, and the row counts while
#: the action's outcome is open (``dispatched``, ``unknown``, ``needs_attention``), so the
#: transaction that settles the action gives the slot back with no statement of its own. A
#: read a turn calls (``epoch`` set; ``action_id`` is then the call's own id) counts while its
#: claim holds the run, and the transaction recording its result removes it. A row that no
#: longer counts is removed by the next taker of its key. No foreign keys, as above.
capacity_calls = sa.Table(
    "capacity_calls",
    metadata,
    sa.Column("key", sa.String(300), primary_key=True),
    sa.Column("action_id", ID, primary_key=True),
    sa.Column("run_id", ID, nullable=False),
    sa.Column("taken_at", UtcTimestamp, nullable=False),
    sa.Column("epoch", sa.Integer, nullable=True),
)

#: Runs waiting for capacity (status ``waiting_for_capacity``), by the limit they wait for,
#: woken in priority order when it frees.
capacity_waits = sa.Table(
    "capacity_waits",
    metadata,
    sa.Column("run_id", ID, primary_key=True),
    sa.Column("key", sa.String(300), nullable=False),
    sa.Column("priority", sa.Integer, nullable=False),
    sa.Column("since", UtcTimestamp, nullable=False),
    sa.Index("ix_capacity_waits_key", "key", "priority", "since"),
)

#: Operator settings of retention, by scope: how long the scope's ended runs stay in the live
#: store before an archive may take them (seconds). A workflow's own period is in its
#: definition; the longest that applies wins (openseal.runtime.lifecycle.retention).
retention_settings = sa.Table(
    "retention_settings",
    metadata,
    sa.Column("scope", SCOPE, primary_key=True),
    sa.Column("keep_ended_runs", sa.Float(precision=53), nullable=False),
    sa.Column("updated_by", sa.String(200), nullable=False),
    sa.Column("updated_at", UtcTimestamp, nullable=False),
)
