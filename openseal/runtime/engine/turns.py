"""One turn of one run: save the phase, execute the current state, apply the outcome.

A turn is persisted before it executes (``start_turn``, with the turns budget checked in the
same transaction) — a pure state's turn (``transform``, ``decision``, ``end``) is executed in the
transaction that saves it, since it calls nothing (docs/decisions/0006); the state's handler
records every model and tool result as an activity;
the outcome (advance, finish, wait, needs attention) is applied with the turn's completion in
one fenced transaction. A turn that loses its claim raises ``StaleEpoch`` or ``LeaseLost``
and leaves nothing half-applied: the next claim replays from the recorded activities.

The run's ``context`` holds ``inputs``, ``states`` (outputs by state), ``visits`` (how often
each state was entered, which keys activity ids), ``position`` (the state being executed,
its visit, and retries after an operator intervened) and ``trail`` (recent states).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openseal.compiler import EvaluationError
from openseal.contract import Position, RunContext
from openseal.errors import InvalidInput
from openseal.runtime import telemetry
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError, StateSpec
from openseal.runtime.engine import budgets
from openseal.runtime.engine.capacity import Admission, resumed
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.engine.endings import end_run
from openseal.runtime.engine.objectives import fit_inputs
from openseal.runtime.engine.states import handler_for, is_pure, preparer_for
from openseal.runtime.engine.states.base import (
    Advance,
    Attention,
    Finish,
    Outcome,
    StepContext,
    Suspend,
    TurnStopped,
    state_scope,
)
from openseal.runtime.engine.tools import ToolRunner
from openseal.runtime.faults import Hook
from openseal.runtime.providers.base import ModelError
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import (
    Claim,
    FencedTx,
    IdempotencyConflict,
    Run,
    StaleEpoch,
    Store,
    Turn,
)
from openseal.skills.credentials import RuntimeContext

TRAIL_LENGTH = 20


@dataclass(frozen=True)
class TurnReport:
    """What one turn did (the worker logs one line per report)."""

    run_id: str
    state: str | None
    turn_seq: int | None
    outcome: str
    status: RunStatus
    seconds: float
    detail: str = ""


def enter(context: RunContext, state: str, came_from: str | None) -> RunContext:
    """The context once the run enters ``state``: a new visit, no stale output of it."""
    visits = {**context.get("visits", {})}
    visits[state] = visits.get(state, 0) + 1
    states = {k: v for k, v in context["states"].items() if k != state}
    trail = [*context.get("trail", []), *([came_from] if came_from else [])][-TRAIL_LENGTH:]
    # ``attempt`` (0) and ``attention`` (False) are left out until they change: every waiting
    # run stores its context, so defaults are not repeated in each one.
    position: Position = {"state": state, "visit": visits[state]}
    entered: RunContext = {**context, "states": states, "visits": visits, "position": position}
    if trail:
        entered["trail"] = trail
    return entered


def _prepared(run: Run, workflow: CompiledWorkflow) -> tuple[str, RunContext, bool]:
    """The state to execute, its context (with its ``position``), and whether an operator
    supplied its output."""
    context = run.context.copy()
    position = context.get("position")
    if run.current_state is None:
        if workflow.initial is None:
            raise DefinitionError(f"workflow {workflow.name} has no initial state")
        if run.attempt > 1:  # a retry may pin a newer version than its objective's inputs
            context["inputs"] = _retry_inputs(run, workflow)
        return workflow.initial, enter(context, workflow.initial, None), False
    state = run.current_state
    if position is None or position["state"] != state:  # intervene --state moved the run
        return state, enter(context, state, position["state"] if position else None), False
    if position.get("attention"):  # retried after needs_attention: fresh activity ids
        attempt = position.get("attempt", 0) + 1
        context["position"] = {**position, "attempt": attempt, "attention": False, "charged": False}
    supplied = state in context["states"]
    return state, context, supplied


def _retry_inputs(run: Run, workflow: CompiledWorkflow) -> dict[str, Any]:
    inputs = dict(run.context.get("inputs") or {})
    try:
        return fit_inputs(workflow.name, inputs, workflow.document, workflow.digest)
    except InvalidInput as exc:
        raise DefinitionError(f"the objective's inputs do not fit this version: {exc}") from None


def _turn_cost(spec: StateSpec, context: RunContext) -> dict[str, int]:
    """A state visit costs one turn, once: not its resumption after a wait, not a replay,
    and not an end state (the same count as the compiler's budget check, OS507)."""
    position = context["position"]  # set by _prepared
    if position.get("charged") or spec.kind == "end":
        return {}
    context["position"] = {**position, "charged": True}
    return {"turns": 1}


@dataclass(frozen=True)
class Moved:
    """Where an :class:`Advance` leads: the ``target`` state (None: nowhere, ``problem`` says
    why) and the run's context, entered into ``target`` (or with the output kept, when none)."""

    target: str | None
    context: RunContext
    problem: str = ""


def advanced(
    workflow: CompiledWorkflow, context: RunContext, source: str, outcome: Advance
) -> Moved:
    """The transition ``outcome`` takes out of ``source``: the state's output joins the
    context, the workflow's guards pick the target, and the target is entered.

    Pure: the executor applies it in its fenced transaction, and replay
    (:mod:`openseal.runtime.replay`) re-drives recorded runs with it."""
    context = context.copy()
    states = dict(context["states"])
    if outcome.output is not None:
        states[source] = outcome.output
    context["states"] = states
    scope = state_scope(context["inputs"], states)
    try:
        target = workflow.choose(source, outcome.event, scope)
    except EvaluationError as exc:
        return Moved(None, context, f"guard of {source} failed: {exc}")
    if target is None:
        return Moved(None, context, f"no transition from {source} for event {outcome.event!r}")
    return Moved(target, enter(context, target, source))


def activity_prefix(state: str, position: Position) -> str:
    attempt = position.get("attempt", 0)
    return f"{state}:{position['visit']}" + (f"r{attempt}" if attempt else "")


@dataclass(frozen=True)
class Started:
    """A turn that is saved and not yet executed: what :meth:`TurnExecutor.execute` runs."""

    run: Run
    state: str
    context: RunContext
    #: an operator supplied the state's output (``intervene --value``)
    supplied: bool
    turn: Turn
    #: ``time.monotonic()`` when the turn was saved
    since: float
    #: the run's pinned workflow and the state's spec in it, looked up once for the turn
    workflow: CompiledWorkflow
    spec: StateSpec
    #: what the state's preparer did in the transaction that saved the turn (an action's
    #: admission and ``dispatched`` mark, docs/decisions/0013); None: nothing
    prepared: Any = None


#: the ``lost`` of a pure state's turn: it is executed in the transaction that saves it, which
#: the fence refuses if the claim is gone, so nothing sets it (one event for all of them)
_IN_TRANSACTION = threading.Event()

#: what beginning a turn gives: the turn to execute, or the report of a turn that ended at once
Begun = Started | TurnReport


class TurnExecutor:
    def __init__(
        self,
        store: Store,
        catalog: WorkflowCatalog,
        providers: Callable[[Any], Any],
        tools: ToolRunner,
        hook: Hook,
        *,
        max_repairs: int = 2,
        context: RuntimeContext | None = None,
    ) -> None:
        self.store = store
        # Credential sources and adapter config for actions; values are read at call time.
        self.context = context
        self.catalog = catalog
        self.providers = providers
        self.tools = tools
        self.hook = hook
        self.max_repairs = max_repairs
        #: takes the concurrency slots each turn needs in the transaction that saves it
        self.admission = Admission(store)

    def begin(
        self,
        tx: FencedTx,
        *,
        first: bool = True,
        seq: int | None = None,
        chain: Callable[[], bool] | None = None,
        done: list[TurnReport] | None = None,
    ) -> Begun | None:
        """Save the run's next turn in ``tx`` (persist before acting, invariant 2).

        ``first`` is the first turn of a claim: turns an earlier claim left open are closed
        first. ``seq`` is the turn's number when the caller knows it. A turn that cannot
        start (the budget is spent, the document is broken) ends here with its report.

        With ``done`` (a list), a pure state's turn is also executed and its outcome applied
        in ``tx``, and the turns after it are begun the same way while ``chain()`` allows;
        the reports of the turns that ended in ``tx`` are appended to ``done``, and what is
        returned is the saved turn of a state that is not pure (prepared in ``tx`` where its
        kind is, see :meth:`_prepared`), or None (the last report says how the run stands).
        """
        while True:
            begun = self._begin_one(tx, first=first, seq=seq)
            if done is None:
                return begun
            if isinstance(begun, TurnReport):
                done.append(begun)
                return None
            kind = begun.spec.kind
            if not is_pure(kind):
                return self._prepared(tx, begun, kind)
            report = self._execute_in(tx, begun)
            if report is None:
                return begun
            done.append(report)
            if report.status != RunStatus.RUNNING or chain is None or not chain():
                return None
            first, seq = False, begun.turn.seq + 1

    def _prepared(self, tx: FencedTx, started: Started, kind: str) -> Started:
        """``started`` with what its state's preparer did in ``tx``, the transaction saving it
        (an action's draft, admission and ``dispatched`` mark: docs/decisions/0013), when its
        kind has one and its output is not supplied."""
        prepare = preparer_for(kind)
        if prepare is None or started.supplied:
            return started
        ctx = self._context(tx.claim, started, _IN_TRANSACTION)
        s = started
        return Started(s.run, s.state, s.context, s.supplied, s.turn, s.since, s.workflow, s.spec,
                       prepare(ctx, tx))  # fmt: skip

    def _execute_in(self, tx: FencedTx, started: Started) -> TurnReport | None:
        """Execute a pure state's saved turn and apply its outcome in ``tx``; None when its
        handler failed unexpectedly (the turn is then executed on its own, where the failure
        is met and reported)."""
        run, state, context, turn = started.run, started.state, started.context, started.turn
        ctx = self._context(tx.claim, started, _IN_TRANSACTION)
        with telemetry.turn(tx.claim) as span:
            try:
                if started.supplied:
                    outcome: Outcome = Advance("done", context["states"][state])
                else:
                    outcome = handler_for(ctx.state.kind)(ctx)
            except (EvaluationError, DefinitionError) as exc:
                outcome = Attention(f"{type(exc).__name__}: {exc}")
            except Exception:
                return None
            detail = self._apply(tx, ctx, outcome)
            report = self._report(
                run.id, state, turn.seq, _name(outcome), tx, started.since, detail
            )
            telemetry.turn_done(span, report)
        return report

    def _begin_one(self, tx: FencedTx, *, first: bool, seq: int | None) -> Begun:
        since = time.monotonic()
        run = tx.run()
        workflow = self.catalog.workflow(run.workflow_digest)
        if run.current_state is None and run.attempt > 1:
            run, workflow = self._repinned(tx, run, workflow)
        try:
            state, context, supplied = _prepared(run, workflow)
        except DefinitionError as exc:
            return self._attention_now(tx, run, str(exc), since)
        if not self.admission.admit(tx, run, workflow, state):
            # over a limit: the run waits for it (invariant 20) and no turn starts
            waits = dict(tx.run().waiting or {}).get("waits_for")
            return self._report(run.id, state, None, "capacity", tx, since, str(waits))
        if first and tx.claim.epoch == 1:
            seq = 1  # the first claim of a run: no turn before it, none left open
        elif first:
            tx.abandon_open_turns()
        spec = workflow.state(state)
        cost = _turn_cost(spec, context)
        reason = budgets.exceeded(workflow.budget_limits(), run.budget_used, cost) if cost else None
        if reason is not None:
            turn = tx.start_turn(state, seq=seq)
            started = Started(run, state, context, supplied, turn, since, workflow, spec)
            ctx = self._context(tx.claim, started, threading.Event())
            ctx.exhaust(tx, reason)
            return self._report(run.id, state, turn.seq, "budget_exhausted", tx, since, reason)
        entered: dict[str, Any] = {
            "current_state": state,
            "context": context,
            "budget_used": budgets.add(run.budget_used, cost),
        }
        if run.waiting is not None and run.waiting["kind"] == "capacity":
            # queued again without its wake-up (a pause ended): the turn reads what woke it
            entered["waiting"] = resumed(run.waiting)
        turn = tx.start_turn(state, seq=seq, values=entered)
        return Started(tx.run(), state, context, supplied, turn, since, workflow, spec)

    def _repinned(
        self, tx: FencedTx, run: Run, workflow: CompiledWorkflow
    ) -> tuple[Run, CompiledWorkflow]:
        """A retry of an objective, about to start: on the version active now."""
        active = self.store.definitions.active_version_in(tx.row_conn, workflow.name)
        if active is None or active.kind != "workflow" or active.digest == run.workflow_digest:
            return run, workflow
        run = tx.repin(active.digest)
        return run, self.catalog.workflow(run.workflow_digest)

    def execute(
        self,
        claim: Claim,
        lost: threading.Event,
        started: Started | None = None,
        *,
        chain: Callable[[], bool] | None = None,
        done: list[TurnReport] | None = None,
    ) -> tuple[TurnReport, Begun | None]:
        """Execute ``started`` (or save and execute the next turn) and apply its outcome.

        When the run is still running afterwards and ``chain()`` says to go on, the next turn
        is saved in the same transaction as this turn's outcome and returned with the report;
        with ``done``, pure states met on the way are executed there too (see :meth:`begin`).
        """
        if started is None:
            with self.store.leases.fenced(claim) as tx:
                begun = self._begin_one(tx, first=True, seq=None)
                if isinstance(begun, Started):
                    begun = self._prepared(tx, begun, begun.spec.kind)
            if isinstance(begun, TurnReport):
                return begun, None
            started = begun
        run, state, context, turn = started.run, started.state, started.context, started.turn
        self.hook("turn.started", claim)
        ctx = self._context(claim, started, lost)
        try:
            if started.supplied:
                outcome: Outcome = Advance("done", context["states"][state])
            else:
                outcome = handler_for(ctx.state.kind)(ctx)
        except TurnStopped as stopped:
            report = TurnReport(run.id, state, turn.seq, "stopped", self._status(run.id),
                                time.monotonic() - started.since, str(stopped))  # fmt: skip
            return report, None
        except (ModelError, EvaluationError, DefinitionError, IdempotencyConflict) as exc:
            outcome = Attention(f"{type(exc).__name__}: {exc}")
        self.hook("turn.before_advance", claim)
        try:
            # pipelined: the fence goes with the first statement (the outcome's record, when
            # it settles one), and nothing here acts outside the database before the run is
            # looked at
            with self.store.leases.fenced(claim, pipelined=True) as tx:
                detail = self._apply(tx, ctx, outcome)
                report = self._report(
                    run.id, state, turn.seq, _name(outcome), tx, started.since, detail
                )
                following: Begun | None = None
                if report.status == RunStatus.RUNNING and chain is not None and chain():
                    following = self.begin(
                        tx, first=False, seq=turn.seq + 1, chain=chain, done=done
                    )
        except BaseException:
            if isinstance(outcome, Advance) and outcome.settle is not None:
                outcome.settle.alone()  # the outside world's record must not be lost
            raise
        return report, following

    def give_up(self, claim: Claim, reason: str) -> str:
        """After an unexpected error: the run needs attention (if the claim still holds it)."""
        try:
            with self.store.leases.fenced(claim) as tx:
                run = tx.run()
                self._needs_attention(tx, run.context, run.current_state or "", reason)
        except StaleEpoch:
            return "lost"
        return "done"

    def _context(self, claim: Claim, started: Started, lost: threading.Event) -> StepContext:
        context = started.context
        position = context["position"]  # set by _prepared
        return StepContext(
            store=self.store,
            claim=claim,
            run=started.run,
            workflow=started.workflow,
            state=started.spec,
            visit=position["visit"],
            prefix=activity_prefix(started.state, position),
            scope=state_scope(context["inputs"], context["states"]),
            providers=self.providers,
            tools=self.tools,
            hook=self.hook,
            lost=lost,
            turn_id=started.turn.id,
            max_repairs=self.max_repairs,
            context=self.context,
            prepared=started.prepared,
            admission=self.admission,
        )

    # -- applying outcomes ---------------------------------------------------------------

    def _apply(self, tx: FencedTx, ctx: StepContext, outcome: Outcome) -> str:
        if isinstance(outcome, Advance):
            return self._advance(tx, ctx, outcome)
        if isinstance(outcome, Finish):
            return self._finish(tx, ctx, outcome)
        if isinstance(outcome, Suspend):
            # the wait's own event (``wait.registered``...) says how the turn ended
            tx.record_turn(ctx.turn_id, phase="waiting", status="completed", event=False)
            outcome.apply(tx)
            return outcome.description
        tx.record_turn(ctx.turn_id, status="failed", error=outcome.reason)
        self._needs_attention(tx, tx.run().context, ctx.state.name, outcome.reason)
        return outcome.reason

    def _advance(self, tx: FencedTx, ctx: StepContext, outcome: Advance) -> str:
        source = ctx.state.name
        if outcome.settle is not None and not outcome.settle.within(tx):
            # The outside world's record says otherwise by now (another attempt's reply, an
            # operator): the state runs again and leaves by what is recorded.
            problem = f"the outcome in {source} was settled otherwise meanwhile; state re-read"
            tx.record_turn(ctx.turn_id, status="failed", error=problem)
            return problem
        moved = advanced(ctx.workflow, tx.run().context, source, outcome)
        if moved.target is None:
            tx.record_turn(ctx.turn_id, status="failed", error=moved.problem)
            self._needs_attention(tx, moved.context, source, moved.problem)
            return moved.problem
        target = moved.target
        tx.record_turn(ctx.turn_id, phase="advanced", status="completed", event=False)
        tx.update_run(
            current_state=target,
            context=moved.context,
            waiting=None,
            event="state.advanced",
            payload={"from": source, "to": target, "event": outcome.event},
            describe=False,
        )
        return f"{source} -[{outcome.event}]-> {target}"

    def _finish(self, tx: FencedTx, ctx: StepContext, outcome: Finish) -> str:
        context = tx.run().context.copy()
        context["outputs"] = workflow_outputs(ctx.workflow, context)
        completed = outcome.outcome == RunStatus.COMPLETED
        unsatisfied = unmet_success(ctx.workflow, context) if completed else None
        if unsatisfied is not None:
            context["unsatisfied"] = unsatisfied  # the run shows why it did not count
        tx.record_turn(ctx.turn_id, phase="ended", status="completed", event=False)
        end_run(
            self.store,
            tx,
            RunStatus(outcome.outcome),
            context=context,
            waiting=None,
            event=f"run.{outcome.outcome}",
            payload={"end_state": ctx.state.name},
            unsatisfied=unsatisfied,
        )
        return outcome.outcome

    def _needs_attention(self, tx: FencedTx, context: RunContext, state: str, reason: str) -> None:
        position = context.get("position")
        if position is not None:  # none before the first state is entered
            context = {**context, "position": {**position, "attention": True}}
        tx.update_run(
            status=RunStatus.NEEDS_ATTENTION,
            context=context,
            waiting={"kind": "attention", "reason": reason, "state": state},
            event="run.needs_attention",
            payload={"reason": reason},
        )

    def _attention_now(self, tx: FencedTx, run: Run, reason: str, started: float) -> TurnReport:
        tx.update_run(
            status=RunStatus.NEEDS_ATTENTION,
            waiting={"kind": "attention", "reason": reason, "state": run.current_state},
            event="run.needs_attention",
            payload={"reason": reason},
        )
        return self._report(run.id, run.current_state, None, "attention", tx, started, reason)

    def _report(
        self,
        run_id: str,
        state: str | None,
        seq: int | None,
        outcome: str,
        tx: FencedTx,
        started: float,
        detail: str,
    ) -> TurnReport:
        status = tx.run().status
        return TurnReport(run_id, state, seq, outcome, status, time.monotonic() - started, detail)

    def _status(self, run_id: str) -> RunStatus:
        return self.store.runs.get(run_id).status


def _name(outcome: Outcome) -> str:
    return {Advance: "advanced", Finish: "finished", Suspend: "waiting", Attention: "attention"}[
        type(outcome)
    ]


def unmet_success(workflow: CompiledWorkflow, context: RunContext) -> str | None:
    """Why a completed run did not satisfy its objective's success criterion (evaluated over
    ``input`` and the run's ``output``); None when it did, or when there is none."""
    from openseal.runtime.compiled import evaluate_json

    criterion = workflow.success_criterion()
    if criterion is None:
        return None
    scope = {"input": context.get("inputs", {}), "output": context.get("outputs", {})}
    try:
        held = evaluate_json(criterion, scope)
    except (EvaluationError, DefinitionError) as exc:
        return f"the success criterion could not be evaluated: {exc}"
    return None if held is True else "the success criterion does not hold"


def workflow_outputs(workflow: CompiledWorkflow, context: RunContext) -> dict[str, Any]:
    """The workflow's declared outputs that can be computed (an end may skip some states)."""
    from openseal.runtime.compiled import evaluate_json

    scope = state_scope(context["inputs"], context["states"])
    outputs: dict[str, Any] = {}
    for name, spec in sorted(((workflow.document.get("spec") or {}).get("output") or {}).items()):
        try:
            outputs[name] = evaluate_json(spec.get("value"), scope)
        except (EvaluationError, DefinitionError):
            continue
    return outputs
