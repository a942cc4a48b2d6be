"""Schema migrations (Alembic), shipped inside the package and run programmatically.

Users never need an ``alembic.ini``: :func:`upgrade` and :func:`current_revision` take an
engine. The CLI's ``openseal db upgrade`` calls :func:`upgrade`.

Alembic is imported only when a migration may be needed: opening a store that is already at
:func:`packaged_head` costs one query (:func:`database_revision`), not Alembic's start-up.
:func:`packaged_head` needs neither Alembic nor SQLAlchemy, for the reads without them
(:mod:`openseal.runtime.store.sqlite_reads`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from openseal.errors import StoreError

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config

_HERE = Path(__file__).resolve().parent
#: a migration file: its revision is the number it starts with (``0007_inbound_event_keys.py``)
_VERSION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def packaged_head() -> str:
    """The newest revision shipped, read from the version files' names (a test holds it to
    Alembic's own head)."""
    numbers = [m[1] for f in (_HERE / "versions").iterdir() if (m := _VERSION_FILE.match(f.name))]
    return max(numbers)


def database_revision(engine: sa.Engine) -> str | None:
    """The revision the database is at, in one query (None: no schema yet)."""
    import sqlalchemy as sa

    with engine.connect() as connection:
        if not sa.inspect(connection).has_table("alembic_version"):
            return None
        found = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalars()
        return next(iter(found.all()), None)


def _config(connection: sa.Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_HERE))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest schema revision this version of openseal knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the packaged migrations have no head"
    return head


def known_revisions() -> frozenset[str]:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_config())
    return frozenset(rev.revision for rev in script.walk_revisions())


def current_revision(engine: sa.Engine) -> str | None:
    """The schema revision the database is at, or ``None`` for an empty database."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def check_not_newer(revision: str | None) -> None:
    """Refuse a database migrated by a newer openseal: this code would misread it."""
    if revision is not None and revision not in known_revisions():
        raise StoreError(
            f"database schema {revision} is newer than this openseal (head {head_revision()}); "
            "upgrade openseal",
            code="schema_newer",
        )


def upgrade(engine: sa.Engine, revision: str = "head") -> str:
    """Migrate the database to ``revision`` (default: head) and return the revision reached."""
    from alembic import command

    check_not_newer(current_revision(engine))
    with (
        engine.connect() as connection,
        _foreign_keys_deferred_on_sqlite(connection),
        _without_reply_deadline(connection),
        _one_transaction_on_sqlite(connection),
    ):
        command.upgrade(_config(connection), revision)
        _check_foreign_keys(connection)
        if connection.dialect.name == "postgresql":
            # An autocommit block (online.py) hands the driver's connection back out of the
            # autocommit mode the store's connections keep (db/pg_begin.py): closed, not pooled.
            connection.invalidate()
    reached = current_revision(engine)
    assert reached is not None
    return reached


@contextmanager
def _one_transaction_on_sqlite(connection: sa.Connection) -> Iterator[None]:
    """SQLite: every pending migration in one transaction (all or none, the foreign keys
    checked before it commits). PostgreSQL: one transaction per migration (env.py), so a
    migration can leave it for work that must run outside any (``CREATE INDEX CONCURRENTLY``,
    :mod:`.online`); a failed migration rolls back alone, the ones before it stay applied."""
    if connection.dialect.name != "sqlite":
        yield
        return
    with connection.begin():
        yield


@contextmanager
def _without_reply_deadline(connection: sa.Connection) -> Iterator[None]:
    """Lift the reply deadline of a PostgreSQL connection (``runtime/store/db/deadlines.py``)
    while migrations run on it: one may rewrite or index a large table for longer than any
    store statement takes. The connection's TCP deadlines still hold."""
    raw = connection.connection.driver_connection
    deadline = getattr(raw, "reply_timeout", None)
    if deadline is None:
        yield
        return
    raw.reply_timeout = None  # type: ignore[union-attr]
    try:
        yield
    finally:
        raw.reply_timeout = deadline  # type: ignore[union-attr]


@contextmanager
def _foreign_keys_deferred_on_sqlite(connection: sa.Connection) -> Iterator[None]:
    """Turn SQLite's foreign-key enforcement off while migrations run, then on again.

    SQLite changes a table's constraints by building a new table, copying the rows and
    dropping the old one (Alembic's batch mode). With enforcement on, dropping a table that
    other rows point at fails ("FOREIGN KEY constraint failed") although the new table holds
    the same keys; the check after the migrations (:func:`_check_foreign_keys`) makes sure
    they do. The pragma is a no-op inside a transaction, so it is set on the driver's
    connection before the migration transaction begins.
    """
    if connection.dialect.name != "sqlite":
        yield
        return
    raw = connection.connection.driver_connection
    assert raw is not None
    raw.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        raw.execute("PRAGMA foreign_keys=ON")


def _check_foreign_keys(connection: sa.Connection) -> None:
    """Refuse (and so roll back) migrations that left a row pointing at nothing (SQLite)."""
    if connection.dialect.name != "sqlite":
        return
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        table, _rowid, parent, _fk = broken[0]
        raise StoreError(
            f"migrating left {len(broken)} rows pointing at nothing (first: {table} → "
            f"{parent}); the database was left as it was",
            code="internal_error",
        )
