"""PostgreSQL behind a pooler in transaction mode (PgBouncer's ``pool_mode = transaction``).

Such a pooler gives each transaction to any of its server connections, so nothing may rely on
a server session lasting longer than one transaction. The store's transactions do not; two
things psycopg and ``LISTEN`` do are settled here:

* **Prepared statements.** psycopg prepares a statement a connection has run
  ``prepare_threshold`` times (5) under a name of its own (``_pg3_0``…), per connection; behind
  a pooler that does not track them (PgBouncer before 1.21, or ``max_prepared_statements =
  0``) the next transaction meets another session's ``_pg3_0`` or none.
  ``prepare_threshold=none`` in the URL turns them off (:func:`take_prepare_threshold`).
* **The LISTEN session** must be a session of its own on the server itself: through the pooler
  its ``LISTEN`` stays on a server connection the pooler then hands to others.
  :data:`LISTEN_URL_ENV` (or ``open_store(listen_url=...)``) names the server the listener
  connects to, while every transaction goes through ``OPENSEAL_DATABASE_URL``'s pooler. A
  notification that reaches a pooled connection anyway is dropped
  (:func:`drop_stray_notifications`) instead of queued unread for the life of the connection.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from contextlib import suppress
from typing import Any

#: the URL query parameter of psycopg's prepare threshold (not a libpq parameter)
PREPARE_PARAM = "prepare_threshold"
#: the environment variable naming the database the ``LISTEN`` session connects to
LISTEN_URL_ENV = "OPENSEAL_DATABASE_LISTEN_URL"
#: spellings of "never prepare" a URL may use
_NEVER = ("none", "off", "")


def prepare_threshold(params: Mapping[str, Any]) -> int | None:
    """The prepare threshold ``params`` (a URL's query, connect arguments) set: a count of
    runs, or None for never. Raises ``KeyError`` when they set none (psycopg's default
    applies), ``ValueError`` for a value that is neither a count nor ``none``."""
    given = params[PREPARE_PARAM]
    if given is None or (isinstance(given, str) and given.strip().lower() in _NEVER):
        return None
    count = int(given)
    if count < 0:
        raise ValueError(f"{PREPARE_PARAM} must be a count of runs or none, not {given!r}")
    return count


def take_prepare_threshold(params: MutableMapping[str, Any]) -> None:
    """Turn the URL's text for the threshold into what psycopg takes (``none`` → None)."""
    if PREPARE_PARAM in params:
        params[PREPARE_PARAM] = prepare_threshold(params)


def drop_stray_notifications(conn: Any) -> None:
    """Drop every notification ``conn`` (a psycopg connection of the pool) receives: it never
    listens, so one that arrives was meant for a session a pooler gave it. Unhandled, psycopg
    keeps each one in an unbounded queue until someone calls ``notifies()``, which nobody
    does on a pooled connection. The listener takes the handler off its own connection."""
    conn.add_notify_handler(_drop)


def listen_for_notifications(conn: Any) -> None:
    """Undo :func:`drop_stray_notifications` on the connection that listens."""
    with suppress(ValueError):  # a connection opened without it
        conn.remove_notify_handler(_drop)


def _drop(_notification: Any) -> None:
    return None
