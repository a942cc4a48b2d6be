"""The store: one repository per aggregate over a dialect's database, and ``open_store()``.

Example::

    store = open_store()
    store.definitions.put(digest, "workflow", "procure_laptops", document)
    store.definitions.activate("procure_laptops", digest, actor="user:local")
    created = store.objectives.create("acme", "procure_laptops", inputs, actor="user:local")
    claim = store.leases.claim("worker-1")
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.dialects import (
    DATABASE_URL_ENV,
    PostgresDatabase,
    SQLiteDatabase,
    create_engine,
    create_listen_engine,
    where,
)
from openseal.runtime.store.db.sqlite_connections import BUSY_TIMEOUT_MS, SYNCHRONOUS, damaged
from openseal.runtime.store.repos.actions import Actions
from openseal.runtime.store.repos.agent_requests import AgentRequests
from openseal.runtime.store.repos.approvals import Approvals
from openseal.runtime.store.repos.archive import Archive
from openseal.runtime.store.repos.artifacts import ArtifactStore
from openseal.runtime.store.repos.capacity import Capacity
from openseal.runtime.store.repos.change_proposals import ChangeProposals
from openseal.runtime.store.repos.definitions import Definitions
from openseal.runtime.store.repos.dependencies import Dependencies
from openseal.runtime.store.repos.health import Health
from openseal.runtime.store.repos.idempotency import Idempotency
from openseal.runtime.store.repos.inbound_events import InboundEvents
from openseal.runtime.store.repos.leases import Leases
from openseal.runtime.store.repos.objectives import Objectives
from openseal.runtime.store.repos.proposals import Proposals
from openseal.runtime.store.repos.quotas import Quotas
from openseal.runtime.store.repos.rate_limits import RateLimits
from openseal.runtime.store.repos.recoveries import Recoveries
from openseal.runtime.store.repos.retention import RetentionSettings
from openseal.runtime.store.repos.runs import Runs
from openseal.runtime.store.repos.tokens import Tokens
from openseal.runtime.store.repos.triggers import Triggers
from openseal.runtime.store.tables import migrations, schema
from openseal.runtime.store.tables.migrations.plan import UpgradePlan, plan
from openseal.runtime.store.tables.versions import Versions

#: the kinds whose ids may be given by a unique prefix, and the column that holds each
ID_COLUMNS = {
    "run": schema.runs.c.id,
    "objective": schema.objectives.c.id,
    "approval": schema.approvals.c.id,
    "action": schema.actions.c.id,
    "token": schema.access_tokens.c.id,
    "agent request": schema.agent_requests.c.id,
    "change proposal": schema.change_proposals.c.id,
}


class Store(StoreBase):
    """The store: transactions and dialect hooks (:class:`StoreBase`) plus one repository per
    aggregate. Its dialects (:class:`SQLiteStore`, :class:`PostgresStore`) only add hooks.
    See :func:`open_store`."""

    def __init__(self, engine: sa.Engine, **options: Any) -> None:
        super().__init__(engine, **options)
        versions = Versions()  # parsed once per store, for both
        self.definitions = Definitions(self, versions)
        self.objectives = Objectives(self, versions)
        self.runs = Runs(self)
        self.leases = Leases(self)
        self.inbound_events = InboundEvents(self)
        self.agent_requests = AgentRequests(self)
        self.dependencies = Dependencies(self)
        self.proposals = Proposals(self)
        self.approvals = Approvals(self)
        self.actions = Actions(self)
        self.change_proposals = ChangeProposals(self)
        self.idempotency = Idempotency(self)
        self.tokens = Tokens(self)
        self.triggers = Triggers(self)
        self.health = Health(self)
        self.archive = Archive(self)
        self.recoveries = Recoveries(self)
        self.retention = RetentionSettings(self)
        self.capacity = Capacity(self)
        self.rate_limits = RateLimits(self)
        self.quotas = Quotas(self)
        self.artifacts = ArtifactStore(self.home / "artifacts", self)

    def ids_starting_with(self, kind: str, prefix: str, *, limit: int) -> list[str]:
        """Up to ``limit`` ids of ``kind`` (run, objective, approval, action) that start with
        ``prefix``, in order: what completing a short id needs."""
        column = ID_COLUMNS[kind]
        with self.read() as conn:
            found = conn.execute(
                sa.select(column).where(column.startswith(prefix)).order_by(column).limit(limit)
            ).scalars()
            return [str(value) for value in found]

    def ids_ending_with(self, kind: str, suffix: str, *, limit: int) -> list[str]:
        """Up to ``limit`` ids of ``kind`` that end with ``suffix``, in order: what finding an
        id by its handle needs (openseal.runtime.id_prefix). The id index is scanned, not
        searched: a handle is the random end of the id."""
        column = ID_COLUMNS[kind]
        with self.read() as conn:
            found = conn.execute(
                sa.select(column).where(column.endswith(suffix)).order_by(column).limit(limit)
            ).scalars()
            return [str(value) for value in found]

    def schema_revision(self) -> str | None:
        return migrations.current_revision(self.engine)


class SQLiteStore(Store, SQLiteDatabase):
    """The store on SQLite."""


class PostgresStore(Store, PostgresDatabase):
    """The store on PostgreSQL."""


def open_store(
    url: str | None = None,
    *,
    home: Path = Path(".openseal"),
    auto_migrate: bool | None = None,
    synchronous: str = SYNCHRONOUS,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    connect_args: dict[str, Any] | None = None,
    read_only: bool = False,
    listen_url: str | None = None,
) -> Store:
    """Open the store, migrating it when allowed.

    ``url`` (or ``OPENSEAL_DATABASE_URL``) selects PostgreSQL; otherwise SQLite at
    ``home/openseal.db``. The embedded SQLite default migrates itself unless
    ``auto_migrate=False``; PostgreSQL is refused when not at the head revision unless
    ``auto_migrate=True`` (run ``openseal db upgrade``). A database migrated by a newer openseal
    is always refused. ``read_only`` opens SQLite read-only, for commands that only read: it
    never writes the file (no migration, no checkpoint) and is refused when it is damaged.
    ``listen_url`` (or ``OPENSEAL_DATABASE_LISTEN_URL`` with ``OPENSEAL_DATABASE_URL``) names
    the PostgreSQL server the wake-ups' ``LISTEN`` session connects to, when ``url`` is a
    pooler in transaction mode.
    """
    options: dict[str, Any] = {
        "home": home, "synchronous": synchronous, "busy_timeout_ms": busy_timeout_ms,
        "connect_args": connect_args,
    }  # fmt: skip
    engine = create_engine(url, read_only=read_only, **options)
    try:
        listen = create_listen_engine(url, listen_url, engine, **options)
    except StoreError:
        engine.dispose()
        raise
    store: Store
    if engine.dialect.name == "sqlite":
        store = SQLiteStore(engine, home=home)
        migrate = auto_migrate is not False and not read_only
    else:
        store = PostgresStore(engine, home=home, listen_engine=listen)
        migrate = auto_migrate is True
    try:
        _ensure_schema(store, migrate)
    except BaseException:
        store.close()
        raise
    return store


def _ensure_schema(store: Store, migrate: bool) -> None:
    try:
        if migrations.database_revision(store.engine) == migrations.packaged_head():
            return  # the common case: one query, and Alembic is never imported
        current = migrations.current_revision(store.engine)
        migrations.check_not_newer(current)
        head = migrations.head_revision()
        if current == head:
            return
        if not migrate:
            raise StoreError(
                f"database schema is at {current or 'nothing'}, this openseal needs {head}; "
                "run `openseal db upgrade`",
                code="schema_outdated",
            )
        migrations.upgrade(store.engine)
    except sa.exc.DBAPIError as exc:
        raise _cannot_open(store.engine, exc) from None


def _cannot_open(engine: sa.Engine, exc: sa.exc.DBAPIError) -> StoreError:
    """Unreachable, not a database (a corrupt or foreign file), read-only, locked: one line
    naming the database, never a traceback."""
    broken = damaged(exc.orig, Path(where(engine))) if exc.orig else None
    if broken is not None:
        return broken
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return StoreError(f"cannot open database {where(engine)}: {reason}", code="unavailable")


def plan_upgrade(url: str | None = None, *, home: Path = Path(".openseal")) -> UpgradePlan:
    """What ``openseal db upgrade`` would apply to the database ``url`` (or
    ``OPENSEAL_DATABASE_URL``, or SQLite under ``home``) names, changing nothing: every
    migration when there is no store yet."""
    if not (url or os.environ.get(DATABASE_URL_ENV)) and not (home / "openseal.db").exists():
        return plan(None)
    engine = create_engine(
        url, home=home, synchronous=SYNCHRONOUS, busy_timeout_ms=BUSY_TIMEOUT_MS, read_only=True
    )
    try:
        return plan(engine)
    except sa.exc.DBAPIError as exc:
        raise _cannot_open(engine, exc) from None
    finally:
        engine.dispose()
