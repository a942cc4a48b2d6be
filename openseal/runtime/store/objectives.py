"""The objectives repository: creating an objective with its first run, reading objectives,
and settling an objective when its run ends."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.clock import new_id
from openseal.runtime.statuses import ObjectiveStatus, RunStatus
from openseal.runtime.store import fastsql, schema
from openseal.runtime.store.base import Repository
from openseal.runtime.store.definitions import canonical_json
from openseal.runtime.store.errors import IdempotencyConflict, NotFound
from openseal.runtime.store.listing import ListQuery, newest_first
from openseal.runtime.store.records import DefinitionVersion, NewObjective, Objective, Run
from openseal.runtime.store.schema import DEFAULT_SCOPE

objectives = schema.objectives
projects = schema.projects
runs = schema.runs
events = schema.events
INSERT_OBJECTIVE = sa.insert(objectives)
INSERT_RUN = sa.insert(runs)
INSERT_EVENT = sa.insert(events)
PROJECT_ID = sa.select(projects.c.id).where(projects.c.name == sa.bindparam("p_name"))


def request_hash(project: str, workflow_name: str, inputs: dict[str, Any]) -> str:
    """What an idempotency key promises: the same project, workflow and inputs."""
    document = {"project": project, "workflow": workflow_name, "inputs": inputs}
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


#: the caller's inputs, ready for the version about to be pinned (see ``create_objective``)
Prepare = Callable[[DefinitionVersion], dict[str, Any]]


class Objectives(Repository):
    """``store.objectives``: objectives and the first run of each."""

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
    ) -> NewObjective:
        """Create an objective on the active version of ``workflow_name`` and its first run.

        The run is ``queued`` with context ``{"inputs": inputs, "states": {}}`` and pins the
        workflow digest active now (invariant 12). With ``request_key`` the call is idempotent:
        the same key and content return the existing objective (``created=False``); the same
        key with different content raises ``IdempotencyConflict``. A request key is the
        ``actor``'s: another principal's equal key is another key. The objective records
        ``actor`` as who asked for it, and lives in ``scope`` with its runs.

        ``prepare(version)`` turns the caller's inputs into the run's (defaults filled in,
        types checked; it raises to refuse) for exactly the version being pinned, in the same
        transaction — so an activation in between cannot pin a version the inputs do not fit.
        """
        digest = request_hash(project, workflow_name, inputs)
        for attempt in range(2):
            if request_key is not None:
                existing = self._replay(actor, request_key, digest)
                if existing is not None:
                    return existing
            try:
                return self._create_objective(
                    project, workflow_name, inputs, request_key, digest, actor, scope, prepare
                )
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
                .one()
            )
            return NewObjective(self._objective(conn, row.id), Run.from_row(first_run), False)

    def _create_objective(
        self,
        project: str,
        workflow_name: str,
        inputs: dict[str, Any],
        request_key: str | None,
        digest: str,
        actor: str,
        scope: str,
        prepare: Prepare | None,
    ) -> NewObjective:
        with self._store.write() as conn:
            return self.insert_in(
                conn, project, workflow_name, inputs, request_key, digest, actor, scope, prepare
            )

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
    ) -> NewObjective:
        """:meth:`create` in the caller's transaction, without the request-key replay (a
        trigger's firing row commits with the objective it starts). ``prepare`` and the
        check that the workflow is deployed run before anything is written."""
        version = self._store.definitions.active_version_in(conn, workflow_name)
        if version is None or version.kind != "workflow":
            raise StoreError(f"no workflow {workflow_name!r} is deployed", code="not_deployed")
        if prepare is not None:
            inputs = prepare(version)
        now = self._store.now()
        objective = Objective(
            id=new_id(),
            project=project,
            workflow_name=workflow_name,
            workflow_digest=version.digest,
            inputs=inputs,
            status=ObjectiveStatus.ACTIVE,
            request_key=request_key,
            request_hash=digest,
            revision=1,
            created_at=now,
            updated_at=now,
            created_by=actor,
            scope=scope,
        )
        row = {k: v for k, v in objective.__dict__.items() if k != "project"}
        project_id = self._project_id(conn, project)
        fastsql.execute(conn, INSERT_OBJECTIVE, {**row, "project_id": project_id})
        # The run is inserted with its first event already counted: one INSERT each, no
        # UPDATE to take the sequence number (nobody else can see the run yet).
        run = Run(
            id=new_id(),
            objective_id=objective.id,
            parent_run_id=None,
            workflow_digest=version.digest,
            status=RunStatus.QUEUED,
            current_state=None,
            waiting=None,
            paused_from_status=None,
            context={"inputs": inputs, "states": {}},
            epoch=0,
            lease_owner=None,
            lease_expires_at=None,
            wake_at=None,
            last_event_seq=1,
            stale_writes=0,
            budget_used={},
            revision=1,
            created_at=now,
            updated_at=now,
            scope=scope,
        )
        fastsql.execute(conn, INSERT_RUN, {**run.__dict__, "wait_name": None})
        payload: dict[str, Any] = {"objective_id": objective.id, "workflow": workflow_name}
        if request_key is not None:
            payload["request_key"] = request_key
        fastsql.execute(
            conn,
            INSERT_EVENT,
            {"run_id": run.id, "seq": 1, "type": "run.created", "actor": actor,
             "payload": payload, "at": now},
        )  # fmt: skip
        self._store.notify_work(conn, run.id)
        return NewObjective(objective, run, True)

    def start_child_run(
        self,
        conn: sa.Connection,
        parent: Run,
        workflow_digest: str,
        inputs: dict[str, Any],
        *,
        actor: str,
        payload: dict[str, Any],
    ) -> Run:
        """A ``queued`` run of ``workflow_digest`` (pinned) under ``parent``'s objective,
        created in the caller's transaction (which holds ``parent``'s row lock)."""
        now = self._store.now()
        run = Run(
            id=new_id(), objective_id=parent.objective_id, parent_run_id=parent.id,
            scope=parent.scope,
            workflow_digest=workflow_digest, status=RunStatus.QUEUED, current_state=None,
            waiting=None, paused_from_status=None, context={"inputs": inputs, "states": {}},
            epoch=0, lease_owner=None, lease_expires_at=None, wake_at=None, last_event_seq=1,
            stale_writes=0, budget_used={}, revision=1, created_at=now, updated_at=now,
        )  # fmt: skip
        fastsql.execute(conn, INSERT_RUN, {**run.__dict__, "wait_name": None})
        fastsql.execute(
            conn,
            INSERT_EVENT,
            {"run_id": run.id, "seq": 1, "type": "run.created", "actor": actor,
             "payload": {"parent_run_id": parent.id, **payload}, "at": now},
        )  # fmt: skip
        self._store.notify_work(conn, run.id)
        return run

    def _project_id(self, conn: sa.Connection, name: str) -> str:
        found = fastsql.one_or_none(fastsql.execute(conn, PROJECT_ID, {"p_name": name}))
        project_id = None if found is None else found["id"]
        if project_id is None:
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


#: what a finished root run means for its objective
OBJECTIVE_OUTCOME: dict[RunStatus, ObjectiveStatus] = {
    RunStatus.COMPLETED: ObjectiveStatus.SATISFIED,
    RunStatus.FAILED: ObjectiveStatus.FAILED,
    RunStatus.CANCELED: ObjectiveStatus.RETIRED,
}


def settle_objective(conn: sa.Connection, run: Run, status: RunStatus, now: datetime) -> None:
    """Record on the objective how its run ended, in the transaction that ended the run.

    Only the objective's own run (not a delegated child run) settles it, and only an
    objective still ``active`` or ``paused``.
    """
    outcome = OBJECTIVE_OUTCOME.get(status)
    if outcome is None or run.parent_run_id is not None:
        return
    params: dict[str, Any] = {"p_id": run.objective_id, "p_active": ObjectiveStatus.ACTIVE}
    params.update(p_paused=ObjectiveStatus.PAUSED, v_status=outcome, v_now=now)
    fastsql.execute_count(conn, SETTLE_OBJECTIVE, params)


objectives_table = schema.objectives
#: built once: statement construction costs more than executing it on SQLite
SETTLE_OBJECTIVE: Final = (
    sa.update(objectives_table)
    .where(
        objectives_table.c.id == sa.bindparam("p_id"),
        objectives_table.c.status.in_([sa.bindparam("p_active"), sa.bindparam("p_paused")]),
    )
    .values(
        status=sa.bindparam("v_status"),
        revision=objectives_table.c.revision + 1,
        updated_at=sa.bindparam("v_now", type_=objectives_table.c.updated_at.type),
    )
)
