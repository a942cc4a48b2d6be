"""Group commit: the write transactions of one engine's threads share commits.

A thread that is a :meth:`GroupCommit.member` opens its write transactions
(:meth:`StoreBase.write`) through the group. The first one opens a *batch*: one connection, one
database transaction. Threads that write while the batch is open join it; their bodies run on
the batch's connection one at a time, each inside a ``SAVEPOINT`` (the first body needs none: if
it fails, the transaction is simply begun again). The first thread (the leader) commits once the
batch holds ``size`` bodies, or every working thread of the group has joined, or ``window``
seconds have passed; every member returns from its ``with`` block only after that commit.

A :meth:`GroupCommit.together` block is one member whose body spans the block: the writes
inside it run on the batch's connection, each in a savepoint nested in the block's (the first
needs none: the block's savepoint undoes exactly what it would), and the block is left once the
batch is committed (creating an objective, claiming its run and saving its first turn share the
commit of the other threads' writes, not a transaction of their own).

Savepoints are plain statements on the driver (:func:`fastsql.execute_driver_sql`, which keeps
the cursor events): SQLAlchemy's nested transactions cost several times more CPU than the
statements themselves, and the group needs none of what they track. A savepoint is never
released: on SQLite and PostgreSQL one left open is committed with the transaction, and each
body that follows nests in it, which changes nothing it can roll back (members run one at a
time, so every savepoint after a body's own is one of its own writes'). Releasing would free
nothing PostgreSQL counts either: a subtransaction that wrote keeps its id in the backend's
cache (64 ids; past them every snapshot of every backend looks ids up on disk) until the top
transaction ends, released or not, so a batch takes no more members once it has opened
``SAVEPOINTS_PER_BATCH``.

A body that raises is rolled back to its savepoint and its thread gets its exception after the
commit; the other bodies are not touched. A failed commit fails every member, and so does a
connection lost under a body (with that fault, which a worker retries). See
docs/decisions/0006-group-commit-and-pure-states.md for what this keeps of each invariant.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

import sqlalchemy as sa

from openseal.runtime.store.db.fastsql import execute_driver_sql
from openseal.runtime.store.db.transaction_modes import WRITING, take_wakes

if TYPE_CHECKING:
    from openseal.runtime.store.db.idle_connections import IdleConnections


class Database(Protocol):
    """What a group commits through: the store's kept connections, and the wake-ups of its
    idle workers for the runs a commit made runnable (:class:`~.base.StoreBase`)."""

    connections: IdleConnections

    def wake_local_workers(self, run_ids: Iterable[str]) -> None: ...


#: named points a crash test can stop the leader at: the bodies are written and the commit not
#: issued; the commit is done and no member has gone on
BATCH_POINTS = ("batch.before_commit", "batch.committed")
BatchHook = Callable[[str, int], None]

#: savepoints after which a batch takes no more members: PostgreSQL caches the ids of 64
#: subtransactions per backend, and a member (a ``together()`` block) may open a few
SAVEPOINTS_PER_BATCH = 48

_local = threading.local()
#: what a body's ``with`` statement gets
T = TypeVar("T")


def _itself(conn: sa.Connection) -> sa.Connection:
    return conn


def _nothing(conn: sa.Connection) -> None:
    """A :meth:`GroupCommit.together` block writes through the store, not on the connection."""


def open_savepoint(conn: sa.Connection, name: str) -> None:
    """``SAVEPOINT name`` on ``conn``, left open like a member's, and counted against
    :data:`SAVEPOINTS_PER_BATCH` when the calling thread runs a body on a batch's."""
    batch: _Batch | None = getattr(_local, "batch", None)
    if batch is not None and batch.conn is conn:
        batch.savepoints += 1
    execute_driver_sql(conn, f"SAVEPOINT {name}")


def current(store: Database) -> GroupCommit | None:
    """The group the calling thread writes through on ``store``, if any: none inside a write's
    body (a write opened there keeps a transaction of its own)."""
    group: GroupCommit | None = getattr(_local, "group", None)
    if group is None or group.store is not store or getattr(_local, "inside", False):
        return None
    return group


def shares(conn: sa.Connection) -> bool:
    """Whether ``conn`` is the connection of a batch the calling thread writes a body on: its
    transaction holds the other members' writes too, and what it locks stays locked to the
    batch's commit."""
    batch: _Batch | None = getattr(_local, "batch", None)
    return batch is not None and batch.conn is conn


class _Scope:
    """Where the bodies that run in it are undone when they fail without a savepoint of their
    own: the savepoint of a ``together()`` block, or (``savepoint`` None) the transaction,
    begun again."""

    def __init__(self, savepoint: str | None) -> None:
        self.savepoint = savepoint
        #: bodies kept in this scope: the next one needs a savepoint of its own
        self.written = 0


class _Batch:
    def __init__(self) -> None:
        self.opened = time.monotonic()
        self.conn: sa.Connection | None = None
        self.trans: sa.RootTransaction | None = None
        #: bodies joined (running, waiting to run, or done) and done
        self.members = 0
        self.done = 0
        #: the members' bodies, undone by beginning the transaction again
        self.scope = _Scope(None)
        #: savepoints opened (each a new name)
        self.savepoints = 0
        self.closed = False
        #: why the batch cannot commit (opening or the connection failed); every member raises it
        self.broken: BaseException | None = None
        self.finished = threading.Event()
        self.body = threading.Lock()


class _Block:
    """A ``together()`` block whose body is running: its batch, and the scope of its writes."""

    def __init__(self, batch: _Batch, scope: _Scope) -> None:
        self.batch = batch
        self.scope = scope


class GroupCommit:
    """One engine's batches; see the module docstring. ``size`` 1 means no batching."""

    def __init__(
        self,
        store: Database,
        *,
        size: int = 8,
        window: float = 0.002,
        hook: BatchHook | None = None,
    ) -> None:
        self.store = store
        self.size = max(1, size)
        self.window = max(0.0, window)
        self.hook = hook
        self._cond = threading.Condition()
        self._open: _Batch | None = None
        #: threads of this group working on a run: they may write soon, so a batch waits for
        #: them (up to the window) before it commits
        self._working = 0

    @property
    def joined(self) -> int:
        """Writes in the batch that is open for more, if any (0 when none is)."""
        with self._cond:
            batch = self._open
            return 0 if batch is None or batch.closed else batch.members

    @contextmanager
    def member(self) -> Iterator[None]:
        """While inside, the calling thread works on a run and its writes go through the group."""
        previous = getattr(_local, "group", None)
        _local.group = self
        with self._cond:
            self._working += 1
        try:
            yield
        finally:
            _local.group = previous
            with self._cond:
                self._working -= 1
                if self._open is not None and self._full(self._open):
                    self._cond.notify_all()  # the open batch need not wait for this thread

    @contextmanager
    def together(self) -> Iterator[None]:
        """The calling thread's writes inside the block are *one* member of a batch, whose body
        spans the block (creating an objective, claiming its run and saving its first turn).

        The block joins the open batch (or opens one) like a single write: it runs on the
        batch's connection, inside a savepoint, while the other members wait their turn. Each
        write inside it still rolls back alone when it fails (a savepoint of its own); an
        exception out of the block rolls back all of its writes and only them; the block is
        left only once the batch holding its writes is committed.
        """
        previous = getattr(_local, "group", None), getattr(_local, "block", None)
        batch, leader = self._join()
        _local.group = self
        try:
            failure = yield from self._body(batch, batch.scope, _nothing, spans_block=True)
        finally:
            _local.group, _local.block = previous
            self._leave(batch, leader)
        if failure is not None:
            raise failure

    @contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """A write transaction of the calling thread, committed with the batch it joins."""
        block: _Block | None = getattr(_local, "block", None)
        if block is not None:  # inside together(): a part of that block's body
            failure = yield from self._body(block.batch, block.scope, _itself)
            if block.batch.broken is not None:
                raise block.batch.broken
            if failure is not None:
                raise failure
            return
        batch, leader = self._join()
        try:
            failure = yield from self._body(batch, batch.scope, _itself)
        finally:
            self._leave(batch, leader)
        if failure is not None:
            raise failure

    def _join(self) -> tuple[_Batch, bool]:
        """Join the open batch as one member, or open a new one (then the caller leads it);
        returns once it is the member's turn to write (holding the batch's body lock)."""
        with self._cond:
            batch = self._open
            leader = batch is None or batch.closed or self._takes_no_more(batch)
            if leader:
                batch = self._open = _Batch()
                batch.body.acquire()  # the leader's body runs first, once the batch is open
            assert batch is not None
            batch.members += 1
            if not leader and self._full(batch):
                self._cond.notify_all()  # its leader commits once the bodies are done
        if leader:
            self._begin(batch)
        else:
            batch.body.acquire()
        return batch, leader

    def _leave(self, batch: _Batch, leader: bool) -> None:
        """The member's body is done: let the next one write, then commit the batch (the
        leader) or wait for its commit; raises why the batch did not commit, if it did not."""
        batch.body.release()
        with self._cond:
            batch.done += 1
            if self._ready(batch):
                self._cond.notify_all()
        if leader:
            self._commit(batch)
        else:
            batch.finished.wait()
        if batch.broken is not None:
            raise batch.broken

    def _body(
        self,
        batch: _Batch,
        scope: _Scope,
        shown: Callable[[sa.Connection], T],
        *,
        spans_block: bool = False,
    ) -> Generator[T, None, BaseException | None]:
        """Run one body (the caller's ``with`` block, which gets ``shown(connection)``) in
        ``scope`` on the batch's connection; the exception it raised, if any, is returned for
        raising after the commit.

        The body gets a savepoint only when something was kept in its scope before it:
        otherwise undoing the scope undoes exactly the body. A body that spans a
        :meth:`together` block lets the writes inside it join it (each a body of its own, in
        the block's scope); any other keeps a write opened inside it out of the batch.
        """
        if batch.broken is not None or batch.conn is None:
            return None  # nothing to write on: the caller raises ``broken``
        conn = batch.conn
        try:
            savepoint = self._savepoint(batch, conn) if scope.written else None
        except BaseException as broken:  # the connection itself failed: nothing commits
            batch.broken = broken
            return None
        if spans_block:
            _local.block = _Block(batch, _Scope(savepoint or scope.savepoint))
        _local.inside = not spans_block
        enclosing = getattr(_local, "batch", None)
        _local.batch = batch  # savepoints opened in the body count (:func:`open_savepoint`)
        try:
            yield shown(conn)
        except BaseException as exc:
            _local.inside = False
            if conn.invalidated:  # the body lost the connection: every member gets that fault
                batch.broken = exc
                return exc
            try:
                self._undo(batch, conn, savepoint or scope.savepoint)
            except BaseException as broken:  # the connection itself failed: nothing commits
                batch.broken = broken
            return exc
        finally:
            _local.inside = False
            _local.batch = enclosing
        scope.written += 1
        return None

    @staticmethod
    def _savepoint(batch: _Batch, conn: sa.Connection) -> str:
        """Open a savepoint of a new name (it stays open until the transaction ends)."""
        batch.savepoints += 1
        name = f"member_{batch.savepoints}"
        execute_driver_sql(conn, f"SAVEPOINT {name}")
        return name

    @staticmethod
    def _undo(batch: _Batch, conn: sa.Connection, savepoint: str | None) -> None:
        """Undo what was written since ``savepoint``, or (None) since the transaction began."""
        if savepoint is not None:
            execute_driver_sql(conn, f"ROLLBACK TO SAVEPOINT {savepoint}")
            return
        assert batch.trans is not None
        batch.trans.rollback()
        batch.trans = conn.begin()

    def _begin(self, batch: _Batch) -> None:
        try:
            conn = self.store.connections.take(WRITING)
            batch.conn = conn
            batch.trans = conn.begin()
        except BaseException as exc:
            batch.broken = exc

    def _commit(self, batch: _Batch) -> None:
        """The leader: wait for the batch to fill (or the window to pass), then commit it.

        Whatever happens, the members are let go: with the commit done, or with the reason it
        was not (``broken``), so none of them ever takes an uncommitted write for a durable one.
        """
        conn, committed, woke = batch.conn, False, None
        try:
            if not batch.closed:
                self._close(batch)
            if batch.broken is None and conn is not None and batch.trans is not None:
                if self.hook is not None:
                    self.hook(BATCH_POINTS[0], batch.members)
                batch.trans.commit()
                committed = True
                woke = take_wakes(conn)
                if self.hook is not None:
                    self.hook(BATCH_POINTS[1], batch.members)
        except BaseException as exc:
            if not committed:
                batch.broken = batch.broken or exc
            if not isinstance(exc, Exception):
                raise
        finally:
            if conn is not None:
                take_wakes(conn)  # a batch that did not commit wakes no one
                try:
                    # closed unless committed: that rolls back whatever did not commit
                    self.store.connections.give_back(conn, committed=committed)
                except Exception as exc:
                    if not committed:
                        batch.broken = batch.broken or exc
            batch.finished.set()
            if woke:
                self.store.wake_local_workers(woke)

    def _close(self, batch: _Batch) -> None:
        """Wait until the batch is full, or everyone working joined, or the window passed;
        then take no more members and wait for the bodies still running."""
        deadline = batch.opened + self.window
        with self._cond:
            try:
                while not self._full(batch):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            finally:
                batch.closed = True
                if self._open is batch:
                    self._open = None
            while batch.done < batch.members:
                self._cond.wait()

    def _ready(self, batch: _Batch) -> bool:
        """Whether the leader waiting in :meth:`_close` has something to do (it is woken only
        then, not at every member's leave): take no more members, or commit."""
        if batch.closed:
            return batch.done >= batch.members
        return self._takes_no_more(batch)

    def _full(self, batch: _Batch) -> bool:
        return self._takes_no_more(batch) or batch.members >= self._working

    def _takes_no_more(self, batch: _Batch) -> bool:
        return batch.members >= self.size or batch.savepoints >= SAVEPOINTS_PER_BATCH
