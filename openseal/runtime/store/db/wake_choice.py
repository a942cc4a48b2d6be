"""PostgreSQL: a runnable run is announced to one listening process, not to all of them.

Every process that waits for work listens on a channel of its own, and names its ``LISTEN``
session after it (``application_name``), so the server lists the sessions listening on a store
in ``pg_stat_activity``. The statement that announces a run picks one of them: the sessions
of the store's schema (its name's hash is in the channel's, so stores in other schemas of the
same database never hear each other), ordered by a hash of the channel and the run, the first
one that is not the announcing process's own (that process offers the run to its own idle
threads itself, at commit). A process that hears of a run and has no idle thread for it
passes it on to the next session in the same order, from its own session; past the last one
it is dropped, every process having been offered it while it was busy — and a busy
process's threads look for work when they finish.

So one idle process is woken per run, and a busy one costs one ``NOTIFY`` of its listener.
A notification lost in between (a process that stops while it holds one) is covered by the
poll, as any lost wake-up. Offers that name no run (:data:`.work_signal.TRIGGERS`) still reach
every process, on the store's shared channel.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

import sqlalchemy as sa

#: every channel of a store starts with this, then the hash of its schema's name
CHANNEL_PREFIX: Final = "openseal_runs_"
#: how many hex digits of the schema name's md5 a channel carries
SCHEMA_DIGITS: Final = 8
#: the schema's shared channel, computed by the server from the transaction's schema
SHARED_CHANNEL_SQL: Final = f"'{CHANNEL_PREFIX}' || left(md5(current_schema()), {SCHEMA_DIGITS})"

#: the channel of the chosen session (if any): of the schema named by ``p_prefix`` (else the
#: transaction's), not ``p_own``, the first in the run's order after ``p_after`` (else the first)
_CHOSEN = f"""
SELECT application_name AS channel FROM pg_stat_activity
WHERE datname = current_database()
  AND left(application_name, {len(CHANNEL_PREFIX) + SCHEMA_DIGITS + 1})
      = coalesce(CAST(:p_prefix AS text), {SHARED_CHANNEL_SQL} || '_')
  AND application_name IS DISTINCT FROM CAST(:p_own AS text)
  AND md5(application_name || :p_run) > coalesce(md5(CAST(:p_after AS text) || :p_run), '')
ORDER BY md5(application_name || :p_run)
LIMIT 1
"""

#: announce run ``p_run`` to the chosen session (nothing when no session listens)
NOTIFY_CHOSEN: Final = f"SELECT pg_notify(chosen.channel, :p_run) FROM ({_CHOSEN}) AS chosen"
#: announce ``p_run`` (a payload that names no run) to every session of the store
NOTIFY_SHARED: Final = f"SELECT pg_notify({SHARED_CHANNEL_SQL}, :p_run)"
#: the schema's key, as the channels carry it
SCHEMA_KEY: Final = f"SELECT left(md5(current_schema()), {SCHEMA_DIGITS})"


def chosen_listener() -> sa.Subquery:
    """:data:`_CHOSEN` for a statement built with SQLAlchemy (one column, ``channel``)."""
    return sa.text(_CHOSEN).columns(channel=sa.String).subquery("chosen")


def announcing(run_id: str, own: str | None) -> dict[str, Any]:
    """The parameters of :data:`NOTIFY_CHOSEN` for a run made runnable by a process whose
    session is ``own`` (None: it listens on nothing)."""
    return {"p_run": run_id, "p_prefix": None, "p_own": own, "p_after": None}


def passing_on(run_id: str, session: str) -> dict[str, Any]:
    """The parameters of :data:`NOTIFY_CHOSEN` sent by the session ``session``, which had no
    idle thread for the run: to the next session after it."""
    prefix = session[: len(CHANNEL_PREFIX) + SCHEMA_DIGITS + 1]
    return {"p_run": run_id, "p_prefix": prefix, "p_own": None, "p_after": session}


def shared_channel(schema_key: str) -> str:
    return f"{CHANNEL_PREFIX}{schema_key}"


def own_channel(schema_key: str) -> str:
    """A new channel for one process's session (its ``application_name`` too)."""
    return f"{CHANNEL_PREFIX}{schema_key}_{uuid.uuid4().hex[:12]}"
