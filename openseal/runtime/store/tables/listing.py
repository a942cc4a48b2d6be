"""What every list of the store shares: newest first, a page of at most ``limit`` rows, a
cursor (``after``: the last id of the previous page), rows created ``since`` a moment, and
rows of one workflow.

Ids sort by creation time (:func:`openseal.runtime.clock.new_id`), so "newest first" is
"highest id first" and a page after a cursor is the rows with a lower id.

The page's values are bound by name (``limit``, ``after``, ``since``, ``status``,
``workflow``), so the SQL of a page depends only on which filters it has: the reads without
SQLAlchemy (:mod:`.sqlite_reads`) run that SQL, rendered ahead, with the same values. The
statement helpers import SQLAlchemy when called, so :class:`ListQuery` imports without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlalchemy as sa

#: the filters a page may have, in the order they narrow it (each a bound value by that name)
FILTERS = ("after", "since", "status", "workflow")


@dataclass(frozen=True)
class ListQuery:
    """One page of a list: at most ``limit`` rows, newest first, older than the row ``after``
    (an id), created at or after ``since``, of workflow ``workflow`` (by name), of
    ``status`` (checked by the caller against the status names of what is listed) and in one
    of ``scopes`` (each repository knows where its rows' scope is)."""

    limit: int = 100
    after: str | None = None
    since: datetime | None = None
    status: str | None = None
    workflow: str | None = None
    #: only rows in these scopes (None: every scope)
    scopes: tuple[str, ...] | None = None

    def filters(self) -> tuple[str, ...]:
        """The :data:`FILTERS` this page has: what its SQL depends on, besides ``scopes``."""
        return tuple(name for name in FILTERS if getattr(self, name) is not None)


def newest_first(stmt: sa.Select[Any], table: sa.Table, query: ListQuery) -> sa.Select[Any]:
    """``stmt`` over ``table`` (with ``id``, ``status`` and ``created_at``) narrowed to the page
    ``query`` asks for; the workflow filter is the caller's (it depends on the table)."""
    import sqlalchemy as sa

    stmt = stmt.order_by(table.c.id.desc()).limit(sa.bindparam("limit", query.limit))
    if query.after is not None:
        stmt = stmt.where(table.c.id < bound("after", query.after, table.c.id))
    if query.since is not None:
        stmt = stmt.where(table.c.created_at >= bound("since", query.since, table.c.created_at))
    if query.status is not None:
        stmt = stmt.where(table.c.status == bound("status", query.status, table.c.status))
    return stmt


def bound(name: str, value: Any, column: sa.ColumnElement[Any]) -> sa.BindParameter[Any]:
    """``value`` bound as ``name``, stored as ``column`` stores it (a timestamp as epoch
    seconds), as it would be when compared unnamed."""
    import sqlalchemy as sa

    return sa.bindparam(name, value, type_=column.type)


def workflow_digests(name: str) -> sa.Select[Any]:
    """The digests of every stored version of workflow ``name`` (a run pins one of them)."""
    import sqlalchemy as sa

    from openseal.runtime.store.tables import schema

    versions = schema.definition_versions
    return sa.select(versions.c.digest).where(
        versions.c.kind == "workflow", versions.c.name == bound("workflow", name, versions.c.name)
    )


def runs_of_workflow(name: str) -> sa.Select[Any]:
    """The ids of the runs of workflow ``name``, for tables that belong to a run."""
    import sqlalchemy as sa

    from openseal.runtime.store.tables import schema

    return sa.select(schema.runs.c.id).where(
        schema.runs.c.workflow_digest.in_(workflow_digests(name))
    )


def runs_in_scopes(scopes: tuple[str, ...]) -> sa.Select[Any]:
    """The ids of the runs in ``scopes``, for tables that belong to a run."""
    import sqlalchemy as sa

    from openseal.runtime.store.tables import schema

    return sa.select(schema.runs.c.id).where(schema.runs.c.scope.in_(list(scopes)))
