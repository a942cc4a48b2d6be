"""What every list of the store shares: newest first, a page of at most ``limit`` rows, a
cursor (``after``: the last id of the previous page), rows created ``since`` a moment, and
rows of one workflow.

Ids sort by creation time (:func:`openseal.runtime.clock.new_id`), so "newest first" is
"highest id first" and a page after a cursor is the rows with a lower id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.store import schema


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


def newest_first(stmt: sa.Select[Any], table: sa.Table, query: ListQuery) -> sa.Select[Any]:
    """``stmt`` over ``table`` (with ``id``, ``status`` and ``created_at``) narrowed to the page
    ``query`` asks for; the workflow filter is the caller's (it depends on the table)."""
    stmt = stmt.order_by(table.c.id.desc()).limit(query.limit)
    if query.after is not None:
        stmt = stmt.where(table.c.id < query.after)
    if query.since is not None:
        stmt = stmt.where(table.c.created_at >= query.since)
    if query.status is not None:
        stmt = stmt.where(table.c.status == query.status)
    return stmt


def workflow_digests(name: str) -> sa.Select[Any]:
    """The digests of every stored version of workflow ``name`` (a run pins one of them)."""
    versions = schema.definition_versions
    return sa.select(versions.c.digest).where(
        versions.c.kind == "workflow", versions.c.name == name
    )


def runs_of_workflow(name: str) -> sa.Select[Any]:
    """The ids of the runs of workflow ``name``, for tables that belong to a run."""
    return sa.select(schema.runs.c.id).where(
        schema.runs.c.workflow_digest.in_(workflow_digests(name))
    )


def runs_in_scopes(scopes: tuple[str, ...]) -> sa.Select[Any]:
    """The ids of the runs in ``scopes``, for tables that belong to a run."""
    return sa.select(schema.runs.c.id).where(schema.runs.c.scope.in_(list(scopes)))
