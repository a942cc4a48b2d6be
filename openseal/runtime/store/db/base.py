"""The store's core: engine, transactions and the dialect hooks its subclasses override.

Operations live in repositories (:mod:`openseal.runtime.store.repos`), all built on the few
primitives here; :mod:`openseal.runtime.store.db.dialects` adds the SQLite and PostgreSQL hooks,
and :mod:`openseal.runtime.store.store` assembles the repositories over them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from openseal.errors import StoreError
from openseal.runtime.clock import utcnow
from openseal.runtime.store.db import combined, fastsql, group_commit
from openseal.runtime.store.db.idle_connections import IdleConnections
from openseal.runtime.store.db.transaction_modes import (
    READING,
    WAKE_AFTER_COMMIT,
    WRITING,
    take_wakes,
)
from openseal.runtime.store.db.work_signal import Wake, WorkSignal

#: a connection in one transaction, for repository methods that work in the caller's
Connection = sa.Connection


class StoreBase:
    """Engine, transactions and dialect hooks. Use :func:`openseal.runtime.store.open_store`."""

    dialect: ClassVar[str] = "base"

    def __init__(
        self,
        engine: sa.Engine,
        *,
        home: Path,
        clock: Callable[[], datetime] = utcnow,
        poll_interval: float = 0.2,
    ) -> None:
        self.engine = engine
        self.home = home
        self.clock = clock
        self.poll_interval = poll_interval
        # What this process's idle workers wait on: one wake-up per run made runnable.
        self.work_signal = WorkSignal()
        #: runs announced to this process that no idle thread here took, passed on to another
        #: (the dialect's wake-ups; what tests and benchmarks count)
        self.passed_on = 0
        self._inserts_new: dict[tuple[str, tuple[str, ...]], sa.Insert] = {}
        #: the connections kept between transactions instead of a pool checkout and checkin
        #: for each (idle_connections.py); group commit takes and gives back its own there
        self.connections = IdleConnections(engine, unusable=self.unusable_connection)

    # -- transactions --------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        """One write transaction: commits on success, rolls back on any exception.

        A thread working for an engine that batches (:mod:`.group_commit`) shares the
        transaction with the engine's other threads: its changes are rolled back alone on an
        exception, and the block is left only once they are committed.
        """
        group = group_commit.current(self)
        if group is not None:
            with group.transaction() as shared:
                yield shared
            return
        with self.connections.transaction(WRITING) as conn:
            try:
                yield conn
            finally:
                woke = take_wakes(conn)
        if woke:  # reached only after the commit: a rollback raised above
            self.wake_local_workers(woke)

    @contextmanager
    def write_alone(self) -> Iterator[sa.Connection]:
        """A short write transaction of its own even for a thread that writes through a group
        (:meth:`write`): what it locks is let go at its commit, not the batch's (a shared rate
        limit's row, taken before a call by every worker). Runs it made runnable wake this
        process's idle workers once it commits, as with :meth:`write`."""
        with self.connections.transaction(WRITING) as conn:
            try:
                yield conn
            finally:
                woke = take_wakes(conn)
        if woke:
            self.wake_local_workers(woke)

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """One read transaction (a consistent snapshot on SQLite, read committed on PG)."""
        with self.connections.transaction(READING) as conn:
            yield conn

    def now(self) -> datetime:
        return self.clock()

    def close(self) -> None:
        self.connections.close()
        self.engine.dispose()

    def checkpoint(self) -> None:
        """Make the database's own files a complete copy of every commit, for a process that
        stops (``serve``, ``worker``): nothing to do but on SQLite."""

    def one_file(self, path: Path) -> None:
        """Fold the WAL of the SQLite copy at ``path`` (which nothing has open) into it, so
        the copy is one file; nothing to do but on SQLite."""

    def integrity_problems(self) -> list[str]:
        """What the database's own check finds wrong with its files (SQLite's
        ``integrity_check``); empty when nothing (always, on PostgreSQL)."""
        return []

    def backup_to(self, dest: Path) -> None:
        """Copy the database, consistent as of one moment, into the new SQLite file ``dest``
        while other processes keep working (SQLite only: PostgreSQL is backed up with its own
        tools)."""
        raise StoreError(
            "a PostgreSQL store is backed up with pg_dump or a base backup with WAL archiving "
            "(docs/operations.md#backups)",
            code="not_backed_up",
        )

    def wal_archiving(self) -> dict[str, Any]:
        """PostgreSQL's settings and counters of WAL archiving (``wal_level``, ``archive_mode``,
        ``archive_command``, ``archive_library``, ``archived_count``, ``last_archived_time``,
        ``failed_count``, ``last_failed_time``) and ``pending_restart``, the names among them
        changed in the configuration but in force only once the server restarts; refused on
        SQLite, which has none."""
        raise StoreError(
            "WAL archiving is PostgreSQL's; a SQLite store is backed up with `openseal db "
            "backup DEST`",
            code="not_backed_up",
        )

    # -- dialect hooks -------------------------------------------------------------------

    def unusable_connection(self, conn: sa.Connection, idle_seconds: float) -> str | None:
        """Why a connection kept since its last transaction (idle for ``idle_seconds``) must not
        carry another, as the pool's checkout would refuse it; None when it can."""
        return None

    def for_update(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        """Lock the selected rows until commit (SQLite's write lock already covers it)."""
        return stmt

    def for_claim(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        """Lock one claimable row, skipping rows other workers are claiming."""
        return stmt

    def insert_new(self, table: sa.Table, *keys: str) -> sa.Insert:
        """An INSERT of one row into ``table`` that inserts nothing when a row with the same
        ``keys`` (a unique key) exists, returning ``keys`` only when it inserted: one statement
        where looking first and inserting after takes two (both dialects have it, SQLite from
        3.35). Built once per table and key."""
        stmt = self._inserts_new.get((table.name, keys))
        if stmt is None:
            dialect_insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
            stmt = (
                dialect_insert(table)
                .on_conflict_do_nothing(index_elements=list(keys))
                .returning(*(table.c[key] for key in keys))
            )
            self._inserts_new[(table.name, keys)] = stmt
        return stmt

    def insert_new_rows(self, conn: sa.Connection, rows: Sequence[combined.NewRow]) -> list[bool]:
        """Insert each row unless a row with the same key exists (:meth:`insert_new`);
        whether each was inserted. A dialect may send them all as one statement."""
        return [
            bool(fastsql.execute(conn, self.insert_new(table, *keys), row))
            for table, keys, row in rows
        ]

    def insert_rows(
        self,
        conn: sa.Connection,
        rows: Sequence[tuple[sa.Table, Mapping[str, Any]]],
        *,
        notify: str | None = None,
    ) -> None:
        """Insert each row into its table, in order (a row may refer to one before it), then,
        with ``notify``, announce that run as runnable at commit (:meth:`notify_work`). A
        dialect may send it all as one statement."""
        combined.insert_each(conn, rows)
        if notify is not None:
            self.notify_work(conn, notify)

    def lock_event_name(self, conn: sa.Connection, name: str) -> None:
        """Serialise deliveries and wait registrations for one inbound event name.

        Without it, on PostgreSQL a delivery and a registration committing at the same time
        could each miss the other and leave the run waiting forever.
        """

    def notify_work(self, conn: sa.Connection, run_id: str) -> None:
        """Tell sleeping workers, at commit, that run ``run_id`` became runnable.

        One idle worker of this process (sharing this store) is woken at once to claim it; the
        dialect may also tell other processes (PostgreSQL ``NOTIFY``), else they find it when
        they next poll.
        """
        self.wake_after_commit(conn, run_id)

    @staticmethod
    def wake_after_commit(conn: sa.Connection, run_id: str) -> None:
        """Wake one idle worker of this process for run ``run_id`` once the transaction on
        ``conn`` commits (what :meth:`notify_work` does in every dialect)."""
        conn.info.setdefault(WAKE_AFTER_COMMIT, set()).add(run_id)

    def wake_local_workers(self, run_ids: Iterable[str]) -> None:
        """These runs were made runnable by a commit here: wake one idle worker for each (a
        dialect may tell other processes too)."""
        self.work_signal.offer(run_ids)

    def interrupt_waits(self) -> None:
        """End every wait of this process's threads now (they look for work, or stop)."""
        self.work_signal.broadcast()

    def triggers_mark(self) -> int:
        """Moves each time a commit (here or, through the dialect's wake-ups, elsewhere) asks
        the trigger schedulers to look at the store now."""
        return self.work_signal.triggers_mark

    def work_mark(self) -> int:
        """A mark to pass to ``wait_for_work(since=...)``: take it before looking for work, so
        work committed between the look and the wait still wakes the wait."""
        return self.work_signal.mark()

    def wait_for_local_work(self, timeout: float, since: int | None = None) -> Wake:
        """Block up to ``timeout`` seconds for a wake-up from this process (one after
        ``since``, a :meth:`work_mark`, when given)."""
        return self.work_signal.wait(timeout, since)

    def wait_for_work(self, timeout: float, since: int | None = None) -> Wake:
        """Block up to ``timeout`` seconds for new work; ``woken`` if a notification (or a
        broadcast) ended the wait, with the run to claim when it named one.

        ``since`` (a :meth:`work_mark`, or the last wake's ``mark``) makes work committed after
        the mark count even if it came before the wait began."""
        raise NotImplementedError
