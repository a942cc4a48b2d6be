"""Alembic environment: always run online, on the connection handed over by ``upgrade``."""

from __future__ import annotations

from alembic import context

from openseal.runtime.store.tables.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "openseal migrations run via openseal.runtime.store.tables.migrations.upgrade(engine)"
    )

# PostgreSQL: one transaction per migration, which one may leave for work no transaction may
# hold (migrations/online.py); SQLite: the caller's one transaction around them all.
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    transaction_per_migration=connection.dialect.name == "postgresql",
)
with context.begin_transaction():
    context.run_migrations()
