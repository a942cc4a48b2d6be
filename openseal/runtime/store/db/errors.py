"""Errors the store raises on purpose, each a :class:`StoreError` with a stable code.

SQLAlchemy is imported only when a database fault is looked at (:data:`DatabaseFailure`,
:func:`transient`, :func:`describe_fault`), so the reads without it (:mod:`.sqlite_reads`)
can raise :class:`NotFound`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openseal.errors import ClaimLost, OpenSealError, StoreError

if TYPE_CHECKING:
    import sqlalchemy as sa


class NotFound(StoreError):
    code = "not_found"


class InvalidStatus(StoreError):
    """The entity's current status does not allow the operation."""

    code = "invalid_status"


class IdempotencyConflict(StoreError):
    """A request key, digest or activity id was reused for different content."""

    code = "idempotency_conflict"


class InRecoveryMode(StoreError):
    """The store is in recovery mode after a restore (invariant 18), read by the statement that
    would have started work: nothing was written."""

    code = "recovery_mode"


class StaleRevision(StoreError):
    """A mutation named an ``expected_revision`` the entity is no longer at."""

    code = "stale_revision"


class StaleEpoch(ClaimLost):
    """A write was fenced off: another claim (or a cancel/pause) took the run over.

    The engine must stop working on the run at once; its work is not lost because everything
    accepted so far is in events and activities. Like every :class:`ClaimLost` it is not an
    ``Exception``: a broad ``except Exception`` cannot swallow it.
    """

    code = "stale_epoch"

    def __init__(self, message: str, *, run_id: str, claim_epoch: int, run_epoch: int) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.claim_epoch = claim_epoch
        self.run_epoch = run_epoch


class ArtifactCorrupt(StoreError):
    """An artefact's bytes no longer hash to its digest."""

    code = "artifact_corrupt"


__all__ = [
    "ArtifactCorrupt",
    "DatabaseFailure",
    "DriverFailure",
    "IdempotencyConflict",
    "InRecoveryMode",
    "InvalidStatus",
    "NotFound",
    "StaleEpoch",
    "StaleRevision",
    "StoreError",
    "describe_fault",
    "transient",
]

if TYPE_CHECKING:
    #: anything the database layer raises: a fault to retry or report, never a refusal
    DatabaseFailure = sa.exc.SQLAlchemyError
    #: a failure the database driver reported (unreachable, busy, a lock or statement
    #: timeout...)
    DriverFailure = sa.exc.DBAPIError


def __getattr__(name: str) -> Any:
    """:data:`DatabaseFailure` and :data:`DriverFailure`, SQLAlchemy's classes, on first use."""
    if name not in ("DatabaseFailure", "DriverFailure"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import sqlalchemy as sa

    found = {"DatabaseFailure": sa.exc.SQLAlchemyError, "DriverFailure": sa.exc.DBAPIError}
    globals().update(found)
    return found[name]


# -- faults that retrying cures ----------------------------------------------------------

#: SQLSTATE classes and codes of PostgreSQL faults a retried transaction can get past:
#: connection exceptions (08), transaction rollbacks — serialization failures and
#: deadlocks (40), lock not available (55P03), statement timeouts and cancellation (57014),
#: an administrator shutting a session down (57P01–57P03)
TRANSIENT_SQLSTATE_CLASSES = frozenset({"08", "40"})
TRANSIENT_SQLSTATES = frozenset({"55P03", "57014", "57P01", "57P02", "57P03"})


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` is an ordinary database fault: dropping the work and retrying it (with
    backoff) is safe and will likely succeed — a dropped connection, a lock or statement
    timeout, a deadlock, a serialization failure, SQLite's ``database is locked``.

    Bugs (a constraint violated, a malformed statement) are not transient.
    """
    import sqlalchemy as sa

    if isinstance(exc, sa.exc.DisconnectionError | sa.exc.TimeoutError):
        return True  # the pool could not hand out a working connection in time
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES or sqlstate in TRANSIENT_SQLSTATES
    # SQLite (no SQLSTATE): busy and locked databases, disk I/O hiccups are OperationalError
    return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError)


#: a prepared statement of psycopg's (``_pg3_…``) already there, not there, or another one
#: under its name (a protocol violation: the parameters do not fit): another session's names
#: met through a transaction-mode pooler that does not track them (poolers.py)
POOLED_PREPARED_SQLSTATES = frozenset({"42P05", "26000", "08P01"})
POOLED_PREPARED_HINT = (
    "behind a pooler in transaction mode, add prepare_threshold=none to the database URL"
)


def describe_fault(exc: BaseException) -> str:
    """One line naming a fault for people and logs: never SQL text or bound parameters."""
    import sqlalchemy as sa

    if isinstance(exc, sa.exc.StatementError) and exc.orig is not None:
        origin: BaseException = exc.orig
        lines = str(origin).strip().splitlines()
        told = f"{type(origin).__name__}: {lines[0] if lines else 'database error'}"
        if getattr(origin, "sqlstate", None) in POOLED_PREPARED_SQLSTATES and "_pg3_" in told:
            told += f" ({POOLED_PREPARED_HINT})"
        return told
    if isinstance(exc, OpenSealError | ClaimLost):
        return f"{type(exc).__name__}: {exc.message}"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
