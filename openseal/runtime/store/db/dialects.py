"""The SQLite and PostgreSQL dialects: their engines and the hooks each overrides.

SQLite (WAL) is the embedded default at ``<home>/openseal.db``; ``OPENSEAL_DATABASE_URL`` or
``url`` selects PostgreSQL (``postgresql+psycopg://...``), where many workers share one
database, claim with ``FOR UPDATE SKIP LOCKED`` and wake on ``LISTEN/NOTIFY``. The store
itself (:mod:`openseal.runtime.store.store`) puts its repositories over one of them.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import zlib
from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy import event

from openseal.errors import StoreError
from openseal.runtime.store.db import (
    combined,
    fastsql,
    liveness,
    multihost,
    poolers,
    wake_choice,
)
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.json_text import compact_json, loads_json
from openseal.runtime.store.db.listener import ListenSession, NotificationListener
from openseal.runtime.store.db.sqlite_connections import (
    check_readable,
    configure,
    read_only_uri,
)
from openseal.runtime.store.db.transaction_modes import BEGIN_MODE
from openseal.runtime.store.db.wakeups import WakeSockets
from openseal.runtime.store.db.work_signal import TRIGGERS, Wake

log = logging.getLogger("openseal.store")

DATABASE_URL_ENV = "OPENSEAL_DATABASE_URL"
#: a run announced to one listening process; anything else to every one (wake_choice.py)
NOTIFY_CHOSEN = sa.text(wake_choice.NOTIFY_CHOSEN)
NOTIFY_SHARED = sa.text(wake_choice.NOTIFY_SHARED)
#: :data:`NOTIFY_CHOSEN` as the listener's own psycopg connection takes it
PASS_ON = re.sub(r":(p_\w+)", r"%(\1)s", wake_choice.NOTIFY_CHOSEN)


class SQLiteDatabase(StoreBase):
    """The SQLite hooks: waits woken across processes by datagrams (:mod:`.wakeups`)."""

    dialect: ClassVar[str] = "sqlite"

    def __init__(self, engine: sa.Engine, **options: Any) -> None:
        super().__init__(engine, **options)
        # Other processes on this file wake through datagrams naming the runs (wakeups.py); a
        # run this process has no idle thread for is passed on to the next process.
        self._wakeups = WakeSockets(self.home / "wake", self._woken_from_elsewhere)

    def wake_local_workers(self, run_ids: Iterable[str]) -> None:
        run_ids = list(run_ids)
        super().wake_local_workers(run_ids)
        self._wakeups.broadcast(run_ids)

    def _woken_from_elsewhere(self, run_ids: list[str]) -> None:
        if not run_ids:  # a datagram that names no run: everyone looks
            self.interrupt_waits()
            return
        if TRIGGERS in run_ids:
            self.work_signal.offer(run_ids)
            return
        for run_id in run_ids:
            if not self.work_signal.offer_run(run_id):
                self.passed_on += 1  # no idle thread here: to the next process
                self._wakeups.pass_on(run_id)

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

    def checkpoint(self) -> None:
        # Copies every commit in the WAL into openseal.db and empties the WAL, even while other
        # processes keep the file open (it waits, up to the busy timeout, for their readers to
        # leave older snapshots): openseal.db alone is then a complete copy.
        # Best effort: a file that cannot be checkpointed now keeps its WAL, which is read (and
        # checkpointed) by the next process to open it.
        try:
            raw = self.engine.raw_connection()
            try:
                raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # type: ignore[union-attr]
            finally:
                raw.close()
        except (sa.exc.DBAPIError, sqlite3.Error) as exc:
            log.warning("could not checkpoint %s: %s", where(self.engine), exc)

    def integrity_problems(self) -> list[str]:
        with self.engine.connect() as conn:
            found = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check")]
        return [] if found == ["ok"] else found

    def backup_to(self, dest: Path) -> None:
        # SQLite's online backup API: it copies the database as one read transaction sees it,
        # while writers go on (WAL mode: readers and the writer never wait for each other).
        raw = self.engine.raw_connection()
        try:
            source = raw.driver_connection
            assert isinstance(source, sqlite3.Connection)
            with closing(sqlite3.connect(dest)) as copy:
                source.backup(copy)
        finally:
            raw.close()

    def one_file(self, path: Path) -> None:
        # A copy nothing has open is kept as one file: its WAL folded in and removed, as a
        # rollback-journal database (a store that opens it again switches it back to WAL).
        with closing(sqlite3.connect(path)) as copy:
            copy.execute("PRAGMA journal_mode=DELETE").fetchall()


class PostgresDatabase(StoreBase):
    """The PostgreSQL hooks: row locks, advisory locks, ``NOTIFY`` and its listener."""

    dialect: ClassVar[str] = "postgresql"

    def __init__(
        self, engine: sa.Engine, *, listen_engine: sa.Engine | None = None, **options: Any
    ) -> None:
        super().__init__(engine, **options)
        # One LISTEN session per store, outside the pool: a notification names the run that
        # became runnable and wakes one idle thread for it; a new session wakes them all. Its
        # own engine when the pool goes through a transaction-mode pooler (poolers.py). A run
        # is announced to one process's session, which passes it on when it has no idle
        # thread (wake_choice.py).
        self._listen_engine = listen_engine
        self._listener = NotificationListener(
            listen_engine or engine, self._listen_session, self._notified
        )

    def wal_archiving(self) -> dict[str, Any]:
        names = ("wal_level", "archive_mode", "archive_command", "archive_library")
        with self.engine.connect() as conn:
            query = sa.text(
                "SELECT name, setting, pending_restart FROM pg_settings WHERE name IN :names"
            )
            query = query.bindparams(sa.bindparam("names", expanding=True))
            rows = conn.execute(query, {"names": list(names)}).all()
            settings: dict[str, Any] = {str(row[0]): row[1] for row in rows}
            # changed in the configuration, taking effect only when the server restarts
            pending = sorted(str(row[0]) for row in rows if row[2])
            stats = (
                conn.execute(
                    sa.text(
                        "SELECT archived_count, last_archived_time, failed_count, last_failed_time "
                        "FROM pg_stat_archiver"
                    )
                )
                .mappings()
                .one()
            )
        return {
            **{name: settings.get(name) for name in names},
            **dict(stats),
            "pending_restart": pending,
        }

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
        # payload of the transaction: one notification per run, to one other process.
        if run_id == TRIGGERS:
            conn.execute(NOTIFY_SHARED, {"p_run": run_id})
        else:
            own = self._listener.listening_as
            conn.execute(NOTIFY_CHOSEN, wake_choice.announcing(run_id, own))
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
        params.update(wake_choice.announcing(notify, self._listener.listening_as))
        fastsql.execute(conn, stmt, params)
        self.wake_after_commit(conn, notify)

    def _listen_session(self) -> ListenSession:
        """The channels of this process's next LISTEN session: the store's shared one and one
        of its own, after which the session is named (the schema read through the store's
        engine, as its transactions see it)."""
        with self.engine.connect() as conn:
            key = str(conn.execute(sa.text(wake_choice.SCHEMA_KEY)).scalar_one())
        own = wake_choice.own_channel(key)
        return ListenSession((wake_choice.shared_channel(key), own), own)

    def _notified(self, payload: str | None) -> None:
        if not payload:  # a new session (notifications were lost), or a sender naming no run
            self.interrupt_waits()
        elif payload == TRIGGERS:
            self.work_signal.offer([payload])
        elif not self.work_signal.offer_run(payload):
            session = self._listener.listening_as
            if session is not None:
                self.passed_on += 1  # no idle thread here: to the next process
                self._listener.send(PASS_ON, wake_choice.passing_on(payload, session))

    def wait_for_work(self, timeout: float, since: int | None = None) -> Wake:
        # The listener turns every NOTIFY into a wake-up of one idle thread (and every
        # reconnection into a wake-up of all), so a wait is the same as on SQLite, without the
        # polling bound.
        self._listener.start()
        return self.wait_for_local_work(timeout, since)

    def close(self) -> None:
        self._listener.close()
        if self._listen_engine is not None:
            self._listen_engine.dispose()
        super().close()


def sqlite_engine(
    path: Path, *, synchronous: str, busy_timeout_ms: int, read_only: bool = False
) -> sa.Engine:
    # psycopg decodes JSON itself; SQLite's text is decoded by SQLAlchemy, with this.
    engine = sa.create_engine(
        f"sqlite:///{path}", json_serializer=compact_json, json_deserializer=loads_json
    )
    if read_only:  # the same engine (its URL names the file), its connections opened read-only
        uri = read_only_uri(path)

        @event.listens_for(engine, "do_connect")
        def _read_only(_dialect: Any, _record: Any, _cargs: Any, cparams: Any) -> Any:
            return sqlite3.connect(uri, **{**cparams, "uri": True, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Transaction control is taken away from the pysqlite driver so BEGIN is ours to emit.
        configure(
            dbapi_connection,
            synchronous=synchronous,
            busy_timeout_ms=busy_timeout_ms,
            read_only=read_only,
        )

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # IMMEDIATE takes the write lock up front: two writers queue on busy_timeout
        # instead of failing with SQLITE_BUSY when a read lock would need upgrading.
        mode = conn.get_execution_options().get(BEGIN_MODE, "IMMEDIATE")
        fastsql.execute_driver_sql(conn, f"BEGIN {mode}")

    return engine


def create_engine(
    url: str | None,
    *,
    home: Path,
    synchronous: str,
    busy_timeout_ms: int,
    connect_args: dict[str, Any] | None = None,
    read_only: bool = False,
    env: str = DATABASE_URL_ENV,
) -> sa.Engine:
    """The engine of the database ``url`` (or the environment variable ``env``,
    ``OPENSEAL_DATABASE_URL``) names: PostgreSQL, or SQLite at ``home/openseal.db`` when
    neither is given (``read_only``: its connections opened read-only). A URL that is
    malformed, of another database, or a SQLite directory that cannot be created is refused in
    one line."""
    source = "" if url else f" ({env})"
    url = url or os.environ.get(env) or None
    if url is not None:
        url = multihost.hosts_as_query(url)
        check_url(url, source)
    if url is None or url.startswith("sqlite"):
        path = home / "openseal.db" if url is None else Path(sa.make_url(url).database or "")
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise StoreError(
                f"cannot open database {path}: cannot create {path.parent}: {reason}",
                code="unavailable",
            ) from None
        if not read_only and path.is_file():
            check_readable(path)  # before a connection that could write opens
        return sqlite_engine(
            path, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms, read_only=read_only
        )
    if url.startswith("postgresql"):
        _check_deadlines(url, connect_args or {}, source)
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
        return engine
    raise StoreError(
        f"unsupported database URL {sa.make_url(url)!r}: openseal stores runs in "
        "PostgreSQL (postgresql+psycopg://user@host:5432/db) or SQLite (sqlite:///path)",
        code="database_url",
    )


def create_listen_engine(
    url: str | None,
    listen_url: str | None,
    store_engine: sa.Engine,
    **options: Any,
) -> sa.Engine | None:
    """The engine of the ``LISTEN`` session's own database URL (poolers.py): ``listen_url``,
    or ``OPENSEAL_DATABASE_LISTEN_URL`` when the store's ``url`` comes from the environment
    too; None when neither is set (the listener then uses the store's engine). ``options`` are
    :func:`create_engine`'s. Refused in one line when it does not name PostgreSQL, or the
    store is not on PostgreSQL."""
    if listen_url is None and (url is not None or not os.environ.get(poolers.LISTEN_URL_ENV)):
        return None
    named = "the listen URL" if listen_url else poolers.LISTEN_URL_ENV
    if store_engine.dialect.name != "postgresql":
        raise StoreError(
            f"{named} is for a PostgreSQL store: set {DATABASE_URL_ENV} too (or unset it)",
            code="database_url",
        )
    engine = create_engine(listen_url, env=poolers.LISTEN_URL_ENV, **options)
    if engine.dialect.name != "postgresql":
        engine.dispose()
        raise StoreError(
            f"{named} must name the PostgreSQL server itself "
            "(postgresql+psycopg://user@host:5432/db)",
            code="database_url",
        )
    return engine


def check_url(url: str, source: str) -> None:
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


def _check_deadlines(url: str, connect_args: Mapping[str, Any], source: str) -> None:
    """Refuse a reply deadline that is not a number of seconds (see deadlines.py), or a
    prepare threshold that is not a count (poolers.py), now, not at the first connection."""
    from openseal.runtime.store.db import deadlines

    params = {**sa.make_url(url).query, **connect_args}
    try:
        deadlines.reply_timeout(params)
    except (TypeError, ValueError):
        raise StoreError(
            f"malformed database URL{source}: {deadlines.REPLY_TIMEOUT_PARAM} must be a "
            "number of seconds (0: no deadline)",
            code="database_url",
        ) from None
    try:
        poolers.prepare_threshold(params)
    except KeyError:
        pass
    except (TypeError, ValueError):
        raise StoreError(
            f"malformed database URL{source}: {poolers.PREPARE_PARAM} must be a count of runs "
            "or none (no prepared statements, behind a transaction-mode pooler)",
            code="database_url",
        ) from None


def where(engine: sa.Engine) -> str:
    """The database for people: the SQLite file's path, or the URL without its password."""
    if engine.dialect.name == "sqlite":
        return str(engine.url.database)
    # unquoted for reading: a list of servers reads host=db1:5432, not host=db1%3A5432
    return unquote(engine.url.render_as_string(hide_password=True))
