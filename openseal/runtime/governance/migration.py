"""Moving waiting runs to a new version, as a governed change (invariant 17).

A workflow version may carry ``migrate`` blocks: for an earlier version, where each of its
waiting states goes and what the moved run carries. The compiler checked the block against
both graphs when it was deployed; this module applies it, once the change proposal holding
the version is activated (:func:`migrate_runs`, also ``openseal runs migrate``).

Each run moves in its own write transaction, with its row locked first and its epoch bumped,
and one ``run.migrated`` event naming both versions and states. A run that is already on the
new version is not moved again, so a bulk migration cut short (a crash, a SIGKILL) is finished
by running it again: every run moves exactly once or not at all. A run stays where it is, with
the reason reported, when an action of it may have had an effect that is not settled
(``admitted``, ``dispatched``, ``unknown``, ``needs_attention``), when it is not waiting in a
mapped state, or when a carried value cannot be computed.

A run waiting for an approval keeps it when the new version would ask for the same thing: the
proposal it drafts for the run is the same action (skill and its pinned digest, actor,
arguments, spend) under the same grant (the skill's effect, its grants' constraints and
approval terms). The pending proposal then keeps its hash and the approval stands. Otherwise
the approval is withdrawn with the reason, the new proposal is stored and a new approval is
asked for its hash. Budgets carry over: the run's usage is not touched.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from openseal.compiler import EvaluationError, find_earlier
from openseal.contract import (
    ApprovalSettings,
    ApprovalWait,
    DelegateSettings,
    ProposalSettings,
    RunContext,
)
from openseal.errors import RuntimeFailure
from openseal.runtime.actions import proposals
from openseal.runtime.clock import iso
from openseal.runtime.compiled import (
    CompiledWorkflow,
    DefinitionError,
    delegation_request,
    evaluate_json,
    same_request,
)
from openseal.runtime.faults import BlockAt, hook_from_env
from openseal.runtime.statuses import ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.store import Connection, Run, Store

#: statuses of runs that wait holding no worker, whose wait a migration can carry over
MOVABLE_STATUSES = frozenset(
    {
        RunStatus.WAITING_FOR_APPROVAL,
        RunStatus.WAITING_FOR_EVENT,
        RunStatus.SLEEPING,
        RunStatus.WAITING_FOR_AGENT,
        RunStatus.WAITING_FOR_CAPACITY,
    }
)
#: what a movable run waits for: its approval, its timer, its event, its agent request (when
#: the new state would ask the same), a slot (before its visit began); not a retry's backoff,
#: an action's reconciliation or child runs
MOVABLE_WAITS = frozenset({"approval", "timer", "event", "agent", "capacity"})
PAGE = 200


def state_scope(inputs: Mapping[str, Any], states: Mapping[str, Any]) -> dict[str, object]:
    """The roots a carried value or a proposal reads: ``input`` and ``state.<name>.output``
    (as the engine evaluates workflow expressions)."""
    return {
        "input": dict(inputs),
        "state": {name: {"output": value} for name, value in states.items()},
    }


class _Versions:
    """Compiled workflow versions read from the store (immutable, so read once)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._built: dict[str, CompiledWorkflow] = {}

    def document(self, digest: str) -> dict[str, Any]:
        return self._store.definitions.get(digest.removeprefix("sha256:")).document

    def workflow(self, digest: str) -> CompiledWorkflow:
        if digest not in self._built:
            version = self._store.definitions.get(digest)
            self._built[digest] = CompiledWorkflow(
                version.name, version.digest, version.document, self
            )
        return self._built[digest]


@dataclass(frozen=True)
class Migration:
    """One ``migrate`` block of a proposal's workflow version: from ``old`` to ``new``."""

    workflow: str
    old: str
    new: str
    block: Mapping[str, Any]


@dataclass(frozen=True)
class Selection:
    """Which runs to consider: by workflow, earlier version (a digest prefix) and state."""

    workflow: str | None = None
    version: str | None = None
    state: str | None = None
    #: only runs in these scopes (None: every scope)
    scopes: tuple[str, ...] | None = None

    def admits(self, migration: Migration) -> bool:
        if self.workflow is not None and migration.workflow != self.workflow:
            return False
        return self.version is None or migration.old.startswith(
            self.version.lower().removeprefix("sha256:")
        )


@dataclass(frozen=True)
class RunMove:
    """What happened (or, in a dry run, would happen) to one run."""

    run_id: str
    workflow: str
    from_version: str
    from_state: str | None
    to_version: str
    to_state: str | None
    #: ``migrated``, ``would_move``, ``blocked`` (an unsettled action), ``stays``
    outcome: str
    reason: str | None = None
    #: for a run waiting for an approval: ``kept`` or ``withdrawn``
    approval: str | None = None
    new_approval_id: str | None = None


@dataclass(frozen=True)
class MigrationReport:
    proposal_id: str
    dry_run: bool
    moves: tuple[RunMove, ...] = field(default_factory=tuple)

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for move in self.moves:
            counts[move.outcome] = counts.get(move.outcome, 0) + 1
        return dict(sorted(counts.items()))


class MigrationError(RuntimeFailure):
    """A migration could not be applied; ``code`` says why."""

    code = "migration_refused"


class RequestChanged(MigrationError):
    """The state a run waiting for its agent request would move to asks another request."""


def migrations_of(store: Store, conn: Connection, targets: Any) -> list[Migration]:
    """The ``migrate`` blocks of the workflow versions among ``targets``, each with the
    earlier version it names resolved among the stored versions of that workflow."""
    found = []
    for target in targets:
        if target.kind != "workflow":
            continue
        stored = store.definitions.document(conn, target.digest)
        blocks = (stored[1].get("spec", {}).get("migrate") or []) if stored else []
        if not blocks:
            continue
        earlier = store.definitions.versions_named(conn, "workflow", target.name)
        earlier.pop(target.digest, None)
        for block in blocks:
            old, problem = find_earlier(str(block["version"]), earlier)
            if old is None:
                raise MigrationError(f"workflow {target.name}: {problem}", code="migration_invalid")
            found.append(Migration(target.name, old, target.digest, block))
    return found


def migrate_runs(
    store: Store,
    migrations: list[Migration],
    proposal_id: str,
    actor: str,
    *,
    dry_run: bool = False,
    selection: Selection | None = None,
) -> MigrationReport:
    """Move the waiting runs each of ``migrations`` covers (each in its own transaction), or
    with ``dry_run`` say what would move where and change nothing."""
    catalog, selection = _Versions(store), selection or Selection()
    moves: list[RunMove] = []
    for migration in migrations:
        if not selection.admits(migration):
            continue
        mover = _Mover(store, catalog, migration, proposal_id, actor, selection.scopes)
        for run_id in _candidates(store, migration.old):
            move = mover.move(run_id, dry_run=dry_run, state=selection.state)
            if move is not None:
                moves.append(move)
    return MigrationReport(proposal_id, dry_run, tuple(moves))


def _candidates(store: Store, digest: str) -> Iterator[str]:
    after = None
    while True:
        with store.read() as conn:
            page = store.runs.ids_on_version(conn, digest, after=after, limit=PAGE)
        yield from page
        if len(page) < PAGE:
            return
        after = page[-1]


@dataclass
class _Mover:
    store: Store
    catalog: _Versions
    migration: Migration
    proposal_id: str
    actor: str
    scopes: tuple[str, ...] | None = None
    crash: BlockAt | None = field(default_factory=hook_from_env)

    def move(self, run_id: str, *, dry_run: bool, state: str | None) -> RunMove | None:
        if self.scopes is not None:
            with self.store.read() as conn:
                if self.store.runs.load(conn, run_id).scope not in self.scopes:
                    return None  # another scope's run: not the caller's to see or move
        if dry_run:
            with self.store.read() as conn:
                return self._decide(conn, run_id, state, write=False)
        # Proposals are small: their bytes are kept in the row, so nothing is written to a
        # file while the run's row is locked.
        with self.store.write() as conn:
            return self._decide(conn, run_id, state, write=True)

    def _mapping(self, run: Run, state: str | None) -> Mapping[str, Any] | None:
        if state is not None and run.current_state != state:
            return None
        found = (self.migration.block.get("state") or {}).get(run.current_state or "")
        return found if isinstance(found, Mapping) else None

    def _decide(self, conn: Connection, run_id: str, state: str | None, *, write: bool) -> RunMove:
        run = self.store.runs.load(conn, run_id, lock=write)  # the run's row first
        m = self.migration
        mapping = self._mapping(run, state)

        def report(outcome: str, reason: str | None = None, **more: Any) -> RunMove:
            target = str(mapping["to"]).removeprefix("state.") if mapping else None
            return RunMove(
                run.id, m.workflow, m.old, run.current_state, m.new, target, outcome, reason,
                **more,
            )  # fmt: skip

        if run.workflow_digest != m.old:
            return report("stays", f"it is on version {run.workflow_digest[:12]} now")
        if mapping is None:
            left = run.current_state in (m.block.get("leave") or [])
            why = "its state is left behind" if left else "its state is not mapped"
            return report("stays", f"{why} ({run.current_state})")
        if run.status not in MOVABLE_STATUSES:
            return report("stays", f"it is {run.status}, not waiting")
        kind = run.waiting["kind"] if run.waiting is not None else None
        if kind not in MOVABLE_WAITS:  # a retry's backoff, an action's reconciliation
            return report("stays", f"it waits for {kind or 'nothing'}, not in its state")
        if kind == "capacity" and not _visit_not_begun(run):
            return report("stays", f"its visit of {run.current_state} has begun")
        unsettled = self.store.actions.unsettled(conn, run.id)
        if unsettled:
            a = unsettled[0]
            why = f"action {a.id} ({a.skill}) is {a.status}; the run moves once it is settled"
            return report("blocked", why)
        try:
            context = self._context(run, mapping)
            approval = self._approval(conn, run, mapping, context)
            self._same_request(conn, run, mapping, context)
        except RequestChanged as exc:
            return report("stays", str(exc))
        except (EvaluationError, DefinitionError, MigrationError) as exc:
            return report("stays", f"a carried value cannot be computed: {exc}")
        if not write:
            return report("would_move", approval=approval.outcome if approval else None)
        self._write(conn, run, mapping, approval.context if approval else context, approval)
        if self.crash is not None:  # a crash test stops here: the move written, not committed
            self.crash.migrated(run.id)
        return report(
            "migrated",
            approval=approval.outcome if approval else None,
            new_approval_id=approval.new_id if approval else None,
        )

    def _context(self, run: Run, mapping: Mapping[str, Any]) -> RunContext:
        """The run's context on the new version: outputs kept by state name, carried values
        computed from the run as the earlier version recorded it."""
        new = self.catalog.workflow(self.migration.new)
        old_context = run.context
        scope = state_scope(old_context.get("inputs") or {}, old_context.get("states") or {})
        states = {k: v for k, v in (old_context.get("states") or {}).items() if k in new.states}
        for key, expression in sorted((mapping.get("carry") or {}).items()):
            states[key] = evaluate_json(expression, scope)
        target = str(mapping["to"]).removeprefix("state.")
        visits = {k: v for k, v in (old_context.get("visits") or {}).items() if k in new.states}
        visits[target] = max(visits.get(target, 0), 1)
        context: RunContext = {**old_context, "states": states, "visits": visits}
        context["position"] = {"state": target, "visit": visits[target]}
        return context

    def _same_request(
        self, conn: Connection, run: Run, mapping: Mapping[str, Any], context: RunContext
    ) -> None:
        """A run waiting for its agent request moves only to a state that would make the same
        request of the same callee: the request, its child run and its carved budget go on."""
        waiting: Mapping[str, Any] = run.waiting or {}
        if waiting.get("kind") != "agent":
            return
        new = self.catalog.workflow(self.migration.new)
        target = new.state(str(mapping["to"]).removeprefix("state."))
        scope = state_scope(context.get("inputs") or {}, context.get("states") or {})
        asked = delegation_request(new, target, scope)
        request = self.store.agent_requests.get_in(conn, str(waiting.get("agent_request_id")))
        changed = same_request(request.request, asked)
        callee = target.settings(DelegateSettings)["to"]
        if request.callee != callee:
            changed.insert(0, "callee")
        if changed:
            raise RequestChanged(
                f"{target.name} would ask {callee} another request than {request.id} "
                f"(its {', '.join(changed)} differs)"
            )

    def _approval(
        self,
        conn: Connection,
        run: Run,
        mapping: Mapping[str, Any],
        context: RunContext,
    ) -> _ApprovalMove | None:
        if run.status is not RunStatus.WAITING_FOR_APPROVAL:
            return None
        waiting: Mapping[str, Any] = run.waiting or {}
        approval = self.store.approvals.get(conn, str(waiting.get("approval_id")))
        if approval.status is not ApprovalStatus.PENDING:
            raise MigrationError(f"its approval {approval.id} is {approval.status}, not pending")
        draft, pending, same = self._approval_draft(conn, run, mapping, context)
        outcome = "kept" if same else "withdrawn"
        return _ApprovalMove(outcome, context, approval.id, None, draft, output=pending)

    def _approval_draft(
        self, conn: Connection, run: Run, mapping: Mapping[str, Any], context: RunContext
    ) -> tuple[proposals.Draft, dict[str, Any], bool]:
        """The proposal the new version drafts for the run, the pending one's output, and
        whether they are the same (the same action under the same grant)."""
        new = self.catalog.workflow(self.migration.new)
        old = self.catalog.workflow(self.migration.old)
        target = new.state(str(mapping["to"]).removeprefix("state."))
        reference = target.settings(ApprovalSettings)["proposal"]
        name = proposals.proposal_name(reference)
        drafting = proposals.drafting_state(new, name)
        config = new.state(drafting).settings(ProposalSettings)[name]
        scope = state_scope(context.get("inputs") or {}, context.get("states") or {})
        draft = proposals.draft(new, run.id, drafting, name, config, scope)
        waiting: Mapping[str, Any] = run.waiting or {}
        pending = self.store.proposals.by_hash(conn, run.id, str(waiting.get("hash")))
        if pending is None:
            raise MigrationError("its pending proposal is not stored")
        same = _same_action(pending.document, draft.document, old, new, draft.skill)
        return draft, proposals.output_of(pending), same

    def _write(
        self,
        conn: Connection,
        run: Run,
        mapping: Mapping[str, Any],
        context: RunContext,
        approval: _ApprovalMove | None,
    ) -> None:
        now, m = self.store.now(), self.migration
        target = str(mapping["to"]).removeprefix("state.")
        waiting: dict[str, Any] = dict(run.waiting or {})
        values: dict[str, Any] = {}
        if "state" in waiting:
            waiting["state"] = target
        if approval is not None and approval.outcome == "withdrawn":
            waiting, values["wake_at"] = self._ask_again(conn, run, target, approval, now)
        if approval is not None:  # the proposal the approval is for, where this version reads it
            drafted = context["states"].get(approval.draft.state)
            outputs = dict(drafted) if isinstance(drafted, Mapping) else {}
            context["states"][approval.draft.state] = {
                **outputs,
                approval.draft.name: approval.output,
            }
        payload = {
            "proposal": self.proposal_id,
            "workflow": m.workflow,
            "from": {"version": m.old, "state": run.current_state},
            "to": {"version": m.new, "state": target},
            "carried": sorted(mapping.get("carry") or {}),
            **({"approval": approval.summary()} if approval else {}),
        }
        values.update(workflow_digest=m.new, context=context, current_state=target, waiting=waiting)
        if run.status is RunStatus.WAITING_FOR_CAPACITY:
            # it begins the new state, counted against that state's limits
            self.store.capacity.forget(conn, run.id)
            values.update(status=RunStatus.QUEUED, waiting=None, wake_at=None)
            self.store.notify_work(conn, run.id)
        self.store.runs.migrate(
            conn, run, values=values, payload=payload, actor=self.actor, now=now
        )

    def _ask_again(
        self, conn: Connection, run: Run, target: str, move: _ApprovalMove, now: Any
    ) -> tuple[dict[str, Any], Any]:
        """Withdraw the pending approval, store the new proposal and ask for its approval."""
        reason = (
            f"withdrawn: the run moved to version {self.migration.new[:12]} (change proposal "
            f"{self.proposal_id}), whose proposal {move.draft.name} differs"
        )
        old = self.store.approvals.get(conn, move.approval_id)
        closed = self.store.approvals.withdraw(conn, old, reason=reason, now=now, actor=self.actor)
        if closed is None:
            raise MigrationError(f"approval {old.id} was decided meanwhile")
        self.store.actions.follow_approval(conn, closed, ActionStatus.CANCELED, now, self.actor)
        draft = move.draft
        digest = self.store.artifacts.write_file(draft.data)
        self.store.artifacts.record_in(
            conn, digest, len(draft.data), proposals.MEDIA_TYPE, draft.data
        )
        proposal, _ = self.store.proposals.insert(conn, run.id, draft, digest, now)
        self.store.actions.ensure(conn, proposal, now)
        config = self.catalog.workflow(self.migration.new).state(target)
        settings = config.settings(ApprovalSettings)
        expires_in = settings["expires_in"]
        expires_at = now + timedelta(seconds=float(expires_in)) if expires_in else None
        opened = self.store.approvals.open_request(
            conn, run_id=run.id, proposal_id=proposal.id, proposal_hash=proposal.hash,
            proposal_name=draft.name, state=target, approvers=settings["approvers"],
            on_timeout=settings["on_timeout"], expires_at=expires_at, now=now, actor=self.actor,
        )  # fmt: skip
        self.store.actions.follow_approval(
            conn, opened, ActionStatus.WAITING_FOR_APPROVAL, now, self.actor
        )
        move.new_id = opened.id
        move.output = proposals.output_of(proposal)
        waiting: ApprovalWait = {
            "kind": "approval",
            "state": target,
            "approval_id": opened.id,
            "proposal": draft.name,
            "hash": proposal.hash,
            "expires_at": iso(expires_at),
        }
        return dict(waiting), expires_at


@dataclass
class _ApprovalMove:
    outcome: str
    context: RunContext
    approval_id: str
    new_id: str | None
    draft: proposals.Draft
    output: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "approval_id": self.approval_id,
            "new_approval_id": self.new_id,
            "hash": self.draft.hash if self.outcome == "withdrawn" else None,
        }


def _visit_not_begun(run: Run) -> bool:
    """Whether the run, waiting for capacity, has not yet begun its current state's visit:
    nothing of the visit happened, so it may begin another state instead."""
    position: Mapping[str, Any] = run.context.get("position") or {}
    return (
        position.get("state") == run.current_state
        and not position.get("charged")
        and not position.get("attempt")
    )


def _same_action(
    pending: Mapping[str, Any],
    drafted: Mapping[str, Any],
    old: CompiledWorkflow,
    new: CompiledWorkflow,
    skill: str,
) -> bool:
    """Whether the new version's draft is the pending proposal's action under the same grant:
    everything but the version that drafted it, and the skill's entry (digest, effect,
    grants with their constraints and approval terms) in both versions."""

    def action(document: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in document.items() if k != "workflow"}

    def grant(workflow: CompiledWorkflow) -> Any:
        return (workflow.document.get("skills") or {}).get(skill)

    return action(pending) == action(drafted) and grant(old) == grant(new)
