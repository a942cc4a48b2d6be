"""The persistent store: ``open_store()`` and the SQLite / PostgreSQL dialect hooks.

SQLite (WAL) is the embedded default at ``<home>/openseal.db``; ``OPENSEAL_DATABASE_URL`` or
``url`` selects PostgreSQL (``postgresql+psycopg://...``), where many workers share one
database, claim with ``FOR UPDATE SKIP LOCKED`` and wake on ``LISTEN/NOTIFY``.

Example::

    store = open_store()
    store.definitions.put(digest, "workflow", "procure_laptops", document)
    store.definitions.activate("procure_laptops", digest, actor="user:local")
    created = store.objectives.create("acme", "procure_laptops", inputs, actor="user:local")
    claim = store.leases.claim("worker-1")
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy import event

from openseal.errors import StoreError
from openseal.runtime.store.db import combined, fastsql, liveness
from openseal.runtime.store.db.base import BEGIN_MODE, StoreBase
from openseal.runtime.store.db.listener import NotificationListener
from openseal.runtime.store.db.wakeups import WakeSockets
from openseal.runtime.store.db.work_signal import Wake
from openseal.runtime.store.repos.actions import Actions
from openseal.runtime.store.repos.agent_requests import AgentRequests
from openseal.runtime.store.repos.approvals import Approvals
from openseal.runtime.store.repos.artifacts import ArtifactStore
from openseal.runtime.store.repos.change_proposals import ChangeProposals
from openseal.runtime.store.repos.definitions import Definitions
from openseal.runtime.store.repos.dependencies import Dependencies
from openseal.runtime.store.repos.health import Health
from openseal.runtime.store.repos.idempotency import Idempotency
from openseal.runtime.store.repos.inbound_events import InboundEvents
from openseal.runtime.store.repos.leases import Leases
from openseal.runtime.store.repos.objectives import Objectives
from openseal.runtime.store.repos.proposals import Proposals
from openseal.runtime.store.repos.runs import Runs
from openseal.runtime.store.repos.tokens import Tokens
from openseal.runtime.store.repos.triggers import Triggers
from openseal.runtime.store.tables import migrations, schema
from openseal.runtime.store.tables.sqlite_reads import BUSY_TIMEOUT_MS, SYNCHRONOUS, configure
from openseal.runtime.store.tables.values import compact_json, loads_json

DATABASE_URL_ENV = "OPENSEAL_DATABASE_URL"
#: the kinds whose ids may be given by a unique prefix, and the column that holds each
ID_COLUMNS = {
    "run": schema.runs.c.id,
    "objective": schema.objectives.c.id,
    "approval": schema.approvals.c.id,
    "action": schema.actions.c.id,
    "token": schema.access_tokens.c.id,
    "agent request": schema.agent_requests.c.id,
}
WORK_CHANNEL = "openseal_runs"
NOTIFY_RUN = sa.text("SELECT pg_notify(:channel, :run)")


class Store(StoreBase):
    """The store: transactions and dialect hooks (:class:`StoreBase`) plus one repository per
    table group. Subclasses only supply dialect hooks. See :func:`open_store`."""

    def __init__(self, engine: sa.Engine, **options: Any) -> None:
        super().__init__(engine, **options)
        self.definitions = Definitions(self)
        self.objectives = Objectives(self)
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

    def schema_revision(self) -> str | None:
        return migrations.current_revision(self.engine)


class SQLiteStore(Store):
    dialect: ClassVar[str] = "sqlite"

    def __init__(self, engine: sa.Engine, **options: Any) -> None:
        super().__init__(engine, **options)
        # Other processes on this file wake through datagrams naming the runs (wakeups.py); a
        # datagram only wakes this process's waiting threads, it is never passed on.
        self._wakeups = WakeSockets(self.home / "wake", self._woken_from_elsewhere)

    def wake_local_workers(self, run_ids: Iterable[str]) -> None:
        run_ids = list(run_ids)
        super().wake_local_workers(run_ids)
        self._wakeups.broadcast(run_ids)

    def _woken_from_elsewhere(self, run_ids: list[str]) -> None:
        if run_ids:
            self.work_signal.offer(run_ids)
        else:  # a datagram that names no run: everyone looks
            self.interrupt_waits()

    def wait_for_work(self, timeout: float, since: int | None = None) -> Wake:
        # Work committed by this process wakes the wait at once, and work committed by another
        # process through its datagram, as NOTIFY does on PostgreSQL: the wait then lasts the
        # caller's whole timeout (its poll covers leases that expire and timers that come due,
        # which nobody announces). Without a socket, a short wait bounds the latency of work
        # from elsewhere.
        self._wakeups.start()
        bound = timeout if self._wakeups.listening else min(timeout, self.poll_interval)
        return self.wait_for_local_work(max(0.0, bound), since)

    def close(self) -> None:
        self._wakeups.close()
        super().close()


class PostgresStore(Store):
    dialect: ClassVar[str] = "postgresql"

    def __init__(self, engine: sa.Engine, **options: Any) -> None:
        super().__init__(engine, **options)
        # One LISTEN session per store, outside the pool: a notification names the run that
        # became runnable and wakes one idle thread for it; a new session wakes them all.
        self._listener = NotificationListener(engine, WORK_CHANNEL, self._notified)

    def unusable_connection(self, conn: sa.Connection, idle_seconds: float) -> str | None:
        return liveness.unusable(self.engine, conn.connection.dbapi_connection, idle_seconds)

    def for_update(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        return stmt.with_for_update()

    def for_claim(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        return stmt.with_for_update(skip_locked=True)

    def lock_event_name(self, conn: sa.Connection, name: str) -> None:
        key = zlib.crc32(f"openseal.event:{name}".encode())
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    def notify_work(self, conn: sa.Connection, run_id: str) -> None:
        # Delivered by PostgreSQL only when (and if) the transaction commits, once per distinct
        # payload of the transaction: one notification per run.
        conn.execute(NOTIFY_RUN, {"channel": WORK_CHANNEL, "run": run_id})
        super().notify_work(conn, run_id)

    def insert_new_rows(self, conn: sa.Connection, rows: Sequence[combined.NewRow]) -> list[bool]:
        if len(rows) < 2:
            return super().insert_new_rows(conn, rows)
        return combined.insert_new(conn, rows)  # one round trip for all

    def insert_rows(
        self,
        conn: sa.Connection,
        rows: Sequence[tuple[sa.Table, Mapping[str, Any]]],
        *,
        notify: str | None = None,
    ) -> None:
        if notify is None:
            super().insert_rows(conn, rows)
            return
        # One round trip for what would take one per row and one for the NOTIFY.
        stmt = combined.inserts_then_notify(combined.shape_of(rows))
        params = combined.parameters(rows)
        params.update({combined.NOTIFY_CHANNEL: WORK_CHANNEL, combined.NOTIFY_RUN: notify})
        fastsql.execute(conn, stmt, params)
        self.wake_after_commit(conn, notify)

    def _notified(self, payload: str | None) -> None:
        if payload:
            self.work_signal.offer([payload])
        else:  # a new session (notifications were lost), or a sender that names no run
            self.interrupt_waits()

    def wait_for_work(self, timeout: float, since: int | None = None) -> Wake:
        # The listener turns every NOTIFY into a wake-up of one idle thread (and every
        # reconnection into a wake-up of all), so a wait is the same as on SQLite, without the
        # polling bound.
        self._listener.start()
        return self.wait_for_local_work(timeout, since)

    def close(self) -> None:
        self._listener.close()
        super().close()


def _sqlite_engine(path: Path, *, synchronous: str, busy_timeout_ms: int) -> sa.Engine:
    # psycopg decodes JSON itself; SQLite's text is decoded by SQLAlchemy, with this.
    engine = sa.create_engine(
        f"sqlite:///{path}", json_serializer=compact_json, json_deserializer=loads_json
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Transaction control is taken away from the pysqlite driver so BEGIN is ours to emit.
        configure(dbapi_connection, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # IMMEDIATE takes the write lock up front: two writers queue on busy_timeout
        # instead of failing with SQLITE_BUSY when a read lock would need upgrading.
        mode = conn.get_execution_options().get(BEGIN_MODE, "IMMEDIATE")
        fastsql.execute_driver_sql(conn, f"BEGIN {mode}")

    return engine


def open_store(
    url: str | None = None,
    *,
    home: Path = Path(".openseal"),
    auto_migrate: bool | None = None,
    synchronous: str = SYNCHRONOUS,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    connect_args: dict[str, Any] | None = None,
) -> Store:
    """Open the store, migrating it when allowed.

    ``url`` (or ``OPENSEAL_DATABASE_URL``) selects PostgreSQL; otherwise SQLite at
    ``home/openseal.db``. The embedded SQLite default migrates itself unless
    ``auto_migrate=False``; PostgreSQL is refused when not at the head revision unless
    ``auto_migrate=True`` (run ``openseal db upgrade``). A database migrated by a newer openseal
    is always refused.
    """
    source = "" if url else f" ({DATABASE_URL_ENV})"
    url = url or os.environ.get(DATABASE_URL_ENV) or None
    if url is not None:
        _check_url(url, source)
    store: Store
    if url is None or url.startswith("sqlite"):
        path = home / "openseal.db" if url is None else Path(sa.make_url(url).database or "")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise StoreError(
                f"cannot open database {path}: cannot create {path.parent}: {reason}",
                code="unavailable",
            ) from None
        engine = _sqlite_engine(path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms)
        store = SQLiteStore(engine, home=home)
        migrate = auto_migrate is not False
    elif url.startswith("postgresql"):
        engine = sa.create_engine(
            url,
            connect_args=connect_args or {},
            json_serializer=compact_json,
        )
        # Instead of ``pool_pre_ping``'s round trip per transaction: see liveness.py.
        liveness.check_on_checkout(engine)
        # Imported here: psycopg is imported only for PostgreSQL (as create_engine does).
        from openseal.runtime.store.db import pg_begin

        pg_begin.begin_with_first_statement(engine)
        store = PostgresStore(engine, home=home)
        migrate = auto_migrate is True
    else:
        raise StoreError(
            f"unsupported database URL {sa.make_url(url)!r}: openseal stores runs in "
            "PostgreSQL (postgresql+psycopg://user@host:5432/db) or SQLite (sqlite:///path)",
            code="database_url",
        )
    try:
        _ensure_schema(store, migrate)
    except BaseException:
        store.close()
        raise
    return store


def _check_url(url: str, source: str) -> None:
    """Refuse a URL SQLAlchemy cannot parse in one line saying so (never its password)."""
    try:
        sa.make_url(url).port  # noqa: B018  (a port that is not a number raises here)
    except (sa.exc.ArgumentError, ValueError) as exc:
        shown = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
        why = "it is not of the form dialect+driver://user@host:port/database"
        if isinstance(exc, ValueError):
            why = "its port is not a number"
        raise StoreError(
            f"malformed database URL {shown!r}{source}: {why}", code="database_url"
        ) from None


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
        # Unreachable, not a database (a corrupt or foreign file), read-only, locked: one line
        # naming the database, never a traceback.
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(
            f"cannot open database {_where(store.engine)}: {reason}", code="unavailable"
        ) from None


def _where(engine: sa.Engine) -> str:
    """The database for people: the SQLite file's path, or the URL without its password."""
    if engine.dialect.name == "sqlite":
        return str(engine.url.database)
    return engine.url.render_as_string(hide_password=True)
