"""The archive repository: the rows of ended run trees, read out, deleted and put back.

What is archived, and when, is decided above the store (:mod:`openseal.runtime.lifecycle`);
this repository only knows which rows belong to a set of runs, how they look as plain JSON
values (:func:`encode` / :func:`decode`), and the statements that move them. Every method works
in the caller's transaction (``with store.write() as conn``).

A run's rows: its events, turns, activities, proposals, approvals, actions with their spend
reservations, its agent requests and dependency groups and members, and the inbound events it
consumed (those stay live as consumed, only no longer naming the run, so a redelivery of their
key is still refused, until the key expires: then the live row goes too). Its objective and
the artefacts its proposals name are copied too, and deleted only when nothing live still
names them.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema

s = schema
#: the tables a run's rows live in, in the order they are put back (a row after those it
#: names); deleted in the reverse order
RUN_TABLES: tuple[sa.Table, ...] = (
    s.objectives, s.runs, s.events, s.turns, s.activities, s.inbound_events, s.artifacts,
    s.proposals, s.approvals, s.actions, s.spend_reservations, s.agent_requests,
    s.dependency_groups, s.dependency_members,
)  # fmt: skip
TABLES = {table.name: table for table in RUN_TABLES}
#: each table's column naming the run a row belongs to (objectives and artefacts: by the rows
#: of the runs, below)
RUN_COLUMN = {
    "runs": s.runs.c.id, "events": s.events.c.run_id, "turns": s.turns.c.run_id,
    "activities": s.activities.c.run_id, "inbound_events": s.inbound_events.c.consumed_by_run_id,
    "proposals": s.proposals.c.run_id, "approvals": s.approvals.c.run_id,
    "actions": s.actions.c.run_id, "spend_reservations": s.spend_reservations.c.run_id,
    "agent_requests": s.agent_requests.c.caller_run_id,
    "dependency_groups": s.dependency_groups.c.parent_run_id,
    "dependency_members": s.dependency_members.c.run_id,
}  # fmt: skip
ENDED = ("completed", "failed", "canceled")
CHUNK = 400  # ids per IN list: far below either dialect's limit on bound parameters


@dataclass(frozen=True)
class EndedRun:
    """An ended run with no parent: a tree the archive may take whole."""

    id: str
    scope: str
    workflow_digest: str
    ended_at: datetime


@dataclass(frozen=True)
class TreeRun:
    id: str
    parent_run_id: str | None
    status: str
    revision: int


def encode(table: sa.Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as JSON values: timestamps as ISO 8601 UTC text, bytes as base64."""
    out: dict[str, Any] = {}
    for column in table.columns:
        value = row[column.name]
        if value is not None and isinstance(column.type, schema.UtcTimestamp):
            value = value.isoformat()
        elif value is not None and isinstance(column.type, sa.LargeBinary):
            value = base64.b64encode(value).decode("ascii")
        out[column.name] = value
    return out


def decode(table: sa.Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`encode` undone: the values to insert."""
    out: dict[str, Any] = {}
    for column in table.columns:
        value = row.get(column.name)
        if value is not None and isinstance(column.type, schema.UtcTimestamp):
            value = datetime.fromisoformat(value)
        elif value is not None and isinstance(column.type, sa.LargeBinary):
            value = base64.b64decode(value)
        out[column.name] = value
    return out


def _chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start : start + CHUNK])


def _select_in(conn: sa.Connection, table: sa.Table, column: Any, ids: Sequence[str]) -> list[Any]:
    rows: list[Any] = []
    for chunk in _chunks(ids):
        rows += conn.execute(sa.select(table).where(column.in_(chunk))).mappings().all()
    return rows


class Archive(Repository):
    """``store.archive``: the rows of ended run trees, out of and back into the live store."""

    def ended_roots(
        self, conn: sa.Connection, before: datetime, after: tuple[datetime, str] | None, limit: int
    ) -> list[EndedRun]:
        """Up to ``limit`` ended runs started by no other run, ended before ``before``, oldest
        first after the cursor ``after`` (the last one's end and id)."""
        r = s.runs
        source: Any = r
        columns: tuple[sa.ColumnElement[Any], ...] = (r.c.id, r.c.scope, r.c.workflow_digest)
        ended: sa.ColumnElement[Any] = r.c.updated_at
        if self._store.dialect == "sqlite":
            # read from ix_runs_ended_roots: SQLite's planner, without statistics, would take an
            # index on status and sort every ended run instead
            source = sa.text("runs INDEXED BY ix_runs_ended_roots")
            columns = tuple(
                sa.literal_column(c, r.c[c].type) for c in ("id", "scope", "workflow_digest")
            )
            ended = sa.literal_column("updated_at", r.c.updated_at.type)
        stmt = (
            sa.select(*columns, ended)
            .select_from(source)
            .where(sa.text(s.ENDED_ROOTS), ended < before)
            .order_by(ended, columns[0])
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(
                sa.or_(ended > after[0], sa.and_(ended == after[0], columns[0] > after[1]))
            )
        return [EndedRun(row[0], row[1], row[2], row[3]) for row in conn.execute(stmt)]

    def tree(self, conn: sa.Connection, root_ids: Sequence[str]) -> list[TreeRun]:
        """The runs ``root_ids`` with every run below them (children, their children ...)."""
        r = s.runs
        columns = (r.c.id, r.c.parent_run_id, r.c.status, r.c.revision)
        found: list[TreeRun] = []
        level: Sequence[str] = root_ids
        column = r.c.id
        while level:
            rows: list[Any] = []
            for chunk in _chunks(level):
                rows += conn.execute(sa.select(*columns).where(column.in_(chunk))).all()
            found += [TreeRun(row[0], row[1], row[2], row[3]) for row in rows]
            level, column = [row[0] for row in rows], r.c.parent_run_id
        return found

    def rows(self, conn: sa.Connection, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Every row of the runs ``run_ids``, by table, as :func:`encode` writes them, with
        their objectives and the artefacts their proposals name."""
        out: dict[str, list[dict[str, Any]]] = {}
        for name, column in RUN_COLUMN.items():
            table = TABLES[name]
            out[name] = [encode(table, row) for row in _select_in(conn, table, column, run_ids)]
        objective_ids = sorted({row["objective_id"] for row in out["runs"]})
        out["objectives"] = [
            encode(s.objectives, row)
            for row in _select_in(conn, s.objectives, s.objectives.c.id, objective_ids)
        ]
        digests = sorted({row["artifact_digest"] for row in out["proposals"]})
        out["artifacts"] = [
            encode(s.artifacts, row)
            for row in _select_in(conn, s.artifacts, s.artifacts.c.digest, digests)
        ]
        return {table.name: out[table.name] for table in RUN_TABLES}

    def changed(self, conn: sa.Connection, revisions: Mapping[str, int]) -> list[str]:
        """Lock the runs (their rows first, invariant 15); those still live that are no
        longer ended or not at the revision they were read at (a run gone is not changed)."""
        r = s.runs
        seen: dict[str, tuple[str, int]] = {}
        for chunk in _chunks(sorted(revisions)):
            stmt = self._store.for_update(
                sa.select(r.c.id, r.c.status, r.c.revision).where(r.c.id.in_(chunk))
            )
            seen.update({row[0]: (row[1], row[2]) for row in conn.execute(stmt)})
        return sorted(
            run_id
            for run_id, (status, revision) in seen.items()
            if status not in ENDED or revision != revisions[run_id]
        )

    def delete(
        self, conn: sa.Connection, run_ids: Sequence[str], objective_ids: Sequence[str],
        digests: Sequence[str],
    ) -> dict[str, int]:  # fmt: skip
        """Delete the runs' rows; their objectives and artefacts only when no live row names
        them. The runs are locked first (:meth:`changed`). Rows counted by table."""
        counts: dict[str, int] = {}
        consumed = RUN_COLUMN["inbound_events"]
        for chunk in _chunks(run_ids):
            conn.execute(
                sa.update(s.inbound_events)
                .where(consumed.in_(chunk))
                .values(consumed_by_run_id=None)
            )
        for chunk in _chunks(run_ids):  # a child may be in a later chunk than its parent
            conn.execute(sa.update(s.runs).where(s.runs.c.id.in_(chunk)).values(parent_run_id=None))
        for table in reversed(RUN_TABLES):
            if table.name in RUN_COLUMN and table.name != "inbound_events":
                counts[table.name] = sum(
                    conn.execute(sa.delete(table).where(RUN_COLUMN[table.name].in_(c))).rowcount
                    for c in _chunks(run_ids)
                )
        counts["objectives"] = self._delete_unnamed_objectives(conn, objective_ids)
        counts["artifacts"] = self._delete_unnamed_artifacts(conn, digests)
        return counts

    def _delete_unnamed_objectives(self, conn: sa.Connection, ids: Sequence[str]) -> int:
        o, r, f = s.objectives, s.runs, s.trigger_firings
        named = sa.or_(
            sa.exists().where(r.c.objective_id == o.c.id),
            sa.exists().where(f.c.objective_id == o.c.id),
        )
        return sum(
            conn.execute(sa.delete(o).where(o.c.id.in_(chunk), ~named)).rowcount
            for chunk in _chunks(ids)
        )

    def _delete_unnamed_artifacts(self, conn: sa.Connection, digests: Sequence[str]) -> int:
        a, p = s.artifacts, s.proposals
        named = sa.exists().where(p.c.artifact_digest == a.c.digest)
        # only rows holding their bytes: a file-backed artefact's file is left where it is
        return sum(
            conn.execute(
                sa.delete(a).where(a.c.digest.in_(chunk), a.c.content.is_not(None), ~named)
            ).rowcount
            for chunk in _chunks(digests)
        )

    def restore(self, conn: sa.Connection, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> int:
        """Put archived rows back (:meth:`rows`' shape), each unless a row with its key is
        live; an inbound event that is live names its run again. Rows inserted."""
        inserted = 0
        for table in RUN_TABLES:
            keys = [column.name for column in table.primary_key.columns]
            for row in _parents_first(table, rows.get(table.name, ())):
                values = decode(table, row)
                if conn.execute(self._store.insert_new(table, *keys), values).first():
                    inserted += 1
                elif table is s.inbound_events and values["consumed_by_run_id"] is not None:
                    conn.execute(
                        sa.update(table)
                        .where(table.c.id == values["id"], RUN_COLUMN[table.name].is_(None))
                        .values(consumed_by_run_id=values["consumed_by_run_id"])
                    )
        return inserted

    def expire_keys(
        self, conn: sa.Connection, idempotency_before: datetime, delivery_before: datetime
    ) -> tuple[int, int, int]:
        """Forget the API's idempotency keys stored before ``idempotency_before`` and the
        delivery keys of inbound events received before ``delivery_before``; then remove the
        inbound events received before it whose consuming run was archived (its batch holds
        them: the live row only kept their key). Events not consumed, or consumed by a live run,
        stay. How many keys of each kind, and events removed."""
        i, e = s.idempotency_keys, s.inbound_events
        keys = conn.execute(sa.delete(i).where(i.c.created_at < idempotency_before)).rowcount
        deliveries = conn.execute(
            sa.update(e)
            .where(e.c.received_at < delivery_before, e.c.delivery_key.is_not(None))
            .values(delivery_key=None)
        ).rowcount
        archived = conn.execute(
            sa.delete(e).where(
                e.c.received_at < delivery_before,
                e.c.consumed_at.is_not(None),
                e.c.consumed_by_run_id.is_(None),
            )
        ).rowcount
        return keys, deliveries, archived


def _parents_first(table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Runs in an order where a parent comes before its children; other tables as given."""
    if table is not s.runs:
        return list(rows)
    ids = {row["id"] for row in rows}
    depth: dict[str, int] = {}
    by_id = {row["id"]: row for row in rows}

    def level(run_id: str) -> int:
        if run_id not in depth:
            parent = by_id[run_id]["parent_run_id"]
            depth[run_id] = 0 if parent not in ids else level(parent) + 1
        return depth[run_id]

    return sorted(rows, key=lambda row: level(row["id"]))
