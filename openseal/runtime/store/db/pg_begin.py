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

A ``SAVEPOINT`` travels the same way. It returns nothing and changes nothing a statement
could see; what it does is mark the point a ``ROLLBACK TO SAVEPOINT`` returns to, and that
point is the same whether it is set now or just before the next statement. So a bare
``SAVEPOINT name`` executed inside a transaction block (or one whose ``BEGIN`` is owed) is
not sent on its own: it goes in the pipeline of the connection's next statement, after the
owed ``BEGIN`` and before the statement, in the order executed (a group commit's member and a
fenced write each open one before their first statement: a round trip each that carried
nothing). ``ROLLBACK TO SAVEPOINT`` and ``RELEASE SAVEPOINT`` are statements like any other and
take the owed savepoints with them; ``COMMIT`` and ``ROLLBACK`` forget those still owed, which
nothing came after. A savepoint that could not be set (the block failed already, the
connection was lost) fails the statement it travels with instead of its own ``execute``, with
the same error; the transaction cannot commit either way.

A write whose result nobody reads can travel the same way, when its caller says so
(:func:`~.fastsql.execute_with_next`: the INSERT of an objective whose run the next statement
writes): it is owed in the order executed, with the savepoints, and goes in the pipeline of
the connection's next statement, or before ``COMMIT`` (a round trip of its own then) when
nothing follows it. Only its failure can tell anything, and it fails the statement it
travels with (or the commit) instead, with its own error, so the transaction cannot commit;
``ROLLBACK`` forgets it with the rest.

A read can travel the same way when its caller can wait for its rows
(:func:`~.fastsql.execute_read_with_next`: the fence of a fenced write, whose body's first
statement does not depend on what the fence reads): it is owed like such a write, and once the
pipeline it went in has returned, its rows are handed to the caller's callback before the
statement it travelled with returns, so a callback that raises fails that statement. A read
owed when nothing follows it goes before ``COMMIT`` like a write (its callback raising then
fails the commit); a pipeline that failed hands over no rows (the caller reads again when it
still needs them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

import psycopg
import psycopg._queries
import sqlalchemy as sa
from sqlalchemy import event

from openseal.runtime.store.db import deadlines, poolers

_BEGIN = b"BEGIN"
#: what gets an owed read's cursor once its reply is in (:meth:`BeginningConnection.deferring`)
Arrival = Callable[[psycopg.Cursor[Any]], None]
#: a statement that only sets a savepoint (what group commit and fenced writes send)
_SAVEPOINT = re.compile(r"SAVEPOINT [A-Za-z_][A-Za-z0-9_]*")
#: the server's transaction status inside a block that has not failed
_IN_BLOCK = psycopg.pq.TransactionStatus.INTRANS


class BeginningCursor(psycopg.Cursor[Any]):
    """A cursor that sends the ``BEGIN`` and savepoints its connection owes with its
    statement, and owes a bare ``SAVEPOINT`` rather than sending it alone."""

    connection: BeginningConnection

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Self:
        connection = self.connection
        if not kwargs and (
            connection.defer_statement(query, params)
            or (not params and connection.defer_savepoint(query))
        ):
            return self  # like a statement that returned no rows: no result, no row count
        with connection.begun():
            super().execute(query, params, **kwargs)
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
    #: statements executed and not sent yet, in order: bare savepoints (``SAVEPOINT name``)
    #: and the statements :meth:`deferring` asked for, each with its parameters, whether it
    #: must be sent before ``COMMIT`` (a savepoint nothing came after need not) and what gets
    #: its cursor once its reply is in (a read's callback; None for the others)
    owed: tuple[tuple[Any, Any, bool, Arrival | None], ...] = ()
    #: the next statement executed is owed (:meth:`deferring`), with the callback that gets its
    #: cursor when it is a read
    defer_next = False
    defer_arrival: Arrival | None = None

    def defer_savepoint(self, query: Any) -> bool:
        """Owe ``query`` instead of sending it, when it is a bare ``SAVEPOINT`` inside a
        transaction block that has not failed (or whose ``BEGIN`` is owed); whether it was
        owed."""
        if not isinstance(query, str) or not _SAVEPOINT.fullmatch(query):
            return False
        if not self.in_block():
            return False  # outside a block the server refuses it: let it say so now
        self.owed += ((query.encode(), None, False, None),)
        return True

    def defer_statement(self, query: Any, params: Any) -> bool:
        """Owe ``query`` with ``params`` instead of sending it, when :meth:`deferring` asked
        for the next statement to be owed and a transaction block is open (or its ``BEGIN``
        owed); whether it was owed."""
        if not self.defer_next:
            return False
        arrival, self.defer_next, self.defer_arrival = self.defer_arrival, False, None
        if not self.in_block():
            return False  # in autocommit nothing would come to carry it: sent now
        self.owed += ((query, params, True, arrival),)
        return True

    def in_block(self) -> bool:
        """Whether a transaction block is open and has not failed, or its ``BEGIN`` is owed."""
        return self.owes_begin or self.pgconn.transaction_status == _IN_BLOCK

    @contextmanager
    def deferring(self, arrival: Arrival | None = None) -> Iterator[None]:
        """The next statement executed in the block is owed: sent with the statement after it
        (see the module docstring). A write whose result nobody reads; or, with ``arrival``, a
        read whose cursor ``arrival`` gets once its reply is in. Outside a block
        (:meth:`in_block`) it is sent at once, and ``arrival`` is not called."""
        self.defer_next, self.defer_arrival = True, arrival
        try:
            yield
        finally:
            self.defer_next, self.defer_arrival = False, None

    @contextmanager
    def begun(self) -> Iterator[None]:
        """Run the block's statements after the ``BEGIN`` and the statements owed, all in one
        pipeline with them (their results read once the block ends); a plain block when
        nothing is owed."""
        if not self.owes_begin and not self.owed:
            yield
            return
        owed: list[tuple[Any, Any, Arrival | None]] = (
            [(_BEGIN, None, None)] if self.owes_begin else []
        )
        owed += [(query, params, arrival) for query, params, _needed, arrival in self.owed]
        self.owes_begin, self.owed = False, ()
        arrived: list[tuple[Arrival, psycopg.Cursor[Any]]] = []
        with self.pipeline():
            for query, params, arrival in owed:
                cursor = psycopg.Cursor(self)
                cursor.execute(query, params)
                if arrival is not None:
                    arrived.append((arrival, cursor))
            yield
        for arrival, cursor in arrived:  # every reply is in: the pipeline has returned
            arrival(cursor)

    def commit(self) -> None:
        if any(needed for _query, _params, needed, _arrival in self.owed):
            with self.begun():  # a write owed and nothing after it: sent before the commit
                pass
        self.owes_begin, self.owed = False, ()
        super().commit()

    def rollback(self) -> None:
        self.owes_begin, self.owed = False, ()
        super().rollback()


#: the most parameters a statement may have for psycopg to keep its parsed form (see below)
WIDE_STATEMENT_PARAMS = 400
#: the longest statement (characters) psycopg keeps the parsed form of (see below)
LONG_STATEMENT_LENGTH = 16384


def cache_wide_statements() -> None:
    """Let psycopg keep the parsed form of statements with up to
    :data:`WIDE_STATEMENT_PARAMS` parameters and :data:`LONG_STATEMENT_LENGTH` characters.

    psycopg parses a statement's placeholders once and caches the result (an LRU of 128
    entries), but not for a statement of more than 50 parameters or 4,096 characters, against
    the many shapes of an ORM's multi-row ``VALUES``. The store's statements come in a few
    fixed shapes, and the one that writes a run with its first turn and events carries about
    80 parameters (and, with a claim's slots, over 4,096 characters): parsed again on every
    run, it cost about a third of a millisecond of CPU each time. A psycopg without the
    settings is left as it is.
    """
    for name, wanted in (
        ("MAX_CACHED_STATEMENT_PARAMS", WIDE_STATEMENT_PARAMS),
        ("MAX_CACHED_STATEMENT_LENGTH", LONG_STATEMENT_LENGTH),
    ):
        current = getattr(psycopg._queries, name, None)
        if isinstance(current, int) and current < wanted:
            setattr(psycopg._queries, name, wanted)


def begin_with_first_statement(engine: sa.Engine) -> None:
    """Make ``engine`` (PostgreSQL through psycopg) open its connections as
    :class:`BeginningConnection`, with the deadlines of :mod:`.deadlines`, and mark each as
    owing a ``BEGIN`` when a transaction begins on it."""
    cache_wide_statements()

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        options = {**cparams, "autocommit": True, "cursor_factory": BeginningCursor}
        reply_timeout = deadlines.connection_params(options)
        poolers.take_prepare_threshold(options)
        conn = BeginningConnection.connect(*cargs, **options)
        conn.reply_timeout = reply_timeout
        poolers.drop_stray_notifications(conn)
        return conn

    @event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        # A connection asked for AUTOCOMMIT (``VACUUM``, which no transaction block may hold)
        # begins only SQLAlchemy's bookkeeping, never a block on the server.
        owes = conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT"
        conn.connection.dbapi_connection.owes_begin = owes  # type: ignore[union-attr]
