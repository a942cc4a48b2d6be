"""Connections a store keeps between its own transactions, instead of returning them to the pool.

A store transaction that checks a connection out of SQLAlchemy's pool and back in costs more
CPU than its ``BEGIN`` and ``COMMIT`` on SQLite: a new ``Connection``, the pool's queue and
its lock, the checkout and checkin events, the reset on return. :class:`IdleConnections`
keeps the ``Connection`` of a transaction that committed for the store's next transaction
(any thread's), and hands it out again without going through the pool.

What a transaction on a kept connection still has, as with one from the pool:

* every statement event, and the ``begin``/``commit`` events of each transaction; only the
  ``engine_connect`` event and the pool's ``checkout``/``checkin`` events fire less often;
* the execution options its kind asks for (a read's begin mode is set again on a connection
  a write used last, and the other way round);
* the same checks before a transaction: ``unusable`` (the store's dialect hook; on PostgreSQL
  the pool's checkout checks, :mod:`.liveness`) is asked about every kept connection before it
  is handed out, with how long it has been idle, and one found unusable is discarded;
* a connection that failed is never kept: only one whose transaction committed comes back
  here; any other (a rollback, an exception, an invalidated connection) is closed, so the pool
  resets or discards it as before;
* ``Engine.dispose()`` still ends every idle connection: one kept from an earlier pool is
  discarded rather than handed out; the store's ``close()`` closes those kept;
* a forked child never uses, closes or pools its parent's connections (they are the parent's
  sessions): it forgets them and opens its own.

Connections are kept only from a queue pool, and only while it is within its size (no
overflow connection in use, the kept ones counted): so at most the pool's size are kept, and
when many transactions run at once the connections go back to the pool, where a thread waiting
for one gets it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

#: why a kept connection, idle for the given seconds, must not carry another transaction;
#: None when it can
Unusable = Callable[[sa.Connection, float], str | None]
#: a kept connection, when it was given back, and the pool it came from
_Kept = tuple[sa.Connection, float, Any]


class IdleConnections:
    """The connections one store keeps between its transactions; see the module docstring."""

    def __init__(self, engine: sa.Engine, *, unusable: Unusable) -> None:
        self._engine = engine
        self._unusable = unusable
        self._lock = threading.Lock()
        #: the last given back last
        self._idle: list[_Kept] = []
        self._pid = os.getpid()
        #: a forked child's copy of its parent's idle connections: kept referenced so that
        #: nothing here ever closes or pools them (see :meth:`_after_fork`)
        self._parents: list[_Kept] = []

    @contextmanager
    def transaction(self, options: Mapping[str, Any]) -> Iterator[sa.Connection]:
        """One transaction on a connection with ``options``, committed when the block ends and
        rolled back on an exception; its connection is kept only if it committed."""
        conn = self.take(options)
        committed = False
        try:
            with conn.begin():
                yield conn
            committed = True
        finally:
            self.give_back(conn, committed=committed)

    def take(self, options: Mapping[str, Any]) -> sa.Connection:
        """A connection for one transaction, carrying the execution ``options``: the last one
        kept, if it can still be used, or a new one from the pool."""
        conn = self._kept()
        if conn is None:
            conn = self._engine.connect()
        current = conn.get_execution_options()
        for name, value in options.items():  # a loop: a generator costs more than the look-ups
            if current.get(name) != value:
                conn.execution_options(**options)
                break
        return conn

    def give_back(self, conn: sa.Connection, *, committed: bool) -> None:
        """The transaction on ``conn`` ended: keep it if it committed and the pool is within its
        size, else close it (back to the pool, which resets or discards it). Closing may
        raise."""
        if committed and not (conn.invalidated or conn.closed or conn.in_transaction()):
            pool = self._engine.pool
            if isinstance(pool, sa.pool.QueuePool) and pool.checkedout() <= pool.size():
                with self._lock:
                    if self._pid == os.getpid():
                        self._idle.append((conn, time.monotonic(), pool))
                        return
        conn.close()

    def close(self) -> None:
        """Close every idle connection (they go back to their pool)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _since, _pool in idle:
            conn.close()

    def _kept(self) -> sa.Connection | None:
        """The last connection kept, if it can carry a transaction (one that cannot is
        discarded); None when there is none."""
        with self._lock:
            if self._pid != os.getpid():
                self._after_fork()
            if not self._idle:
                return None
            conn, since, pool = self._idle.pop()
        if pool is self._engine.pool and self._unusable(conn, time.monotonic() - since) is None:
            return conn
        _discard(conn)
        return None

    def _after_fork(self) -> None:
        self._parents.extend(self._idle)
        self._idle = []
        self._pid = os.getpid()


def _discard(conn: sa.Connection) -> None:
    """Close a kept connection that must not be used again: its database connection is closed
    outright (invalidated), whatever its state."""
    try:
        conn.invalidate()
    finally:
        conn.close()
