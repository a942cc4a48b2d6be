"""The triggers repository: trigger deployments, operators' status, and firings.

A trigger is a deployment whose active version has kind ``trigger``. Each occurrence it
handles — a schedule's time or an inbound event — is one ``trigger_firings`` row, unique on
``(trigger_name, occurrence_key)``. :meth:`Triggers.record` writes the rows of a batch of
occurrences under the trigger's lock, and a ``started`` row in the same transaction as the
objective it creates: two workers that both see an occurrence due start one objective, and a
worker killed before the commit leaves nothing, so the next one starts it.

The schedule's *cursor* is the newest occurrence recorded for it (or when the trigger became
active); occurrences after it are due. Which of them fire after a downtime, and what an
occurrence does while an objective it started is open, is the caller's policy, passed in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from openseal.errors import OpenSealError
from openseal.runtime.clock import new_id
from openseal.runtime.statuses import ObjectiveStatus
from openseal.runtime.store.db.errors import InvalidStatus, NotFound
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.records import TRIGGER_ACTOR, TriggerFiring
from openseal.runtime.store.tables.statements import oldest_queued_firing

states = schema.trigger_states
firings = schema.trigger_firings
objectives = schema.objectives
deployments = schema.deployments
versions = schema.definition_versions
activations = schema.deployment_activations

TRIGGER_KIND = "trigger"
STATUSES = ("active", "paused", "retired")
OPEN_OBJECTIVE = (ObjectiveStatus.ACTIVE, ObjectiveStatus.PAUSED)


@dataclass(frozen=True)
class TriggerDeployment:
    """An active trigger version with what the scheduler and the listing need."""

    name: str
    digest: str
    document: dict[str, Any]
    #: ``active``, ``paused`` or ``retired`` (for this version)
    status: str
    #: when the current stretch of being active began: the first activation, or the
    #: activation of a version after a retired one
    since: datetime
    #: the first activation of the deployment (an interval schedule counts from it)
    anchor: datetime
    #: the newest schedule occurrence recorded (None: none yet)
    last_occurrence: datetime | None
    #: firings waiting for an open objective to end (``overlap = "queue"``)
    queued: int

    @property
    def cursor(self) -> datetime:
        """Schedule occurrences after this are due."""
        if self.last_occurrence is None or self.last_occurrence < self.since:
            return self.since
        return self.last_occurrence


@dataclass(frozen=True)
class Occurrence:
    """One occurrence to record: ``inputs`` to start the workflow with, or why not."""

    key: str
    source: str
    at: datetime
    inputs: dict[str, Any] | None = None
    #: recorded without starting anything: ``missed`` (catch-up), ``failed`` (inputs)
    outcome: str | None = None
    detail: str | None = None
    inbound_event_id: str | None = None


#: starts the objective of a firing, in the transaction ``conn`` that records it, with the
#: firing's inputs and actor; returns the objective's id, or raises :class:`OpenSealError`
#: having written nothing (the firing is then ``failed``, and says why). The caller decides
#: what a firing starts (the engine's triggers, through ``store.objectives``).
StartObjective = Callable[[sa.Connection, dict[str, Any], str], str]


def _firing_figures(
    conn: sa.Connection, wanted: list[str]
) -> tuple[dict[str, object], dict[str, int]]:
    """For each trigger of ``wanted``: its last scheduled occurrence, and its queued firings."""
    last: dict[str, object] = dict(
        conn.execute(
            sa.select(firings.c.trigger_name, sa.func.max(firings.c.occurred_at))
            .where(firings.c.trigger_name.in_(wanted), firings.c.source == "schedule")
            .group_by(firings.c.trigger_name)
        ).all()
    )
    queued: dict[str, int] = dict(
        conn.execute(
            sa.select(firings.c.trigger_name, sa.func.count())
            .where(firings.c.trigger_name.in_(wanted), firings.c.outcome == "queued")
            .group_by(firings.c.trigger_name)
        ).all()
    )
    return last, queued


class Triggers(Repository):
    """``store.triggers``: trigger deployments, their status and their firings."""

    def deployments(self, names: Sequence[str] | None = None) -> list[TriggerDeployment]:
        """Every deployed trigger (or those of ``names``), by name."""
        with self._store.read() as conn:
            return self.deployments_in(conn, names)

    def deployments_in(
        self, conn: sa.Connection, names: Sequence[str] | None = None
    ) -> list[TriggerDeployment]:
        stmt = (
            sa.select(deployments.c.name, versions.c.digest, versions.c.document)
            .join(versions, versions.c.digest == deployments.c.active_digest)
            .where(versions.c.kind == TRIGGER_KIND)
            .order_by(deployments.c.name)
        )
        if names is not None:
            stmt = stmt.where(deployments.c.name.in_(sorted(set(names))))
        active = conn.execute(stmt).all()
        if not active:
            return []
        wanted = [row.name for row in active]
        set_by = {
            row.name: row
            for row in conn.execute(sa.select(states).where(states.c.name.in_(wanted))).mappings()
        }
        spans = {
            row.name: (row.first, row.last)
            for row in conn.execute(
                sa.select(
                    activations.c.name,
                    sa.func.min(activations.c.at).label("first"),
                    sa.func.max(activations.c.at).label("last"),
                )
                .where(activations.c.name.in_(wanted))
                .group_by(activations.c.name)
            )
        }
        last, queued = _firing_figures(conn, wanted)
        out = []
        for row in active:
            first, latest = spans.get(row.name, (None, None))
            anchor = _timestamp(first) or self._store.now()
            status, since = _status(set_by.get(row.name), row.digest, anchor, _timestamp(latest))
            out.append(
                TriggerDeployment(
                    name=row.name,
                    digest=row.digest,
                    document=_document(row.document),
                    status=status,
                    since=since,
                    anchor=anchor,
                    last_occurrence=_timestamp(last.get(row.name)),
                    queued=int(queued.get(row.name, 0)),
                )
            )
        return out

    # -- firing ------------------------------------------------------------------------

    def record(
        self,
        trigger: TriggerDeployment,
        occurrences: Sequence[Occurrence],
        *,
        overlap: str,
        start: StartObjective,
        before_commit: Callable[[list[str]], None] | None = None,
        room: bool = True,
    ) -> list[TriggerFiring]:
        """Record ``occurrences`` (oldest first) of ``trigger``; return the rows this call wrote.

        Under the trigger's lock, in one transaction: an occurrence already recorded (by
        another worker, or an event delivered again) is left alone; the others start an
        objective with their inputs (``start``), or — while an objective this trigger
        started is open — are ``skipped`` or ``queued`` as ``overlap`` says (``allow``
        starts one anyway). Nothing is written if the trigger stopped being active.
        ``before_commit`` (a crash test's hook) gets the written occurrences' keys. Without
        ``room`` (the workflow's ready queue is full) every occurrence is ``queued``.
        """
        with self._store.write() as conn:
            written = self.record_in(
                conn, trigger, occurrences, overlap=overlap, start=start, room=room
            )
            if before_commit is not None and written:
                before_commit([f.occurrence_key for f in written])
            return written

    def record_in(
        self,
        conn: sa.Connection,
        trigger: TriggerDeployment,
        occurrences: Sequence[Occurrence],
        *,
        overlap: str,
        start: StartObjective,
        room: bool = True,
    ) -> list[TriggerFiring]:
        """:meth:`record` in the caller's transaction (an inbound event's: its firings commit
        with the stored event, or not at all)."""
        self._store.lock_event_name(conn, f"trigger:{trigger.name}")
        current = self.deployments_in(conn, [trigger.name])
        if not current or current[0].status != "active":
            return []
        digest = current[0].digest
        written = []
        for occurrence in occurrences:
            if self._recorded(conn, trigger.name, occurrence.key):
                continue
            outcome = occurrence.outcome
            if outcome is None and not room:
                outcome = "queued"  # it waits for the ready queue to have room
            elif outcome is None and overlap != "allow":
                busy = self._open(conn, trigger.name) or (
                    overlap == "queue" and self._oldest_queued(conn, trigger.name) is not None
                )
                if busy:
                    outcome = "queued" if overlap == "queue" else "skipped"
            firing = self._insert(conn, trigger.name, digest, occurrence, outcome)
            if outcome is None:
                firing = self._start(conn, firing, start)
            written.append(firing)
        return written

    def start_queued(
        self, trigger: TriggerDeployment, *, start: StartObjective
    ) -> TriggerFiring | None:
        """Start the oldest queued firing of ``trigger`` once no objective it started is open."""
        with self._store.write() as conn:
            self._store.lock_event_name(conn, f"trigger:{trigger.name}")
            current = self.deployments_in(conn, [trigger.name])
            if not current or current[0].status != "active" or self._open(conn, trigger.name):
                return None
            queued = self._oldest_queued(conn, trigger.name)
            if queued is None:
                return None
            return self._start(conn, queued, start)

    def _start(
        self, conn: sa.Connection, firing: TriggerFiring, start: StartObjective
    ) -> TriggerFiring:
        inputs = dict(firing.inputs or {})
        actor = f"{TRIGGER_ACTOR}{firing.trigger_name}"
        values: dict[str, Any]
        try:
            objective_id = start(conn, inputs, actor)
        except OpenSealError as exc:
            # Nothing was written for the objective: the occurrence is spent, and says why.
            values = {"outcome": "failed", "detail": str(exc)}
        else:
            values = {
                "outcome": "started",
                "objective_id": objective_id,
                "started_at": self._store.now(),
            }
        conn.execute(sa.update(firings).where(firings.c.id == firing.id).values(**values))
        return TriggerFiring(**{**firing.__dict__, **values})

    def _insert(
        self,
        conn: sa.Connection,
        name: str,
        digest: str,
        occurrence: Occurrence,
        outcome: str | None,
    ) -> TriggerFiring:
        firing = TriggerFiring(
            id=new_id(),
            trigger_name=name,
            trigger_digest=digest,
            occurrence_key=occurrence.key,
            source=occurrence.source,
            occurred_at=occurrence.at,
            inbound_event_id=occurrence.inbound_event_id,
            outcome=outcome or "starting",
            objective_id=None,
            inputs=occurrence.inputs,
            detail=occurrence.detail,
            recorded_at=self._store.now(),
            started_at=None,
        )
        conn.execute(sa.insert(firings).values(**firing.__dict__))
        return firing

    def _recorded(self, conn: sa.Connection, name: str, key: str) -> bool:
        stmt = sa.select(firings.c.id).where(
            firings.c.trigger_name == name, firings.c.occurrence_key == key
        )
        return conn.execute(stmt).first() is not None

    def _open(self, conn: sa.Connection, name: str) -> bool:
        stmt = (
            sa.select(firings.c.id)
            .join(objectives, objectives.c.id == firings.c.objective_id)
            .where(firings.c.trigger_name == name, objectives.c.status.in_(OPEN_OBJECTIVE))
            .limit(1)
        )
        return conn.execute(stmt).first() is not None

    def _oldest_queued(self, conn: sa.Connection, name: str) -> TriggerFiring | None:
        row = conn.execute(oldest_queued_firing(name)).mappings().first()
        return None if row is None else TriggerFiring.from_row(row)

    # -- reading and operating ---------------------------------------------------------

    def firings(self, name: str, *, limit: int = 100) -> list[TriggerFiring]:
        """``name``'s firings, newest occurrence first."""
        stmt = (
            sa.select(firings)
            .where(firings.c.trigger_name == name)
            .order_by(firings.c.occurred_at.desc(), firings.c.id.desc())
            .limit(limit)
        )
        with self._store.read() as conn:
            return [TriggerFiring.from_row(row) for row in conn.execute(stmt).mappings()]

    def last_firings(self, names: Sequence[str]) -> dict[str, TriggerFiring]:
        """The most recently recorded firing of each of ``names`` that has one."""
        newest = (
            sa.select(firings.c.trigger_name, sa.func.max(firings.c.recorded_at).label("at"))
            .where(firings.c.trigger_name.in_(sorted(set(names))))
            .group_by(firings.c.trigger_name)
            .subquery()
        )
        stmt = (
            sa.select(firings)
            .join(
                newest,
                sa.and_(
                    newest.c.trigger_name == firings.c.trigger_name,
                    newest.c.at == firings.c.recorded_at,
                ),
            )
            .order_by(firings.c.id)
        )
        with self._store.read() as conn:
            rows = conn.execute(stmt).mappings()
            return {row["trigger_name"]: TriggerFiring.from_row(row) for row in rows}

    def set_status(
        self, name: str, status: str, actor: str, *, reason: str | None = None
    ) -> TriggerDeployment:
        """Pause, resume (``active``) or retire trigger ``name``; retiring is for good (for
        the active version). Resuming catches up what the pause missed, per its policy."""
        if status not in STATUSES:
            raise InvalidStatus(f"a trigger is {', '.join(STATUSES)}, not {status!r}")
        with self._store.write() as conn:
            self._store.lock_event_name(conn, f"trigger:{name}")
            found = self.deployments_in(conn, [name])
            if not found:
                raise NotFound(f"no trigger {name!r} is deployed")
            trigger = found[0]
            if trigger.status == "retired":
                raise InvalidStatus(
                    f"trigger {name} is retired; activate a new version to start it again"
                )
            now = self._store.now()
            row = conn.execute(sa.select(states).where(states.c.name == name)).mappings().first()
            values = {
                "status": status,
                "digest": trigger.digest,
                "since": trigger.since,
                "changed_by": actor,
                "changed_at": now,
                "reason": reason,
            }
            if row is None:
                conn.execute(sa.insert(states).values(name=name, revision=1, **values))
            else:
                conn.execute(
                    sa.update(states)
                    .where(states.c.name == name)
                    .values(revision=states.c.revision + 1, **values)
                )
            return self.deployments_in(conn, [name])[0]


def _status(
    row: Any, digest: str, anchor: datetime, latest_activation: datetime | None
) -> tuple[str, datetime]:
    """(status, since) of a trigger whose active version is ``digest``."""
    if row is None:
        return "active", anchor
    if row["status"] == "retired" and row["digest"] != digest:
        # a new version after a retired one starts afresh: nothing retired is caught up
        return "active", latest_activation or anchor
    since = _timestamp(row["since"]) or anchor
    return str(row["status"]), since


def _timestamp(value: object) -> datetime | None:
    """Aggregates (min/max) come back as the column's stored float, not through its type."""
    if value is None or isinstance(value, datetime):
        return value
    return schema.UtcTimestamp().process_result_value(value, None)  # type: ignore[arg-type]


def _document(raw: str) -> dict[str, Any]:
    loaded = json.loads(raw)
    assert isinstance(loaded, dict)
    return loaded
