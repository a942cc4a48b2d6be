"""PostgreSQL transactions whose ``BEGIN`` travels with their first statement.

psycopg opens a transaction by sending ``BEGIN`` on its own and waiting for the reply before
it sends the transaction's first statement (``Connection._start_query``; in pipeline mode it
syncs after ``BEGIN`` too): a round trip per transaction that carries nothing. Here psycopg's
connections are in autocommit, where psycopg sends no ``BEGIN``, and the store sends its own:

* SQLAlchemy's ``begin`` event (every transaction the store, Alembic or anyone else opens on
  the engine, explicitly or by autobegin) marks the connection as owing a ``BEGIN``, unless
  the connection was asked for ``isolation_level="AUTOCOMMIT"``;
* the next statement executed on one of its cursors goes out in one pipeline with the
  ``BEGIN`` before it (extended protocol: ``BEGIN``'s and the statement's messages, one
  ``Sync``), so the statement runs inside the transaction block ``BEGIN`` opened; every
  later statement of the transaction runs there too, as with psycopg's own ``BEGIN``;
* ``COMMIT`` and ``ROLLBACK`` are psycopg's: in autocommit it still sends them whenever the
  session is in a transaction block (``_commit_gen``/``_rollback_gen`` look at the server's
  transaction status, not at autocommit), and ends the mark either way.

The transaction is the same as psycopg's: the first statement's locks (``SELECT … FOR
UPDATE``) are taken inside the block and held to ``COMMIT``; a failure of ``BEGIN`` or of
the statement is raised by the statement's ``execute`` (the rest of the pipeline is skipped)
and leaves the block failed until SQLAlchemy rolls it back; a connection lost at any point
before ``COMMIT`` has its open block rolled back by the server, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import psycopg
import psycopg._queries
import sqlalchemy as sa
from sqlalchemy import event

from openseal.runtime.store.db import deadlines

_BEGIN = b"BEGIN"


class BeginningCursor(psycopg.Cursor[Any]):
    """A cursor that sends the ``BEGIN`` its connection owes with its statement."""

    connection: BeginningConnection

    def execute(self, *args: Any, **kwargs: Any) -> Self:
        with self.connection.begun():
            super().execute(*args, **kwargs)
        return self

    def executemany(self, *args: Any, **kwargs: Any) -> None:
        with self.connection.begun():
            super().executemany(*args, **kwargs)


class BeginningConnection(deadlines.DeadlineConnection):
    """A psycopg connection in autocommit that opens a transaction block with the first
    statement of each transaction SQLAlchemy begins on it (see the module docstring), whose
    waits for the server have deadlines (:mod:`.deadlines`)."""

    #: a transaction began and its ``BEGIN`` has not been sent yet
    owes_begin = False

    @contextmanager
    def begun(self) -> Iterator[None]:
        """Run the block's statements after the ``BEGIN`` owed, all in one pipeline with it
        (its results read once the block ends); a plain block when none is owed."""
        if not self.owes_begin:
            yield
            return
        self.owes_begin = False
        with self.pipeline():
            psycopg.Cursor(self).execute(_BEGIN)
            yield

    def commit(self) -> None:
        self.owes_begin = False
        super().commit()

    def rollback(self) -> None:
        self.owes_begin = False
        super().rollback()


#: the most parameters a statement may have for psycopg to keep its parsed form (see below)
WIDE_STATEMENT_PARAMS = 400


def cache_wide_statements() -> None:
    """Let psycopg keep the parsed form of statements with up to
    :data:`WIDE_STATEMENT_PARAMS` parameters.

    psycopg parses a statement's placeholders once and caches the result (an LRU of 128
    entries), but not for a statement of more than 50 parameters, against the many shapes of
    an ORM's multi-row ``VALUES``. The store's statements come in a few fixed shapes, and the
    one that writes a run with its first turn and events carries about 80: parsed again on
    every run, it cost about a third of a millisecond of CPU each time. A psycopg without
    the setting is left as it is.
    """
    current = getattr(psycopg._queries, "MAX_CACHED_STATEMENT_PARAMS", None)
    if isinstance(current, int) and current < WIDE_STATEMENT_PARAMS:
        psycopg._queries.MAX_CACHED_STATEMENT_PARAMS = WIDE_STATEMENT_PARAMS


def begin_with_first_statement(engine: sa.Engine) -> None:
    """Make ``engine`` (PostgreSQL through psycopg) open its connections as
    :class:`BeginningConnection`, with the deadlines of :mod:`.deadlines`, and mark each as
    owing a ``BEGIN`` when a transaction begins on it."""
    cache_wide_statements()

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        options = {**cparams, "autocommit": True, "cursor_factory": BeginningCursor}
        reply_timeout = deadlines.connection_params(options)
        conn = BeginningConnection.connect(*cargs, **options)
        conn.reply_timeout = reply_timeout
        return conn

    @event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        # A connection asked for AUTOCOMMIT (``VACUUM``, which no transaction block may hold)
        # begins only SQLAlchemy's bookkeeping, never a block on the server.
        owes = conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT"
        conn.connection.dbapi_connection.owes_begin = owes  # type: ignore[union-attr]
