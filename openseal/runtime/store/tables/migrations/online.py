"""Schema changes that leave writers running on PostgreSQL.

A plain ``CREATE INDEX`` holds a lock that blocks every insert, update and delete on the
table until the index is built: on a large ``runs`` table, minutes in which no worker can
write. :func:`create_index` builds it ``CONCURRENTLY`` instead, outside any transaction
(Alembic's ``autocommit_block``): writers go on while it scans. A build that stopped part-way
(the process killed, the connection lost) leaves an invalid index behind, which the next
attempt drops and builds again. On SQLite, which has one writer at a time anyway, the index is
created in the migration's transaction.

A migration that fills a new column for every existing row writes in batches
(:func:`update_in_batches`), each its own short transaction on PostgreSQL, so no writer waits
for the whole table and no row stays locked longer than one batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

#: rows one batch of a backfill updates
BATCH_ROWS = 5000
#: seconds a backfill waits when every row it has left is held by writers
SKIPPED_ROWS_WAIT = 0.05


def create_index(
    name: str, table: str, columns: Sequence[str], *, where: str | None = None
) -> None:
    """Create index ``name`` on ``table`` (partial when ``where`` is given), without blocking
    writers on PostgreSQL."""
    predicate = sa.text(where) if where is not None else None
    if op.get_bind().dialect.name != "postgresql":
        op.create_index(name, table, list(columns), sqlite_where=predicate)
        return
    with op.get_context().autocommit_block():
        _drop_if_invalid(name)
        op.create_index(
            name, table, list(columns), postgresql_where=predicate,
            postgresql_concurrently=True, if_not_exists=True,
        )  # fmt: skip


def drop_index(name: str, table: str) -> None:
    """Drop index ``name`` without blocking writers on PostgreSQL."""
    if op.get_bind().dialect.name != "postgresql":
        op.drop_index(name, table_name=table)
        return
    with op.get_context().autocommit_block():
        op.drop_index(name, table_name=table, postgresql_concurrently=True, if_exists=True)


def _drop_if_invalid(name: str) -> None:
    invalid = (
        op.get_bind()
        .execute(
            sa.text(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = :name AND c.relnamespace = current_schema()::regnamespace "
                "AND NOT i.indisvalid"
            ),
            {"name": name},
        )
        .first()
    )
    if invalid is not None:
        op.execute(sa.text(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"'))


def update_in_batches(
    table: str, assignment: str, where: str, *, key: str = "id", batch_rows: int = BATCH_ROWS
) -> int:
    """``UPDATE table SET assignment WHERE where`` over every matching row, ``batch_rows`` at a
    time, each batch committed on its own on PostgreSQL; ``where`` must stop matching a row
    once it is updated. Returns the rows updated.

    A batch skips rows a writer holds (``FOR UPDATE SKIP LOCKED``) and takes them in a later
    batch: it never waits for a writer's lock while holding its own, so it cannot deadlock
    with one, and writers wait for it one batch at most."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        whole = sa.text(f"UPDATE {table} SET {assignment} WHERE {where}")
        return int(bind.execute(whole).rowcount)
    batch = sa.text(
        f"UPDATE {table} SET {assignment} WHERE {key} IN (SELECT {key} FROM {table} "
        f"WHERE {where} ORDER BY {key} LIMIT {int(batch_rows)} FOR UPDATE SKIP LOCKED)"
    )
    left = sa.text(f"SELECT 1 FROM {table} WHERE {where} LIMIT 1")
    total = 0
    with op.get_context().autocommit_block():
        while True:  # in autocommit, each batch's statement commits on its own
            done = int(op.get_bind().execute(batch).rowcount)
            total += done
            if done == 0:
                if op.get_bind().execute(left).first() is None:
                    return total
                time.sleep(SKIPPED_ROWS_WAIT)  # every row left is a writer's for now
