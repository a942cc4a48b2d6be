"""What ``openseal db upgrade --plan`` shows: the migrations a database is missing, each with
what it does and what it locks on PostgreSQL.

Every migration file declares both at module level (a test holds each one to it):

- ``SUMMARY``: one line saying what it changes;
- ``LOCKS``: what writers see while it runs on PostgreSQL —
  ``"none"`` (new tables, or an index built concurrently: writers go on),
  ``"brief"`` (a catalogue change that holds the table's lock for a moment, such as adding a
  nullable column; it waits behind, and holds up, transactions already open on the table),
  ``"writes"`` (writes to a table wait until it ends: an index built in the transaction, a
  table rewritten or every row updated; how long grows with the table).

On SQLite every migration holds the database's write lock while it runs (SQLite has one
writer at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openseal.runtime.store.tables.migrations import _config, current_revision

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.script import Script

#: the values a migration's ``LOCKS`` may take, least disruptive first
LOCK_LEVELS = ("none", "brief", "writes")


@dataclass(frozen=True)
class PlannedMigration:
    """One migration: its revision, what it does and what it locks (see the module)."""

    revision: str
    summary: str
    locks: str


@dataclass(frozen=True)
class UpgradePlan:
    """The revision a database is at (None: no schema yet), the head this openseal knows, and
    the migrations between them, oldest first."""

    current: str | None
    head: str
    pending: tuple[PlannedMigration, ...]


def declared(script: Script) -> PlannedMigration:
    """A migration script's declaration (``SUMMARY``, ``LOCKS``); a missing or malformed one
    raises ``ValueError`` naming the file."""
    module = script.module
    summary = getattr(module, "SUMMARY", None)
    locks = getattr(module, "LOCKS", None)
    if not isinstance(summary, str) or not summary.strip() or "\n" in summary:
        raise ValueError(f"{script.path}: SUMMARY must be one line saying what it changes")
    if locks not in LOCK_LEVELS:
        raise ValueError(f"{script.path}: LOCKS must be one of {', '.join(LOCK_LEVELS)}")
    return PlannedMigration(script.revision, summary, locks)


def every_migration() -> list[PlannedMigration]:
    """Every packaged migration's declaration, oldest first."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(_config()).walk_revisions()
    return [declared(script) for script in reversed(list(scripts))]


def plan(engine: sa.Engine | None) -> UpgradePlan:
    """What upgrading the database ``engine`` reaches (None: none yet) would apply; nothing is
    changed. A database migrated by a newer openseal is refused (``schema_newer``)."""
    from openseal.runtime.store.tables.migrations import check_not_newer, head_revision

    current = None if engine is None else current_revision(engine)
    check_not_newer(current)
    everything = every_migration()
    start = 0
    if current is not None:
        start = next(i for i, m in enumerate(everything) if m.revision == current) + 1
    return UpgradePlan(current, head_revision(), tuple(everything[start:]))
