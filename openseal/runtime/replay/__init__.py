"""The replay room: re-drive recorded runs through a compiled version, with no model call, no
tool call and no effect (invariant 17), and say per run whether it would go the same way.

``history`` (a run's record, read once, and its path as marks), ``drive`` (the re-drive, by
the engine's own state logic), ``outside`` (approvals, actions and waits from the record),
``verdict`` (recorded path against re-driven path) and ``report`` (the summary and verdicts).

Two entry points::

    report = replay_proposal(store, "01a4c9", Selection(runs=100))   # a change, before review
    report = check_runs(store, Selection(workflow="procure_laptops"))  # each run's own version

Both read the store and write nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from openseal.runtime.actions.admission import Budget, spend_budgets
from openseal.runtime.compiled import CompiledWorkflow, version_key
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.governance import migration
from openseal.runtime.governance.queries import get_proposal
from openseal.runtime.replay.drive import Spend, Trace, redrive
from openseal.runtime.replay.history import load_history, recorded_marks
from openseal.runtime.replay.outside import exceeded
from openseal.runtime.replay.report import DiffLine, ReplayReport, RunVerdict
from openseal.runtime.replay.verdict import Verdict, judge
from openseal.runtime.store import ChangeProposal, ListQuery, NotFound, Run, Store
from openseal.wire import jsonable

#: runs replayed per workflow when a selection names no number
DEFAULT_RUNS = 100
#: runs read per page while selecting
_PAGE = 500


@dataclass(frozen=True)
class Selection:
    """Which recorded runs to replay: the ``runs`` newest (per workflow), those created at or
    after ``since``, or the runs named in ``run_ids``; ``workflow`` narrows ``check_runs``."""

    runs: int | None = None
    since: datetime | None = None
    run_ids: tuple[str, ...] = ()
    workflow: str | None = None
    #: only runs in these scopes (None: every scope); a named run elsewhere is not found
    scopes: tuple[str, ...] | None = None


def replay_run(
    store: Store,
    workflow: CompiledWorkflow,
    run: Run,
    catalog: WorkflowCatalog | None = None,
    refusals: Mapping[str, str] | None = None,
) -> Verdict:
    """The verdict on ``run`` re-driven through ``workflow`` (reads only); ``catalog``: where
    the run's pinned version is read (a replay of many runs shares one); ``refusals``: the
    payloads a shared spend budget refuses (:func:`_recount`)."""
    return _replayed(store, workflow, run, catalog, refusals)[0]


def _replayed(
    store: Store,
    workflow: CompiledWorkflow,
    run: Run,
    catalog: WorkflowCatalog | None,
    refusals: Mapping[str, str] | None = None,
    proposed: Mapping[str, CompiledWorkflow] | None = None,
) -> tuple[Verdict, Trace]:
    catalog = catalog or WorkflowCatalog(store)
    pinned = catalog.workflow(run.workflow_digest)
    kinds = {name: spec.kind for name, spec in pinned.states.items()}
    history = load_history(store, run, kinds)
    trace = redrive(store, workflow, history, refusals, _children(store, catalog, proposed))
    return judge(recorded_marks(history), trace, workflow, kinds), trace


def _children(
    store: Store, catalog: WorkflowCatalog, proposed: Mapping[str, CompiledWorkflow] | None
) -> Callable[[str, str], Verdict | None] | None:
    """A spawned child's verdict through the proposed version of its workflow (None when the
    proposal does not change that workflow)."""
    if not proposed:
        return None

    def child(run_id: str, workflow: str) -> Verdict | None:
        version = proposed.get(workflow)
        if version is None:
            return None
        return _replayed(store, version, store.runs.get(run_id), catalog, None, proposed)[0]

    return child


def replay_proposal(store: Store, proposal_id: str, selection: Selection) -> ReplayReport:
    """Replay the selected runs of each workflow a change proposal changes through the
    version it proposes. ``proposal_id`` may be a unique prefix."""
    proposal = get_proposal(store, proposal_id)
    catalog = WorkflowCatalog(store)
    versions: dict[str, str] = {}
    proposed: dict[str, CompiledWorkflow] = {}
    for target in sorted(proposal.targets, key=lambda t: t.name):
        if target.kind == "workflow":
            proposed[target.name] = catalog.workflow(target.digest)
            versions[target.name] = version_key(target.digest)
    replayed: list[tuple[CompiledWorkflow | None, Run, Verdict, Trace]] = []
    for name, version in sorted(proposed.items()):
        for run in _selected(store, selection, name):
            replayed.append(
                (version, run, *_replayed(store, version, run, catalog, None, proposed))
            )
    for name in _spawning(store, proposed):
        # a workflow the change leaves alone whose runs spawn one it changes: its runs are
        # replayed through their own versions, their children through the proposed ones
        for run in _selected(store, selection, name):
            own = catalog.workflow(run.workflow_digest)
            replayed.append((None, run, *_replayed(store, own, run, catalog, None, proposed)))
    refusals = _recount(store, [(w, r, trace) for w, r, _, trace in replayed if w is not None])
    verdicts = [
        _verdict(
            workflow or catalog.workflow(run.workflow_digest), run,
            _replayed(store, workflow, run, catalog, refusals[run.id], proposed)[0]
            if workflow is not None and run.id in refusals else verdict,
        )
        for workflow, run, verdict, _ in replayed
    ]  # fmt: skip
    diff = tuple(
        DiffLine(
            str(c.get("definition")), str(c.get("path")), str(c.get("message")),
            bool(c.get("widening")),
        )
        for c in proposal.diff.get("changes") or ()
    )  # fmt: skip
    runs = tuple(sorted(verdicts, key=lambda v: v.run_id))
    return ReplayReport(proposal.id, versions, runs, diff, _moves(store, proposal, selection))


def _spawning(store: Store, proposed: Mapping[str, CompiledWorkflow]) -> list[str]:
    """The deployed workflows the change leaves alone whose ``spawn`` states start a workflow
    it changes, by name."""
    with store.read() as conn:
        active = store.definitions.active_documents(conn, "workflow")
    found = set()
    for _, document in active:
        name = str(document.get("name"))
        states = (document.get("graph") or {}).get("states") or {}
        for state in states.values():
            children = (
                (state.get("config") or {}).get("child") if state.get("kind") == "spawn" else None
            )
            if name not in proposed and any(
                str(child.get("workflow")) in proposed for child in (children or {}).values()
            ):
                found.add(name)
    return sorted(found)


def _moves(store: Store, proposal: ChangeProposal, selection: Selection) -> tuple[Any, ...]:
    """Where the waiting runs a proposal migrates would move, by its dry run (reads only)."""
    with store.read() as conn:
        migrations = migration.migrations_of(store, conn, proposal.targets)
    if not migrations:
        return ()
    plan = migration.migrate_runs(
        store, migrations, proposal.id, "system:replay", dry_run=True,
        selection=migration.Selection(scopes=selection.scopes),
    )  # fmt: skip
    return tuple(jsonable(move) for move in plan.moves)


def check_runs(store: Store, selection: Selection) -> ReplayReport:
    """Replay the selected runs through their own pinned versions: a release that
    reinterprets a recorded history shows as a divergence."""
    catalog = WorkflowCatalog(store)
    verdicts = []
    for run in _selected(store, selection, selection.workflow):
        workflow = catalog.workflow(run.workflow_digest)
        verdicts.append(_verdict(workflow, run, replay_run(store, workflow, run, catalog)))
    return ReplayReport("pinned", {}, tuple(sorted(verdicts, key=lambda v: v.run_id)))


def _verdict(workflow: CompiledWorkflow, run: Run, verdict: Verdict) -> RunVerdict:
    return RunVerdict(
        run.id, workflow.name, version_key(run.workflow_digest), str(run.status), verdict
    )


def _recount(
    store: Store, replayed: list[tuple[CompiledWorkflow, Run, Trace]]
) -> dict[str, dict[str, str]]:
    """Count the spend budgets the replayed runs share (an owner's: a team's or an agent's)
    again, under the limits of the versions replayed: every spend a re-drive admitted, in
    the order the recorded actions were admitted, on top of what runs not replayed hold on
    the same budget. Run id → the payloads (content hash) a budget would refuse, and why;
    a run refused once stops there, so its later spends are not counted."""
    spends: dict[str, list[tuple[datetime, str, Spend, Budget]]] = {}
    for workflow, run, trace in replayed:
        for budget in spend_budgets(workflow, run.id):
            if budget.scope == f"run:{run.id}":
                continue  # the run's own budget: counted in its re-drive
            spends.setdefault(budget.scope, []).extend(
                (spend.at, run.id, spend, budget) for spend in trace.spends
            )
    if not spends:
        return {}
    ids = {run.id for _, run, _ in replayed}
    with store.read() as conn:
        on = {scope: store.actions.reservations_on(conn, scope) for scope in spends}
    held = {
        scope: [(at, amount, unit) for run_id, _, amount, unit, at in rows if run_id not in ids]
        for scope, rows in on.items()
    }
    refusals: dict[str, dict[str, str]] = {}
    for scope, found in sorted(spends.items()):
        counted = list(held[scope])
        for at, run_id, spend, budget in sorted(found, key=lambda s: (s[0], s[1], s[2].content)):
            if run_id in refusals:
                continue
            since = at - timedelta(seconds=budget.period) if budget.period else None
            currency = budget.currency or spend.currency
            used = sum(
                amount for when, amount, unit in counted
                if when <= at and (since is None or when >= since) and unit == currency
            )  # fmt: skip
            if used + spend.amount > budget.limit + 1e-9:
                why = exceeded(budget, used + spend.amount, spend.currency)
                refusals[run_id] = {spend.content: why}
                continue
            counted.append((at, spend.amount, currency))
    return refusals


def _selected(store: Store, selection: Selection, workflow: str | None) -> list[Run]:
    """The runs ``selection`` names, of ``workflow`` (None: any), oldest first."""
    if selection.run_ids:
        named = [
            _named(store, run_id, selection.scopes) for run_id in dict.fromkeys(selection.run_ids)
        ]
        found = [r for r in named if workflow is None or _workflow_of(store, r) == workflow]
        return sorted(found, key=lambda r: r.id)
    limit = selection.runs
    if limit is None and selection.since is None:
        limit = DEFAULT_RUNS
    picked = list(
        _newest(
            store,
            ListQuery(since=selection.since, workflow=workflow, scopes=selection.scopes),
            limit,
        )
    )
    return sorted(picked, key=lambda r: r.id)


def _newest(store: Store, query: ListQuery, limit: int | None) -> Iterator[Run]:
    after: str | None = None
    taken = 0
    while limit is None or taken < limit:
        size = _PAGE if limit is None else min(_PAGE, limit - taken)
        page = store.runs.newest(replace(query, limit=size, after=after))
        yield from page
        taken += len(page)
        if len(page) < size:
            return
        after = page[-1].id


def _named(store: Store, run_id: str, scopes: tuple[str, ...] | None) -> Run:
    run = store.runs.get(run_id)
    if scopes is not None and run.scope not in scopes:
        raise NotFound(f"run {run_id} not found")
    return run


def _workflow_of(store: Store, run: Run) -> str:
    return WorkflowCatalog(store).workflow(run.workflow_digest).name


__all__ = [
    "ReplayReport",
    "RunVerdict",
    "Selection",
    "Verdict",
    "check_runs",
    "replay_proposal",
    "replay_run",
]
