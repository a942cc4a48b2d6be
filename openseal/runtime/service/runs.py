"""Service functions for objectives and runs: what the CLI and the HTTP API both call.

Each takes an open :class:`~openseal.runtime.store.Store` and plain arguments, and raises an
:class:`~openseal.errors.OpenSealError` subclass with a one-line message on refusal.

Listing and steering runs needs the store alone; the few functions that read a run's graph or
fire triggers import the engine when they are called, so listing runs starts fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from openseal.errors import InvalidInput, UsageError
from openseal.runtime.access import check_scope, visible_run
from openseal.runtime.caller import CLI, Caller
from openseal.runtime.id_prefix import complete_id as complete_id  # ids by unique prefix
from openseal.runtime.listing import list_query
from openseal.runtime.pricing import model_cost
from openseal.runtime.statuses import ObjectiveStatus, RunStatus
from openseal.runtime.store import DEFAULT_SCOPE, Event, InvalidStatus, NotFound, Objective, Run

if TYPE_CHECKING:
    from openseal.runtime.requests import (
        ActivateObjective,
        EventDelivery,
        Intervention,
        ObjectiveCommand,
        RunCommand,
    )
    from openseal.runtime.store import (
        Connection,
        DefinitionVersion,
        Delivery,
        InboundEvent,
        Reads,
        Store,
        TriggerFiring,
    )

LOCAL_ACTOR = "user:local"


class CompiledLike(Protocol):
    """What a compiled document offers (``openseal.compiler.output.emit.CompiledDocument``)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def document(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Registered:
    kind: str
    name: str
    digest: str
    activated: bool


def register_documents(
    store: Store,
    documents: Iterable[CompiledLike],
    *,
    actor: str = LOCAL_ACTOR,
    activate: bool = True,
    reason: str | None = None,
) -> list[Registered]:
    """Store compiled documents as versions; with ``activate``, point each workflow at its own.

    Only workflows get deployments: everything else is reached from a workflow by digest, so it
    is pinned with the workflow. The governed path (change proposals) is ``openseal deploy``;
    this is for tests, embedding and the quickstart.
    """
    from openseal.runtime.compiled import version_key

    registered = []
    for compiled in sorted(documents, key=lambda d: (d.kind != "workflow", d.kind, d.name)):
        key = version_key(compiled.digest)
        store.definitions.put(key, compiled.kind, compiled.name, compiled.document)
        registered.append(Registered(compiled.kind, compiled.name, key, False))
    if activate:
        for index, item in enumerate(registered):
            if item.kind != "workflow":
                continue
            current = store.definitions.deployment(item.name)
            if current is None or current.active_digest != item.digest:
                store.definitions.activate(item.name, item.digest, actor, reason=reason)
            registered[index] = Registered(item.kind, item.name, item.digest, True)
    return registered


# -- objectives ------------------------------------------------------------------------


def list_objectives(
    store: Store,
    *,
    limit: int = 100,
    after: str | None = None,
    since: str | None = None,
    workflow: str | None = None,
    status: str | None = None,
    caller: Caller = CLI,
) -> list[Objective]:
    """One page of objectives, newest first, only those in the caller's scopes (the list
    flags: :mod:`openseal.runtime.listing`)."""
    query = list_query(
        limit=limit, after=after, since=since, workflow=workflow, status=status,
        statuses=ObjectiveStatus, scopes=caller.grant.visible(),
    )  # fmt: skip
    return store.objectives.newest(query)


def show_objective(
    store: Store, objective_id: str, caller: Caller = CLI
) -> tuple[Objective, tuple[Run, ...]]:
    objective = store.objectives.get(objective_id)
    check_scope(caller.grant, objective.scope, f"objective {objective_id}")
    return objective, store.runs.query(objective_id=objective_id)


def steer_objective(store: Store, request: ObjectiveCommand, caller: Caller) -> Objective:
    """Pause (``paused``), resume (``active``) or retire (``retired``) an objective; a draft is
    not resumed (``objective_draft``): :func:`activate_objective` starts it.

    Its unfinished runs follow, each in its own transaction after the objective's: pausing
    pauses them (a retry waiting for its backoff too, so no new run starts), resuming resumes
    the paused ones, retiring cancels them. A run that cannot follow (it ended meanwhile, or
    needs attention and cannot be paused) is left as it is. Retiring a retired objective
    again cancels whatever of it is still running."""
    objective = store.objectives.get(request.objective_id)
    check_scope(caller.grant, objective.scope, f"objective {request.objective_id}")
    try:
        status = ObjectiveStatus(request.status)
    except ValueError:
        raise InvalidInput(
            f"an objective can be set to paused, active or retired, not {request.status!r}"
        ) from None
    from openseal.runtime.engine import cascade

    steered, run_ids = store.objectives.steer(
        request.objective_id, status, caller.actor, reason=request.reason,
        expected_revision=request.expected_revision,
    )  # fmt: skip
    follow: dict[ObjectiveStatus, Callable[..., Run]] = {
        ObjectiveStatus.PAUSED: store.runs.pause,
        ObjectiveStatus.ACTIVE: store.runs.resume,
        ObjectiveStatus.RETIRED: partial(cascade.cancel_run, store),
    }
    reason = request.reason or f"objective {request.objective_id} set to {status}"
    for run_id in run_ids:
        with suppress(InvalidStatus, NotFound):  # it ended or changed meanwhile
            follow[status](run_id, caller.actor, reason)
    return steered


def activate_objective(store: Store, request: ActivateObjective, caller: Caller) -> Objective:
    """Activate a draft objective: its first run starts, on the workflow's active version,
    with the objective's inputs checked against that version. Refused (``invalid_status``)
    when it is not a draft: a paused objective is resumed, not activated."""
    objective = store.objectives.get(request.objective_id)
    check_scope(caller.grant, objective.scope, f"objective {request.objective_id}")
    from openseal.runtime.engine.objectives import prepare_inputs

    def prepare(version: DefinitionVersion) -> dict[str, Any]:
        return prepare_inputs(objective.workflow_name, dict(objective.inputs), version)

    return store.objectives.activate(
        request.objective_id, caller.actor, reason=request.reason,
        expected_revision=request.expected_revision, prepare=prepare,
    )  # fmt: skip


# -- runs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildRun:
    """A child run in a run's tree: what started it (``via``) and its own children."""

    run_id: str
    workflow: str
    status: str
    current_state: str | None
    #: ``spawn <state>.<label>`` with its dependency group's join and status, or ``delegate``
    via: str
    children: tuple[ChildRun, ...] = ()


#: how deep ``runs show`` follows children of children
TREE_DEPTH = 4


@dataclass(frozen=True)
class RunView:
    """A run with where it is in its graph: previous → current → next states."""

    run: Run
    workflow: str
    previous: str | None
    current: str | None
    next: tuple[str, ...]
    reason: str | None
    #: what its model calls cost so far by the profiles' prices, by currency
    model_cost: dict[str, float] = field(default_factory=dict)
    #: the runs it started (spawned or delegated), with theirs
    children: tuple[ChildRun, ...] = ()


def list_runs(
    store: Reads,
    *,
    status: str | None = None,
    limit: int = 100,
    objective_id: str | None = None,
    after: str | None = None,
    since: str | None = None,
    workflow: str | None = None,
    caller: Caller = CLI,
) -> tuple[Run, ...]:
    """One page of runs, newest first, only those in the caller's scopes (the list flags:
    :mod:`openseal.runtime.listing`)."""
    query = list_query(
        limit=limit, after=after, since=since, workflow=workflow, status=status,
        statuses=RunStatus, scopes=caller.grant.visible(),
    )  # fmt: skip
    return store.runs.newest(query, objective_id=objective_id)


def show_run(store: Store, run_id: str, caller: Caller = CLI) -> RunView:
    from openseal.runtime.engine.catalog import WorkflowCatalog

    run = visible_run(store, run_id, caller.grant)
    workflow = WorkflowCatalog(store).workflow(run.workflow_digest)
    current = run.current_state or workflow.initial
    trail = run.context.get("trail") or []
    following = (
        tuple(dict.fromkeys(t.target for t in workflow.outgoing(current))) if current else ()
    )
    return RunView(
        run=run,
        workflow=workflow.name,
        previous=trail[-1] if trail else None,
        current=current,
        next=following,
        reason=waiting_reason(run),
        model_cost=model_cost(run.budget_used),
        children=run_tree(store, run.id),
    )


def run_tree(store: Store, run_id: str, depth: int = TREE_DEPTH) -> tuple[ChildRun, ...]:
    """The child runs of ``run_id`` (and theirs, ``depth`` levels deep), oldest first."""
    from openseal.runtime.engine.catalog import WorkflowCatalog

    if depth <= 0:
        return ()
    via: dict[str, str] = {}
    for group in store.dependencies.of_run(run_id):
        join = f"quorum {group.needed}" if group.join == "quorum" else group.join
        for member in group.members:
            via[member.run_id] = f"spawn {group.state}.{member.label} ({join}: {group.status})"
    catalog = WorkflowCatalog(store)
    return tuple(
        ChildRun(
            run_id=child.id,
            workflow=catalog.workflow(child.workflow_digest).name,
            status=str(child.status),
            current_state=child.current_state,
            via=via.get(child.id, "delegate"),
            children=run_tree(store, child.id, depth - 1),
        )
        for child in store.dependencies.children_of(run_id)
    )


def child_runs(store: Store, run_id: str, caller: Caller = CLI) -> list[Run]:
    """The runs ``run_id`` started for its dependency groups, oldest first (those in the
    caller's scopes)."""
    return [run for run in store.dependencies.children_of(run_id) if caller.grant.sees(run.scope)]


def waiting_reason(run: Run) -> str | None:
    """One line saying what the run waits for, or why it stopped."""
    waiting = run.waiting
    if run.status == RunStatus.PAUSED:
        return f"paused (was {run.paused_from_status})"
    if waiting is None:
        return None
    if waiting["kind"] == "attention":
        return waiting["reason"]
    if waiting["kind"] == "objective_retry":
        return f"retry at {waiting['retry_at']} (after run {waiting['after_run']})"
    if waiting["kind"] == "timer":
        return f"timer until {waiting['due']}"
    if waiting["kind"] == "event":
        correlation = waiting["correlation"] or {}
        return f"event {waiting['name']} {correlation}".rstrip()
    if waiting["kind"] == "agent":
        return f"agent request {waiting['agent_request_id']} to {waiting['callee']}"
    if waiting["kind"] == "dependency":
        return f"child runs of dependency group {waiting['group_id']}"
    if waiting["kind"] == "capacity":
        limit = waiting["waits_for"]
        if limit["kind"] == "paused":
            return f"capacity: {limit['limit']} is paused"
        if limit["kind"] == "quota":
            needs = f", {limit['needs']} more needed" if "needs" in limit else ""
            return (
                f"capacity: {limit['limit']} (quota, {limit.get('used', '?')} of "
                f"{limit.get('max', '?')} used{needs}; resets at {limit.get('resets_at', '?')})"
            )
        if "max" in limit:
            return (
                f"capacity: {limit['limit']} ({limit['kind']}, {limit.get('in_use', '?')} of "
                f"{limit['max']} in use)"
            )
        return f"capacity: {limit['limit']} ({limit['kind']})"
    if waiting["kind"] == "approval":
        return (
            f"approval {waiting['approval_id']} of proposal {waiting['proposal']} "
            f"{waiting['hash']} (expires {waiting['expires_at']})"
        )
    return None


def run_events(
    store: Store, run_id: str, *, after: int = 0, limit: int = 100, caller: Caller = CLI
) -> tuple[Event, ...]:
    visible_run(store, run_id, caller.grant)  # NotFound for an unknown run, not an empty page
    return store.runs.events(run_id, after, limit)


def follow_events(
    store: Store,
    run_id: str,
    *,
    after: int = 0,
    timeout: float | None = None,
    caller: Caller = CLI,
) -> Iterator[Event]:
    visible_run(store, run_id, caller.grant)
    return store.runs.follow_events(run_id, after, timeout=timeout)


# Each run command takes an optional ``expected_revision``: when given, a run that has
# changed since the caller read it is refused (``stale_revision``) instead of acted on.


def pause_run(store: Store, request: RunCommand, caller: Caller) -> Run:
    """Stop a run where it is; :func:`resume_run` puts it back. Waits stay registered."""
    visible_run(store, request.run_id, caller.grant)
    return store.runs.pause(
        request.run_id, caller.actor, request.reason, expected_revision=request.expected_revision
    )


def resume_run(store: Store, request: RunCommand, caller: Caller) -> Run:
    """Undo a pause: a waiting run waits again, anything else is queued for a worker."""
    visible_run(store, request.run_id, caller.grant)
    return store.runs.resume(
        request.run_id, caller.actor, request.reason, expected_revision=request.expected_revision
    )


@dataclass(frozen=True)
class Canceled:
    """A canceled run and what its cancellation prevented and what may have happened."""

    run: Run
    #: the ``run.canceled`` event's payload (:func:`cancellation`)
    report: dict[str, Any]
    #: False when the run had been canceled already: a repeated cancel changes nothing, as a
    #: repeated approval decision does not
    changed: bool = True


def cancel_run(store: Store, request: RunCommand, caller: Caller) -> Canceled:
    """Cancel durably; the ``run.canceled`` event says what the run was doing. Canceling a
    run that is canceled already is a no-op (``changed`` False) with the first cancel's report;
    a run that ended otherwise (completed, failed) cannot be canceled."""
    from openseal.runtime.engine import cascade
    from openseal.runtime.faults import cancel_hook_from_env

    run = visible_run(store, request.run_id, caller.grant)
    if run.status != RunStatus.CANCELED:
        try:
            run = cascade.cancel_run(
                store, request.run_id, caller.actor, request.reason,
                expected_revision=request.expected_revision, after_commit=cancel_hook_from_env(),
            )  # fmt: skip
            return Canceled(run, cancellation(store, run))
        except InvalidStatus:
            run = store.runs.get(run.id)  # another cancel may have come first
            if run.status != RunStatus.CANCELED:
                raise
    return Canceled(run, cancellation(store, run), changed=False)


def cancellation(store: Store, run: Run) -> dict[str, Any]:
    """What canceling ``run`` prevented and what may already have happened: the payload of its
    ``run.canceled`` event (the worker that may be executing it, the agent requests and
    approvals canceled, and every action: canceled unsent, or sent with its outcome)."""
    for event in reversed(store.runs.events(run.id, max(run.last_event_seq - 5, 0), 10)):
        if event.type == "run.canceled":
            return dict(event.payload) if isinstance(event.payload, dict) else {}
    return {}


def intervene(store: Store, request: Intervention, caller: Caller) -> Run:
    """Repair a paused or stuck run: set the current state's output and/or move it."""
    if not request.reason.strip():
        raise UsageError("a reason is required to intervene")
    run = visible_run(store, request.run_id, caller.grant)
    if request.state is not None:
        from openseal.runtime.engine.catalog import WorkflowCatalog

        workflow = WorkflowCatalog(store).workflow(run.workflow_digest)
        if request.state not in workflow.states:
            known = ", ".join(sorted(workflow.states))
            raise InvalidInput(
                f"workflow {workflow.name} has no state {request.state!r} (states: {known})"
            )
    return store.runs.intervene(
        request.run_id, caller.actor, request.reason, state=request.state, value=request.value,
        expected_revision=request.expected_revision,
    )  # fmt: skip


def receive_event(store: Store, request: EventDelivery, caller: Caller) -> Delivery:
    """Hand an inbound event to the run waiting for it, or keep it for one that will, and fire
    the event triggers of its name whose filter holds (``fired``). With a
    ``key`` (the sender's id for the delivery) a redelivery is acknowledged with the first
    event (``duplicate``), not stored again. The event wakes only runs in the caller's scopes
    (a caller reaching every scope: any run), and fires triggers only when it reaches the
    ``default`` scope, where triggers start their objectives. The firings commit with the
    stored event, so none is lost to a crash after it and a redelivery has none to add."""
    from openseal.runtime.engine import door, quotas
    from openseal.runtime.engine.triggers import event_workflows, fire_event
    from openseal.runtime.faults import event_hook_from_env

    fired = event_workflows(store, request.name)
    door.check(store, fired)  # 429 when a queue is full
    if fired:  # triggers start their objectives in the default scope
        quotas.check_door(store, DEFAULT_SCOPE)

    def fire(conn: Connection, event: InboundEvent) -> list[TriggerFiring]:
        return fire_event(store, conn, event) if event.reaches(DEFAULT_SCOPE) else []

    scopes = caller.grant.visible()
    return store.inbound_events.receive(
        request.name, request.correlation or {}, request.payload, key=request.key,
        actor=caller.actor, scopes=None if scopes is None else list(scopes), fire=fire,
        hook=event_hook_from_env(),
    )  # fmt: skip
