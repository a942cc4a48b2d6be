"""Pooled PostgreSQL connections checked on checkout without a round trip.

SQLAlchemy's ``pool_pre_ping`` sends a statement before every transaction: a round trip that
costs as much as a statement of the transaction itself. What it is for is a connection the
server or the network dropped while it sat in the pool (a failover, a killed backend, a cut
link), which must never be handed to a transaction. :func:`check_on_checkout` finds those
without asking the server:

* psycopg already knows a connection it saw break (``closed``, ``broken``);
* a pooled connection is idle, so the server has nothing to say to it: if its socket is
  readable, the server closed it (end of file) or sent a notice that precedes closing
  ("terminating connection due to administrator command"). Either way it is discarded;
* a connection idle for longer than :data:`IDLE_PING_SECONDS` is pinged as before, since a
  link dropped silently (no FIN) shows nothing on the socket.

A connection found dead is replaced by a fresh one before the transaction begins (the pool's
``DisconnectionError`` path). One that dies after the check fails the transaction's first
statement, before anything is written; the caller's ordinary fault handling retries
(invariant 13), and the pool discards the connection, as it would after a failed ping.

A connection the store keeps between two of its transactions instead of checking it in
(idle_connections.py) has the same checks before each transaction (:func:`unusable`).
"""

from __future__ import annotations

import select
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

#: a connection idle in the pool longer than this is pinged on checkout (one round trip)
IDLE_PING_SECONDS = 30.0
#: connection record info key: ``time.monotonic()`` when it was last checked in
_CHECKED_IN = "openseal_checked_in"


def check_on_checkout(engine: sa.Engine) -> None:
    """Install the checks on ``engine``'s pool (PostgreSQL through psycopg)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_CHECKED_IN] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get(_CHECKED_IN)
        idle = 0.0 if idle_since is None else time.monotonic() - idle_since
        problem = unusable(engine, dbapi_connection, idle)
        if problem is not None:
            raise sa.exc.DisconnectionError(problem)


def unusable(engine: sa.Engine, dbapi_connection: Any, idle_seconds: float) -> str | None:
    """Why a connection idle for ``idle_seconds`` must not be handed to a transaction; None if
    it can. The checkout check, also asked of a connection the store kept between two of its
    transactions instead of checking it in (idle_connections.py)."""
    if getattr(dbapi_connection, "autocommit", False) and not hasattr(
        dbapi_connection, "owes_begin"
    ):
        # A connection left in autocommit would make a "transaction" a series of
        # independent statements and ``FOR UPDATE`` lock nothing; one that sends each
        # transaction's BEGIN itself (pg_begin.BeginningConnection) is made to be in it.
        return "a pooled connection was left in autocommit"
    problem = _dead(dbapi_connection)
    if problem is None and idle_seconds > IDLE_PING_SECONDS:
        problem = _ping(engine, dbapi_connection)
    return problem


def _dead(dbapi_connection: Any) -> str | None:
    """Why psycopg's connection cannot be used, found without a round trip; None if it can."""
    if dbapi_connection.closed or dbapi_connection.broken:
        return "the connection is closed"
    try:
        fd = dbapi_connection.fileno()
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
            ready: object = poller.poll(0)
        else:  # Windows has no poll(); select() reports end of file as readable too
            ready = select.select([fd], [], [], 0)[0]
    except (OSError, ValueError) as exc:  # no socket any more
        return f"the connection's socket is unusable ({exc})"
    if ready:
        return "the server closed the connection (or is closing it)"
    return None


def _ping(engine: sa.Engine, dbapi_connection: Any) -> str | None:
    try:
        engine.dialect.do_ping(dbapi_connection)
    except Exception as exc:  # any failure: the connection is not trusted with a transaction
        return f"the connection did not answer a ping ({type(exc).__name__})"
    return None
