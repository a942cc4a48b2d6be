"""Schema migrations (Alembic), shipped inside the package and run programmatically.

Users never need an ``alembic.ini``: :func:`upgrade` and :func:`current_revision` take an
engine. The CLI's ``openseal db upgrade`` calls :func:`upgrade`.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from openseal.errors import StoreError

_HERE = Path(__file__).resolve().parent


def _config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest schema revision this version of openseal knows."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the packaged migrations have no head"
    return head


def known_revisions() -> frozenset[str]:
    script = ScriptDirectory.from_config(_config())
    return frozenset(rev.revision for rev in script.walk_revisions())


def current_revision(engine: sa.Engine) -> str | None:
    """The schema revision the database is at, or ``None`` for an empty database."""
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
    check_not_newer(current_revision(engine))
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)
    reached = current_revision(engine)
    assert reached is not None
    return reached
