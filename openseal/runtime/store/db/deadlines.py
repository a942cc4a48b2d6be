"""Deadlines on every wait for PostgreSQL: a silent partition is a fault like any other.

A connection left half-open (a NAT or a load balancer that forgot it, a primary that vanished
without a reset) answers nothing and closes nothing: without a deadline, a statement sent on it
waits forever, and with group commit every thread of a worker waits behind it. So every store
connection gets, unless its URL (or ``connect_args``) sets them already:

* libpq's TCP settings (:data:`LIBPQ_DEFAULTS`): a bound on connecting, keepalive probes that
  find a dead peer on an idle connection, and ``tcp_user_timeout``, which drops a connection
  whose sent data the peer has not acknowledged in time;
* a deadline on every reply (``openseal_reply_timeout`` seconds, :data:`REPLY_TIMEOUT`): a wait
  for the server's answer to a statement, a commit or a rollback that lasts longer closes the
  connection and raises a connection fault (SQLSTATE 08006), which a worker drops the turn for
  and retries. It also covers what the kernel cannot see: a peer (a proxy) that acknowledges
  every byte and forwards none.

The deadlines are URL query parameters, so ``OPENSEAL_DATABASE_URL`` carries them::

    postgresql+psycopg://openseal@db/openseal?keepalives_idle=30&openseal_reply_timeout=120

``openseal_reply_timeout=0`` turns the reply deadline off (the TCP settings still apply).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Any, TypeVar

import psycopg
from psycopg import errors
from psycopg.abc import PQGen

RV = TypeVar("RV")

#: libpq connection parameters set on every connection whose URL does not set them: seconds to
#: connect; keepalive probes after 10 s idle, every 5 s, 3 unanswered ones drop the
#: connection; sent data unacknowledged for 30 s (milliseconds) drops it
LIBPQ_DEFAULTS: Mapping[str, str] = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}
#: libpq's environment variable for a parameter above, which wins over the default too
_LIBPQ_ENV = {"connect_timeout": "PGCONNECT_TIMEOUT"}
#: the URL query parameter of the reply deadline (openseal's, never passed to libpq)
REPLY_TIMEOUT_PARAM = "openseal_reply_timeout"
#: seconds a wait for the server's reply may last unless the URL says otherwise
REPLY_TIMEOUT = 30.0
#: how often a wait wakes to let Python handle signals (psycopg's own interval)
_WAIT_INTERVAL = 0.1


def reply_timeout(params: Mapping[str, Any]) -> float | None:
    """The reply deadline in ``params`` (a URL's query, a connection's parameters), in seconds:
    :data:`REPLY_TIMEOUT` unless set there; None when set to 0 (no deadline). Raises
    ``ValueError`` for a value that is not a number of seconds."""
    given = params.get(REPLY_TIMEOUT_PARAM)
    if given is None:
        return REPLY_TIMEOUT
    seconds = float(given)
    if not seconds >= 0:  # also refuses nan
        raise ValueError(f"{REPLY_TIMEOUT_PARAM} must be a number of seconds, not {given!r}")
    return seconds or None


def connection_params(params: MutableMapping[str, Any]) -> float | None:
    """Fill ``params`` (what a connection is opened with) with the defaults it does not set,
    take the reply deadline out of it (libpq does not know it) and return that deadline."""
    for name, value in LIBPQ_DEFAULTS.items():
        env = _LIBPQ_ENV.get(name)
        if name not in params and not (env and os.environ.get(env)):
            params[name] = value
    deadline = reply_timeout(params)
    params.pop(REPLY_TIMEOUT_PARAM, None)
    return deadline


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server ends by :attr:`reply_timeout`
    (None: no deadline). A wait that runs out closes the connection (it is in an unknown
    state: a reply may still come) and raises a connection fault.

    It overrides ``Connection.wait`` (every statement, commit and rollback goes through it)
    and catches psycopg's internal ``_WaitTimeout`` (psycopg 3.3; pinned in pyproject.toml):
    tests/runtime/store/db/test_pg_partitions.py fails loudly if either moves."""

    reply_timeout: float | None = None

    def wait(
        self, gen: PQGen[RV], interval: float = _WAIT_INTERVAL, timeout: float | None = None
    ) -> RV:
        # A caller's own timeout (a wait for notifications) is kept: it is the deadline then.
        if timeout is not None or self.reply_timeout is None:
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, self.reply_timeout)
        except errors._WaitTimeout:
            self.close()
            raise errors.ConnectionFailure(
                f"no reply from the database server within {self.reply_timeout:g}s "
                f"({REPLY_TIMEOUT_PARAM}); the connection was closed"
            ) from None
