"""The objectives repository: creating an objective with its first run (or as a draft, which
starts its first run when activated), reading objectives, settling an objective when its run
ends (satisfied, failed, retired, or tried again after a backoff), and the operators' pause,
resume, retire and activate (of a draft).

An objective's terms come from the workflow version it starts on (its ``objective`` block:
``priority``, ``retry``; its ``owner``), and the caller may set ``goal`` and ``priority``.
Settling is done in the transaction that ends the run, holding the run's row lock (then the
objective's), so a retry run is created exactly once with the end that caused it."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.clock import iso, new_id
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, ObjectiveStatus, RunStatus
from openseal.runtime.store.db import combined, fastsql
from openseal.runtime.store.db.base import StoreBase
from openseal.runtime.store.db.errors import (
    IdempotencyConflict,
    InRecoveryMode,
    InvalidStatus,
    NotFound,
    StaleRevision,
)
from openseal.runtime.store.db.work_signal import TRIGGERS
from openseal.runtime.store.repos.events import append_events
from openseal.runtime.store.repos.repository import Repository
from openseal.runtime.store.tables import schema
from openseal.runtime.store.tables.listing import ListQuery, newest_first
from openseal.runtime.store.tables.records import (
    TRIGGER_ACTOR,
    DefinitionVersion,
    NewObjective,
    Objective,
    Run,
    UnwrittenRun,
)
from openseal.runtime.store.tables.statements import (
    ACTIVE_DIGEST,
    ACTIVE_RECOVERY,
    oldest_queued_firing,
    request_hash,
)
from openseal.runtime.store.tables.values import DEFAULT_SCOPE
from openseal.runtime.store.tables.versions import Versions

objectives = schema.objectives
projects = schema.projects
runs = schema.runs
events = schema.events
INSERT_OBJECTIVE = sa.insert(objectives)
#: the digest active for workflow ``:p_name``, the id of project ``:p_project`` and the id of
#: the recovery in progress (each None when there is none): what creating an objective looks
#: up, in one statement
DEPLOYED_AND_PROJECT = sa.select(
    ACTIVE_DIGEST.scalar_subquery().label("active_digest"),
    sa.select(projects.c.id)
    .where(projects.c.name == sa.bindparam("p_project"))
    .scalar_subquery()
    .label("project_id"),
    ACTIVE_RECOVERY.scalar_subquery().label("recovery_id"),
)


def objective_terms(version: DefinitionVersion) -> tuple[str | None, int, dict[str, Any] | None]:
    """The owner, default priority and retry policy a workflow version gives its objectives."""
    spec = version.document.get("spec") or {}
    policy = spec.get("objective") or {}
    owner = spec.get("owner")
    retry = policy.get("retry")
    return (
        owner if isinstance(owner, str) else None,
        int(policy.get("priority") or 0),
        dict(retry) if isinstance(retry, dict) else None,
    )


def retry_delay(retry: dict[str, Any], attempt: int) -> float:
    """Seconds before run ``attempt`` (2: the first retry): ``backoff`` doubling each time,
    at most ``max_backoff``."""
    backoff = float(retry.get("backoff", 60.0))
    longest = float(retry.get("max_backoff", 3600.0))
    return min(backoff * 2.0 ** max(attempt - 2, 0), longest)


def new_run(
    objective_id: str,
    workflow_digest: str,
    inputs: dict[str, Any],
    scope: str,
    now: datetime,
    **values: Any,
) -> Run:
    """A run not yet started (``queued`` unless ``values`` say otherwise) with its first event,
    ``run.created``, already counted."""
    fields: dict[str, Any] = dict(
        id=new_id(), objective_id=objective_id, parent_run_id=None,
        workflow_digest=workflow_digest, status=RunStatus.QUEUED, current_state=None,
        waiting=None, paused_from_status=None, context={"inputs": inputs, "states": {}},
        epoch=0, lease_owner=None, lease_expires_at=None, wake_at=None, last_event_seq=1,
        stale_writes=0, budget_used={}, revision=1, created_at=now, updated_at=now, scope=scope,
    )  # fmt: skip
    fields.update(values)
    return Run(**fields)


#: the caller's inputs, ready for the version about to be pinned (see ``create_objective``)
Prepare = Callable[[DefinitionVersion], dict[str, Any]]


#: an objective that can still change: its runs' ends settle it, operators steer it
OPEN: Final = (ObjectiveStatus.ACTIVE, ObjectiveStatus.PAUSED)
#: what an operator may set, and from which statuses
STEERING: Final = {
    ObjectiveStatus.PAUSED: frozenset({ObjectiveStatus.ACTIVE}),
    ObjectiveStatus.ACTIVE: frozenset({ObjectiveStatus.PAUSED}),
    ObjectiveStatus.RETIRED: frozenset(
        {ObjectiveStatus.DRAFT, ObjectiveStatus.ACTIVE, ObjectiveStatus.PAUSED}
    ),
}
#: the event an operator's change of an objective appends to its latest run
STEERED: Final = {
    ObjectiveStatus.PAUSED: "objective.paused",
    ObjectiveStatus.ACTIVE: "objective.resumed",
    ObjectiveStatus.RETIRED: "objective.retired",
}
#: what a run's end did to its objective, for the payload of the event that ends the run
Settled = dict[str, Any] | None


@dataclass(frozen=True)
class SettleByUpdate:
    """Settling an objective that takes one UPDATE and nothing read first: it settles the
    objective if it is still open for the ending run's attempt, and a caller may hold it back
    (``FencedTx.update_with_flush``) until it writes the event that ends the run."""

    #: the UPDATE (returning the objective's ``created_by``) and its parameters
    update: combined.HeldUpdate
    #: the ``objective`` of the ending event's payload if the UPDATE matched (else none)
    outcome: dict[str, Any]
    #: to call, in the same transaction, with what the UPDATE returned
    then: Callable[[list[Any]], None]


def _check_steering(
    current: Objective,
    status: ObjectiveStatus,
    allowed: Collection[ObjectiveStatus],
    *,
    again: bool,
) -> None:
    """Refuse to set ``current`` to ``status``: resuming a draft (``objective_draft``), or a
    change its status does not allow (``invalid_status``) unless it is retired ``again``."""
    if current.status == ObjectiveStatus.DRAFT and status == ObjectiveStatus.ACTIVE:
        raise InvalidStatus(
            f"cannot resume objective {current.id}: it is a draft: activate it with "
            f"`openseal objectives activate {current.id}`",
            code="objective_draft",
        )
    if current.status not in allowed and not again:
        raise InvalidStatus(
            f"cannot set objective {current.id} to {status}: it is {current.status}"
        )


class Objectives(Repository):
    """``store.objectives``: objectives and the first run of each."""

    def __init__(self, store: StoreBase, versions: Versions) -> None:
        super().__init__(store)
        #: versions parsed once, shared with ``store.definitions``
        self._versions = versions

    def create(
        self,
        project: str,
        workflow_name: str,
        inputs: dict[str, Any],
        *,
        request_key: str | None = None,
        actor: str,
        scope: str = DEFAULT_SCOPE,
        prepare: Prepare | None = None,
        goal: str | None = None,
        priority: int | None = None,
        draft: bool = False,
        write_run: bool = True,
        refuse_in_recovery: bool = False,
    ) -> NewObjective:
        """Create an objective on the active version of ``workflow_name`` and its first run
        (with ``draft``: no run, until :meth:`steer` activates it).

        ``goal`` says what it is for; ``priority`` orders its runs' claims (None: the
        version's ``objective.priority``, else 0). Its owner and retry policy are the version's.

        The run is ``queued`` with context ``{"inputs": inputs, "states": {}}`` and pins the
        workflow digest active now (invariant 12). With ``request_key`` the call is idempotent:
        the same key and content return the existing objective (``created=False``); the same
        key with different content raises ``IdempotencyConflict``. A request key is the
        ``actor``'s: another principal's equal key is another key. The objective records
        ``actor`` as who asked for it, and lives in ``scope`` with its runs.

        ``prepare(version)`` turns the caller's inputs into the run's (defaults filled in,
        types checked; it raises to refuse) for exactly the version being pinned, in the same
        transaction — so an activation in between cannot pin a version the inputs do not fit.

        With ``write_run`` False the first run is not written: it comes back as
        ``NewObjective.unwritten`` for the caller to claim in the same transaction
        (``Leases.claim_and_start(unwritten=...)`` inserts it, claimed), and nobody is told
        that it is runnable. Only for a caller whose claim shares this write's commit
        (``Engine.submit``'s ``together()`` block): committed alone, the objective has no run.
        ``refuse_in_recovery``: nothing is created in recovery mode (see :meth:`insert_in`).
        """
        digest = request_hash(project, workflow_name, inputs, goal, priority, draft)
        for attempt in range(2):
            if request_key is not None:
                existing = self._replay(actor, request_key, digest)
                if existing is not None:
                    return existing
            try:
                with self._store.write() as conn:
                    return self.insert_in(
                        conn, project, workflow_name, inputs, request_key, digest, actor, scope,
                        prepare, goal=goal, priority=priority, draft=draft, write_run=write_run,
                        refuse_in_recovery=refuse_in_recovery,
                    )  # fmt: skip
            except sa.exc.IntegrityError:
                # A concurrent create won the request key or the project name; look again.
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def _replay(self, actor: str, request_key: str, digest: str) -> NewObjective | None:
        with self._store.read() as conn:
            row = conn.execute(
                sa.select(objectives.c.id, objectives.c.request_hash).where(
                    objectives.c.request_key == request_key, objectives.c.created_by == actor
                )
            ).one_or_none()
            if row is None:
                return None
            if row.request_hash != digest:
                raise IdempotencyConflict(
                    f"request key {request_key!r} was already used for a different objective"
                )
            first_run = (
                conn.execute(
                    sa.select(runs)
                    .where(runs.c.objective_id == row.id)
                    .order_by(runs.c.id)
                    .limit(1)
                )
                .mappings()
                .one_or_none()
            )
            run = None if first_run is None else Run.from_row(first_run)
            return NewObjective(self._objective(conn, row.id), run, False)

    def insert_in(
        self,
        conn: sa.Connection,
        project: str,
        workflow_name: str,
        inputs: dict[str, Any],
        request_key: str | None,
        digest: str,
        actor: str,
        scope: str,
        prepare: Prepare | None,
        *,
        goal: str | None = None,
        priority: int | None = None,
        draft: bool = False,
        write_run: bool = True,
        refuse_in_recovery: bool = False,
    ) -> NewObjective:
        """:meth:`create` in the caller's transaction, without the request-key replay (a
        trigger's firing row commits with the objective it starts). ``prepare`` and the
        checks that the workflow is deployed and (``refuse_in_recovery``) that the store is not
        in recovery mode (``InRecoveryMode``, read with the workflow) precede any write."""
        found, version = self._deployed(conn, workflow_name, project, refuse_in_recovery)
        if prepare is not None:
            inputs = prepare(version)
        owner, default_priority, retry = objective_terms(version)
        priority = default_priority if priority is None else priority
        now = self._store.now()
        objective = Objective(
            id=new_id(),
            project=project,
            workflow_name=workflow_name,
            workflow_digest=version.digest,
            inputs=inputs,
            status=ObjectiveStatus.DRAFT if draft else ObjectiveStatus.ACTIVE,
            request_key=request_key,
            request_hash=digest,
            revision=1,
            created_at=now,
            updated_at=now,
            created_by=actor,
            scope=scope,
            goal=goal,
            owner=owner,
            priority=priority,
            retry=retry,
            attempts=0 if draft else 1,
        )
        row = {k: v for k, v in objective.__dict__.items() if k != "project"}
        row["project_id"] = found["project_id"] or self._new_project(conn, project)
        if draft:
            fastsql.execute(conn, INSERT_OBJECTIVE, row)
            return NewObjective(objective, None, True)
        payload: dict[str, Any] = {"request_key": request_key} if request_key is not None else {}
        first = self._first_run(objective, version.digest, inputs, actor, payload, now)
        if not write_run:
            _insert_before_its_claim(conn, row, request_key)
            return NewObjective(objective, first.run, True, unwritten=first)
        self._insert_run(conn, first, notify=True, before=[(objectives, row)])
        return NewObjective(objective, first.run, True)

    def _deployed(
        self, conn: sa.Connection, workflow_name: str, project: str, refuse_in_recovery: bool
    ) -> tuple[Any, DefinitionVersion]:
        """The row naming the active digest of ``workflow_name`` and the id of ``project``, and
        that version; refused with ``not_deployed`` when no workflow is active under the name,
        and with ``refuse_in_recovery``, ``InRecoveryMode`` while the store is in recovery mode."""
        params = {"p_name": workflow_name, "p_project": project}
        (found,) = fastsql.execute(conn, DEPLOYED_AND_PROJECT, params)
        if refuse_in_recovery and found["recovery_id"] is not None:
            raise InRecoveryMode(f"the store is in recovery mode ({found['recovery_id']})")
        active = found["active_digest"]
        version = None if active is None else self._versions.get(conn, active)
        if version is None or version.kind != "workflow":
            raise StoreError(f"no workflow {workflow_name!r} is deployed", code="not_deployed")
        return found, version

    @staticmethod
    def _first_run(
        objective: Objective,
        digest: str,
        inputs: dict[str, Any],
        actor: str,
        payload: dict[str, Any],
        now: datetime,
    ) -> UnwrittenRun:
        """The objective's first run, ``queued`` on version ``digest``, with its
        ``run.created`` (``payload`` added)."""
        run = new_run(objective.id, digest, inputs, objective.scope, now,
                      priority=objective.priority)  # fmt: skip
        created: dict[str, Any] = {
            "objective_id": objective.id,
            "workflow": objective.workflow_name,
        }
        if objective.priority:
            created["priority"] = objective.priority
        return UnwrittenRun(run, actor, {**created, **payload})

    def _insert_run(
        self,
        conn: sa.Connection,
        new: UnwrittenRun,
        *,
        notify: bool,
        before: list[tuple[sa.Table, dict[str, Any]]] | None = None,
    ) -> None:
        """Insert ``new`` with its ``run.created`` after the rows ``before`` (the objective it
        starts), and with ``notify`` announce it as runnable at commit: on PostgreSQL one
        statement for all of it (:meth:`StoreBase.insert_rows`)."""
        run = new.run
        kind, actor, payload = new.created_event
        event = {"run_id": run.id, "seq": 1, "type": kind, "actor": actor,
                 "payload": payload, "at": run.created_at}  # fmt: skip
        rows = [*(before or ()), (runs, {**run.__dict__, "wait_name": None}), (events, event)]
        self._store.insert_rows(conn, rows, notify=run.id if notify else None)

    def start_child_run(
        self,
        conn: sa.Connection,
        parent: Run,
        workflow_digest: str,
        inputs: dict[str, Any],
        *,
        actor: str,
        payload: dict[str, Any],
        budget_used: dict[str, Any] | None = None,
    ) -> Run:
        """A ``queued`` run of ``workflow_digest`` (pinned) under ``parent``'s objective,
        created in the caller's transaction (which holds ``parent``'s row lock); it starts
        with ``budget_used`` (a budget carved out of its caller's names its limit there)."""
        run = new_run(
            parent.objective_id, workflow_digest, inputs, parent.scope, self._store.now(),
            parent_run_id=parent.id, priority=parent.priority, budget_used=budget_used or {},
        )  # fmt: skip
        created = UnwrittenRun(run, actor, {"parent_run_id": parent.id, **payload})
        self._insert_run(conn, created, notify=True)
        return run

    def _new_project(self, conn: sa.Connection, name: str) -> str:
        """Insert project ``name`` (the first objective of it); its id."""
        project_id = new_id()
        conn.execute(
            sa.insert(projects).values(id=project_id, name=name, created_at=self._store.now())
        )
        return project_id

    def _objective(self, conn: sa.Connection, objective_id: str) -> Objective:
        stmt = (
            sa.select(objectives, projects.c.name.label("project_name"))
            .join(projects, projects.c.id == objectives.c.project_id)
            .where(objectives.c.id == objective_id)
        )
        row = conn.execute(stmt).mappings().one_or_none()
        if row is None:
            raise NotFound(f"objective {objective_id} not found")
        return Objective.from_row(row, row["project_name"])

    def newest(self, query: ListQuery) -> list[Objective]:
        """One page of objectives, newest first (see :class:`ListQuery`)."""
        stmt = newest_first(sa.select(objectives.c.id), objectives, query)
        if query.workflow is not None:
            stmt = stmt.where(objectives.c.workflow_name == query.workflow)
        if query.scopes is not None:
            stmt = stmt.where(objectives.c.scope.in_(list(query.scopes)))
        with self._store.read() as conn:
            ids = conn.execute(stmt).scalars().all()
            return [self._objective(conn, objective_id) for objective_id in ids]

    def get(self, objective_id: str) -> Objective:
        with self._store.read() as conn:
            return self._objective(conn, objective_id)

    def settle(
        self,
        conn: sa.Connection,
        run: Run,
        status: RunStatus,
        now: datetime,
        *,
        unsatisfied: str | None = None,
    ) -> Settled:
        """Record on the objective how its run ended, in the transaction that ended the run
        (which holds the run's row lock); returns what happened to it (``status``, and
        ``reason``, ``unsatisfied``, ``retry``: the next run, its attempt and when), for the
        ``objective`` of the payload of the event that ends the run, or None when nothing did.

        Only the objective's own latest run (not a delegated child run) settles it, and only
        while it is ``active`` or ``paused``. A canceled run retires it; a completed run
        satisfies it unless ``unsatisfied`` says why its success criterion did not hold. A
        failed or unsatisfied run starts the next run of the objective (on the version active
        now, after the retry policy's backoff) while attempts remain, and fails it after the
        last. A retry of a paused objective is created paused.
        """
        if run.parent_run_id is not None or status not in TERMINAL_RUN_STATUSES:
            return None
        by_update = self.settle_by_update(conn, run, status, now, unsatisfied=unsatisfied)
        if by_update is not None:
            (returned,) = combined.update_each(conn, [by_update.update])
            by_update.then(returned)
            return by_update.outcome if returned else None
        found = fastsql.execute(conn, self._lock_objective(), {"p_id": run.objective_id})
        row = fastsql.one_or_none(found)
        if row is None or row["status"] not in OPEN or run.attempt != row["attempts"]:
            return None
        outcome: dict[str, Any] = {"reason": "the run failed"}
        if unsatisfied is not None:
            outcome = {"reason": "the run did not satisfy it", "unsatisfied": unsatisfied}
        retry = row["retry"] or {}
        if run.attempt < int(retry.get("max_attempts", 1)):
            version = self._versions.active(conn, row["workflow_name"])
            if version is not None and version.kind == "workflow":
                next_run = self._retry(conn, run, row, version.digest, retry, outcome, now)
                return {"status": row["status"], **outcome, "retry": next_run}
            outcome["no_retry"] = f"no workflow {row['workflow_name']!r} is deployed"
        self._set(conn, run.objective_id, ObjectiveStatus.FAILED, row["attempts"], now)
        self._ended(conn, row["created_by"])
        return {"status": ObjectiveStatus.FAILED, **outcome, "attempts": run.attempt}

    def settle_by_update(
        self,
        conn: sa.Connection,
        run: Run,
        status: RunStatus,
        now: datetime,
        *,
        unsatisfied: str | None = None,
    ) -> SettleByUpdate | None:
        """:meth:`settle` when it takes one UPDATE and nothing read first: the objective's own
        latest run canceled (retiring it) or completed and satisfying it; None otherwise."""
        if run.parent_run_id is not None:
            return None
        if status == RunStatus.CANCELED:
            ending, outcome = ObjectiveStatus.RETIRED, {"reason": "its run was canceled"}
        elif status == RunStatus.COMPLETED and unsatisfied is None:
            ending, outcome = ObjectiveStatus.SATISFIED, {}
        else:
            return None
        params = {"p_id": run.objective_id, "p_attempt": run.attempt, "v_now": now,
                  "v_status": ending}  # fmt: skip
        params.update({f"p_open_{i}": str(open_status) for i, open_status in enumerate(OPEN)})

        def then(created_by: list[Any]) -> None:
            if created_by:
                self._ended(conn, created_by[0])

        return SettleByUpdate((SETTLE_OPEN_OBJECTIVE, params), {"status": ending, **outcome}, then)

    def _ended(self, conn: sa.Connection, created_by: str | None) -> None:
        """An objective ``created_by`` someone ended in this transaction. If a trigger started
        it and firings of that trigger wait in its queue (``overlap = "queue"``), the trigger
        schedulers are woken at commit to start the next; which one starts, once, is decided
        under the trigger's lock (``Triggers.start_queued``)."""
        if created_by is None or not created_by.startswith(TRIGGER_ACTOR):
            return
        trigger = created_by.removeprefix(TRIGGER_ACTOR)
        if conn.execute(oldest_queued_firing(trigger)).first() is not None:  # others wait
            self._store.notify_work(conn, TRIGGERS)

    def _retry(
        self,
        conn: sa.Connection,
        ended: Run,
        objective: Any,
        digest: str,
        retry: dict[str, Any],
        outcome: dict[str, Any],
        now: datetime,
    ) -> dict[str, Any]:
        """The objective's next run, sleeping until its backoff has passed (paused with the
        objective): its id, attempt and when it is due."""
        attempt = ended.attempt + 1
        retry_at = now + timedelta(seconds=retry_delay(retry, attempt))
        waiting = {"kind": "objective_retry", "after_run": ended.id, "retry_at": iso(retry_at)}
        paused = objective["status"] == ObjectiveStatus.PAUSED
        run = new_run(
            ended.objective_id, digest, dict(objective["inputs"]), ended.scope, now,
            status=RunStatus.PAUSED if paused else RunStatus.SLEEPING,
            paused_from_status=RunStatus.SLEEPING if paused else None,
            waiting=waiting, wake_at=retry_at, priority=objective["priority"], attempt=attempt,
        )  # fmt: skip
        created = {"objective_id": ended.objective_id, "workflow": objective["workflow_name"],
                   "attempt": attempt, "retry_of": ended.id, "reason": outcome["reason"],
                   "retry_at": iso(retry_at)}  # fmt: skip
        self._insert_run(conn, UnwrittenRun(run, "openseal", created), notify=False)
        self._set(conn, ended.objective_id, objective["status"], attempt, now)
        return {"run_id": run.id, "attempt": attempt, "at": iso(retry_at)}

    def _activate(
        self,
        conn: sa.Connection,
        draft: Objective,
        actor: str,
        reason: str | None,
        prepare: Prepare | None,
    ) -> Objective:
        """Draft ``draft`` made active with its first run (see :meth:`activate`)."""
        version = self._versions.active(conn, draft.workflow_name)
        if version is None or version.kind != "workflow":
            raise StoreError(
                f"no workflow {draft.workflow_name!r} is deployed", code="not_deployed"
            )
        inputs = draft.inputs if prepare is None else prepare(version)
        now = self._store.now()
        self._set(conn, draft.id, ObjectiveStatus.ACTIVE, 1, now)
        payload: dict[str, Any] = {"activated": True}
        if reason is not None:
            payload["reason"] = reason
        first = self._first_run(draft, version.digest, inputs, actor, payload, now)
        self._insert_run(conn, first, notify=True)
        return self._objective(conn, draft.id)

    def _lock_objective(self) -> sa.Select[Any]:
        """``SELECT`` what settling reads of objective ``:p_id``, row-locked; built once."""
        stmt: sa.Select[Any] | None = getattr(self, "_lock_objective_stmt", None)
        if stmt is None:
            columns = [objectives.c[name] for name in SETTLING_COLUMNS]
            stmt = self._store.for_update(
                sa.select(*columns).where(objectives.c.id == sa.bindparam("p_id"))
            )
            self._lock_objective_stmt = stmt
        return stmt

    @staticmethod
    def _set(
        conn: sa.Connection, objective_id: str, status: str, attempts: int, now: datetime
    ) -> None:
        params = {"p_id": objective_id, "v_status": status, "v_attempts": attempts, "v_now": now}
        fastsql.execute_count(conn, SETTLE_OBJECTIVE, params)

    def steer(
        self,
        objective_id: str,
        status: ObjectiveStatus,
        actor: str,
        *,
        reason: str | None = None,
        expected_revision: int | None = None,
    ) -> tuple[Objective, tuple[str, ...]]:
        """Pause (``paused``), resume (``active``) or retire (``retired``) an objective, with
        an event (``objective.paused``, ``objective.resumed``, ``objective.retired``: ``actor``,
        ``reason``) on its latest run; also the ids of its unfinished root runs, which the
        caller then pauses, resumes or cancels one by one, each in its own transaction.

        Retiring a retired objective again is allowed (its runs are steered again: a crash
        between the two steps leaves nothing running for good). Resuming a draft is refused
        with ``objective_draft`` (:meth:`activate` starts it), any other change from a status
        that does not allow it with ``invalid_status``, and ``stale_revision`` when
        ``expected_revision`` is given and the objective has changed since.
        """
        allowed = STEERING.get(status)
        if allowed is None:
            raise StoreError(
                f"an objective can be set to paused, active or retired, not {status}",
                code="usage_error",
            )
        with self._store.write() as conn:
            latest, current = self._lock_for_steering(conn, objective_id, expected_revision)
            again = status == ObjectiveStatus.RETIRED == current.status
            _check_steering(current, status, allowed, again=again)
            if not again:
                now = self._store.now()
                conn.execute(
                    sa.update(objectives)
                    .where(objectives.c.id == objective_id)
                    .values(status=status, revision=objectives.c.revision + 1, updated_at=now)
                )
                if latest is not None:
                    payload = {"objective_id": objective_id, "from_status": current.status,
                               "reason": reason}  # fmt: skip
                    append_events(conn, latest, [(STEERED[status], actor, payload)], now=now)
                if status == ObjectiveStatus.RETIRED:
                    self._ended(conn, current.created_by)
            live = conn.execute(
                sa.select(runs.c.id)
                .where(
                    runs.c.objective_id == objective_id,
                    runs.c.parent_run_id.is_(None),
                    runs.c.status.not_in([str(s) for s in TERMINAL_RUN_STATUSES]),
                )
                .order_by(runs.c.id)
            )
            run_ids = tuple(live.scalars().all())
            return self._objective(conn, objective_id), run_ids

    def activate(
        self,
        objective_id: str,
        actor: str,
        *,
        reason: str | None = None,
        expected_revision: int | None = None,
        prepare: Prepare | None = None,
    ) -> Objective:
        """Activate a draft: it becomes ``active`` and its first run starts in the same
        transaction, on the version active now, with the objective's inputs made ready for
        that version by ``prepare`` (which raises to refuse); ``run.created`` records
        ``activated``, ``actor`` and ``reason``.

        Refused with ``invalid_status`` when the objective is not a draft (a paused one is
        resumed with :meth:`steer`, never activated), and ``stale_revision`` when
        ``expected_revision`` is given and the objective has changed since.
        """
        with self._store.write() as conn:
            _, current = self._lock_for_steering(conn, objective_id, expected_revision)
            if current.status != ObjectiveStatus.DRAFT:
                hint = {
                    ObjectiveStatus.ACTIVE: "; it has started already",
                    ObjectiveStatus.PAUSED: (
                        f": resume it with `openseal objectives resume {objective_id}`"
                    ),
                }.get(current.status, "")
                raise InvalidStatus(
                    f"cannot activate objective {objective_id}: it is {current.status}, not a "
                    f"draft{hint}"
                )
            return self._activate(conn, current, actor, reason, prepare)

    def _lock_for_steering(
        self, conn: sa.Connection, objective_id: str, expected_revision: int | None
    ) -> tuple[str | None, Objective]:
        """Objective ``objective_id``'s latest root run id (None: it has none, a draft) and
        the objective, both row-locked, checked against ``expected_revision``."""
        # Its latest run first (the one lock order: a run, then its objective), which
        # records the change in the same transaction
        latest: str | None = conn.execute(
            self._store.for_update(
                sa.select(runs.c.id)
                .where(runs.c.objective_id == objective_id, runs.c.parent_run_id.is_(None))
                .order_by(runs.c.attempt.desc(), runs.c.id.desc())
                .limit(1)
            )
        ).scalar_one_or_none()
        fastsql.execute(conn, self._lock_objective(), {"p_id": objective_id})
        current = self._objective(conn, objective_id)
        if expected_revision is not None and expected_revision != current.revision:
            raise StaleRevision(
                f"objective {objective_id} is at revision {current.revision}, not "
                f"{expected_revision}; reload it and try again"
            )
        return latest, current


SETTLING_COLUMNS: Final = (
    "status", "attempts", "retry", "workflow_name", "inputs", "priority", "created_by",
)  # fmt: skip
objectives_table = schema.objectives
#: built once: statement construction costs more than executing it on SQLite
SETTLE_OBJECTIVE: Final = (
    sa.update(objectives_table)
    .where(objectives_table.c.id == sa.bindparam("p_id"))
    .values(
        status=sa.bindparam("v_status"),
        attempts=sa.bindparam("v_attempts"),
        revision=objectives_table.c.revision + 1,
        updated_at=sa.bindparam("v_now", type_=objectives_table.c.updated_at.type),
    )
)
#: settling an objective that is open and whose latest attempt is ``:p_attempt``, as the run
#: that ends it is (satisfied or retired: the cases that need nothing else of the row, but who
#: created it, for a trigger's queue)
SETTLE_OPEN_OBJECTIVE: Final = (
    sa.update(objectives_table)
    .where(
        objectives_table.c.id == sa.bindparam("p_id"),
        objectives_table.c.status.in_([sa.bindparam(f"p_open_{i}") for i in range(len(OPEN))]),
        objectives_table.c.attempts == sa.bindparam("p_attempt"),
    )
    .values(
        status=sa.bindparam("v_status"),
        revision=objectives_table.c.revision + 1,
        updated_at=sa.bindparam("v_now", type_=objectives_table.c.updated_at.type),
    )
    .returning(objectives_table.c.created_by)
)


def _insert_before_its_claim(
    conn: sa.Connection, row: dict[str, Any], request_key: str | None
) -> None:
    """Insert the objective ``row`` whose run the claim that follows in this transaction
    writes. Nothing reads what the INSERT returns: on PostgreSQL it goes with the claim's
    first statement. With ``request_key`` it is sent at once: a duplicate key must fail here,
    where :meth:`Objectives.create` looks the winner up."""
    if request_key is not None:
        fastsql.execute(conn, INSERT_OBJECTIVE, row)
    else:
        fastsql.execute_with_next(conn, INSERT_OBJECTIVE, row)
