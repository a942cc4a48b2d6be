"""What a connection is told about the transaction it carries: which ``BEGIN`` it starts with,
and the runs to wake once it commits. Shared by the store's own transactions
(:mod:`.base`) and the batches of group commit (:mod:`.group_commit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import sqlalchemy as sa

# Execution option read by the SQLite ``begin`` hook: which BEGIN to emit. Without it the hook
# emits ``BEGIN IMMEDIATE``, what every write transaction needs. A connection kept between
# transactions keeps its options, so each kind of transaction asks for its own (setting an
# option runs the option events and the dialect's option handling: only a connection whose
# last transaction was of the other kind, or a new one, has it set).
BEGIN_MODE = "openseal_begin"
#: the execution options of a write transaction's connection, and of a read's
WRITING: Mapping[str, str] = MappingProxyType({BEGIN_MODE: "IMMEDIATE"})
READING: Mapping[str, str] = MappingProxyType({BEGIN_MODE: "DEFERRED"})
# Connection info key: the runs to wake this process's idle workers for once the transaction
# commits (a set of run ids).
WAKE_AFTER_COMMIT = "openseal_wake"


def take_wakes(conn: sa.Connection) -> set[str] | None:
    """The runs a transaction on ``conn`` made runnable (:data:`WAKE_AFTER_COMMIT`), taken off
    the connection. A connection that was lost has none: its pooled record's info is cleared
    when it reconnects, and reading ``conn.info`` would reconnect it, or raise
    ``PendingRollbackError`` while its failed transaction is still open."""
    if conn.invalidated:
        return None
    woke: set[str] | None = conn.info.pop(WAKE_AFTER_COMMIT, None)
    return woke
