"""Re-drive a recorded run through a compiled workflow: no model, no tool, no effect.

The engine's own logic decides every step: the state handlers of
:mod:`openseal.runtime.engine.states` (a ``turn`` state runs its model loop, a ``decision``
and ``transform`` their expressions, a ``proposal`` state drafts its exact payloads), the
gateway's check of each tool call, the engine's turn budget and the transition out of each
state (:func:`~openseal.runtime.engine.turns.advanced`). Only what comes from outside is
taken from the record instead of asked for: a model's answer or a tool's result is the
recorded activity with the same id *and the same request* (:class:`ReplayContext`); an
approval's decision, an action's outcome and a delivered event are the recorded ones
(:mod:`openseal.runtime.replay.outside`). Where the workflow asks something that was never
recorded, the re-drive stops (:class:`NeedsInput`) and says what it would have asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

from openseal.compiler import EvaluationError
from openseal.contract import RunContext
from openseal.runtime.compiled import CompiledWorkflow, DefinitionError
from openseal.runtime.engine import budgets
from openseal.runtime.engine.gateway import TOOL_CALL_COST, check_budget, check_call
from openseal.runtime.engine.states import handler_for
from openseal.runtime.engine.states.base import (
    Advance,
    Attention,
    BudgetSpent,
    Finish,
    Outcome,
    StepContext,
    Suspend,
    TurnStopped,
    input_hash,
    state_scope,
)
from openseal.runtime.engine.tools import ToolInvocation, refusal
from openseal.runtime.engine.turns import activity_prefix, advanced, enter
from openseal.runtime.replay.history import History, Intervention, Mark
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Claim, Store

#: bound on the states one re-drive visits (a loop the record never ended)
MAX_VISITS = 1_000
#: kinds whose steps come from the record rather than from their handler (a ``delegate``'s
#: and a ``spawn``'s from the recorded requests and child runs; ``parallel`` and ``for_each``
#: run their handlers, their branches' and items' activities coming from the record)
OUTSIDE_KINDS = ("proposal", "approval", "action", "wait", "delegate", "spawn")


class NeedsInput(Exception):
    """The workflow asks for something with no record: replay stops here and says what."""

    def __init__(self, state: str, asks: str, *, unsupported: bool = False) -> None:
        super().__init__(asks)
        self.state = state
        self.asks = asks
        self.unsupported = unsupported


class RecordedFailure(Exception):
    """An activity that failed when it was recorded, with nothing recorded since: the state
    stops as the engine stopped it (the run needed attention)."""


class Waiting(Exception):
    """The recorded run is still waiting here (for a decision, an event, an outcome)."""

    def __init__(self, state: str, why: str) -> None:
        super().__init__(why)
        self.state = state
        self.why = why


@dataclass(frozen=True)
class Spend:
    """An action the re-drive admitted that spends: the recorded action's admission time
    places it among the other spends of a shared budget (see ``replay._recount``)."""

    state: str
    name: str
    #: the payload's content hash
    content: str
    amount: float
    currency: str
    at: datetime


@dataclass
class Trace:
    """What a re-drive did: its marks, and how it stopped (``ended``, ``waiting``,
    ``needs_input``, ``unsupported``, ``attention`` or ``budget``)."""

    marks: list[Mark] = field(default_factory=list)
    stop: str = "ended"
    state: str = ""
    why: str = ""
    #: the spending actions it admitted, in order
    spends: list[Spend] = field(default_factory=list)


@dataclass
class Replayed:
    """What the re-drive tracked besides the context: budgets spent and the payloads drafted
    (the hash a state's output carries → the draft's content), for the outside steps."""

    used: dict[str, Any]
    limits: Mapping[str, int]
    drafts: dict[str, Any] = field(default_factory=dict)
    #: the spending actions admitted so far (the trace's list)
    spends: list[Spend] = field(default_factory=list)
    #: payload content hash → why a shared spend budget, counted again over the runs
    #: replayed, refuses it
    refusals: Mapping[str, str] = field(default_factory=dict)
    #: a spawned child's verdict re-driven through the proposed version of its workflow
    #: (child run id, workflow name → the verdict, None when the proposal leaves it alone)
    children: Callable[[str, str], Any] | None = None


def _no_provider(agent: Any) -> Any:
    raise AssertionError("replay never calls a model")  # pragma: no cover


def _no_hook(point: str, claim: Claim) -> None:
    """Replay reaches no orchestration point."""


@dataclass
class ReplayContext(StepContext):
    """A :class:`StepContext` whose activities come from the record, never from outside."""

    history: History | None = None
    replayed: Replayed | None = None
    marks: list[Mark] = field(default_factory=list)

    def now(self) -> datetime:
        return self.run.updated_at if self.run.updated_at.tzinfo else datetime.now(UTC)

    def retry_attempts(self) -> int:
        return 0

    def units_at_once(self, wanted: int) -> int:
        return 1

    def activity(
        self,
        suffix: str,
        kind: str,
        request: Any,
        compute: Callable[[], Any],
        *,
        cost: Mapping[str, int],
        cost_of_result: Callable[[Any], Mapping[str, int]] | None = None,
        if_failed: Any = None,
        if_unknown: Mapping[str, int] | None = None,
        reserving: Any = None,
        preparing: Any = None,
    ) -> Any:
        """The recorded result of ``<prefix>:<suffix>`` for the same request; the budgets are
        charged as the engine charges them (:meth:`StepContext.activity`). Nothing is reserved
        or called, so neither ``preparing`` nor ``reserving`` is called (a replay makes no
        provider and takes no rate-limit place)."""
        assert self.history is not None and self.replayed is not None
        activity_id = f"{self.prefix}:{suffix}"
        found = self.history.activities.get(activity_id)
        if found is None and (failed := self.history.failure(activity_id)) is not None:
            if self.history.retrying(self.state.name):
                raise Waiting(self.state.name, f"the run retries {kind} call {activity_id}")
            raise RecordedFailure(f"{kind} call {activity_id} failed: {failed}")
        if found is None or found.input_hash != input_hash(request):
            what = "no record" if found is None else "a recorded request that differs"
            raise NeedsInput(self.state.name, f"{kind} call {activity_id} ({what})")
        used, limits = self.replayed.used, self.replayed.limits
        reason = budgets.refusal(limits, used, cost)
        if reason is not None:
            raise BudgetSpent(reason)
        spent = dict(cost)
        if cost_of_result is not None:
            spent.update(cost_of_result(found.result))
        self.replayed.used = budgets.add(used, spent)
        late = budgets.overspent(limits, self.replayed.used)
        if late is not None:
            raise BudgetSpent(late)
        return found.result

    def stop(self, reason: str) -> NoReturn:
        self.marks.append(Mark.of(self.state.name, "budget_exhausted", why=reason))
        raise TurnStopped(reason)


class ReplayTools:
    """The gateway's check of each tool call, with the recorded result in place of the call."""

    def call(self, ctx: StepContext, invocation: ToolInvocation, suffix: str) -> dict[str, Any]:
        assert isinstance(ctx, ReplayContext)
        assert ctx.history is not None and ctx.replayed is not None
        activity_id = f"{ctx.prefix}:{suffix}"
        budget = check_budget(ctx.replayed.limits, ctx.replayed.used)
        if not budget.allowed:
            raise BudgetSpent(budget.reason)
        ctx.replayed.used = budgets.add(ctx.replayed.used, TOOL_CALL_COST)
        decision = check_call(ctx.workflow, invocation.request())
        if not decision.allowed:
            ctx.marks.append(Mark.of(ctx.state.name, "tool_refused", skill=invocation.skill))
            return refusal(decision)
        found = ctx.history.activities.get(activity_id)
        if found is None or found.input_hash != input_hash(invocation.to_json()):
            raise NeedsInput(ctx.state.name, f"tool call {invocation.skill} ({activity_id})")
        if _was_refused(ctx.history, activity_id):
            raise NeedsInput(
                ctx.state.name, f"tool call {invocation.skill} (refused when recorded)"
            )
        return dict(found.result)


def _was_refused(history: History, activity_id: str) -> bool:
    return any(
        e.type == "tool_call.refused" and e.payload.get("activity_id") == activity_id
        for e in history.events
    )


def redrive(
    store: Store,
    workflow: CompiledWorkflow,
    history: History,
    refusals: Mapping[str, str] | None = None,
    children: Callable[[str, str], Any] | None = None,
) -> Trace:
    """Re-drive ``history`` through ``workflow`` (reads only); the marks it made and where
    and why it stopped. ``refusals``: the payloads (by content hash) a shared spend budget
    refuses, and why; ``children``: a spawned child's verdict under a proposed version of
    its workflow."""
    from openseal.runtime.replay import outside

    trace = Trace()
    if workflow.initial is None:
        return _stopped(trace, "attention", "", f"workflow {workflow.name} has no initial state")
    used = {k: v for k, v in history.run.budget_used.items() if k not in budgets.COUNTED}
    used.pop(budgets.IN_FLIGHT, None)
    replayed = Replayed(
        used, workflow.budget_limits(), spends=trace.spends, refusals=dict(refusals or {}),
        children=children,
    )  # fmt: skip
    context: RunContext = {"inputs": history.inputs, "states": {}}
    state = workflow.initial
    context = enter(context, state, None)
    repairs = list(history.interventions)
    charge = True
    for _ in range(MAX_VISITS):
        repaired = _repaired(repairs, trace, state, context)
        if repaired is not None:
            # a state run again is charged again only after it needed attention
            charge = trace.stop == "attention" or repaired[0] != state
            _stopped(trace, "ended", "", "")  # it goes on
            state, context, supplied = repaired
            if supplied:  # the operator gave the state's output: it leaves with it
                moved = _outcome(workflow, context, state, Advance("done", supplied[0]), trace)
                if moved is None:
                    return trace
                state, context = moved
                continue
        spec = workflow.state(state)
        cost = {} if spec.kind == "end" or not charge else {"turns": 1}
        charge = True
        reason = budgets.exceeded(replayed.limits, replayed.used, cost)
        if reason is not None:
            trace.marks.append(Mark.of(state, "budget_exhausted", why=reason))
            _stopped(trace, "budget", state, reason)
            if _repairable(repairs, trace, state):
                continue
            return trace
        replayed.used = budgets.add(replayed.used, cost)
        ctx = _context(store, workflow, history, replayed, state, context, trace.marks)
        try:
            step = outside.STEPS.get(spec.kind)
            outcome = step(ctx) if step is not None else handler_for(spec.kind)(ctx)
        except NeedsInput as need:
            if _canceled_in(history, need.state):  # the record ends here: nothing to compare
                return _stopped(trace, "waiting", need.state, "the run was canceled here")
            kind = "unsupported" if need.unsupported else "needs_input"
            return _stopped(trace, kind, need.state, need.asks)
        except Waiting as waiting:
            _stopped(trace, "waiting", waiting.state, waiting.why)
            if _repairable(repairs, trace, state):
                continue
            return trace
        except TurnStopped as stopped:
            _stopped(trace, "budget", state, str(stopped))
            if _repairable(repairs, trace, state):
                continue
            return trace
        except RecordedFailure as failure:
            outcome = Attention(str(failure))
        except (EvaluationError, DefinitionError) as exc:
            outcome = Attention(f"{type(exc).__name__}: {exc}")
        moved = _outcome(workflow, context, state, outcome, trace)
        if moved is None:
            if _repairable(repairs, trace, state):
                continue
            return trace
        state, context = moved
    return _stopped(trace, "attention", state, f"more than {MAX_VISITS} states visited")


def _canceled_in(history: History, state: str) -> bool:
    """Whether the recorded run was canceled in ``state`` (or before it entered a state)."""
    run = history.run
    return run.status == RunStatus.CANCELED and run.current_state in (None, state)


def _repairable(repairs: list[Intervention], trace: Trace, state: str) -> bool:
    """Whether the recorded run was repaired by an operator where the re-drive stopped (in
    ``state``, after as many marks): the re-drive then goes on as the run did."""
    return bool(repairs) and repairs[0].at == len(trace.marks) and repairs[0].from_state == state


def _repaired(
    repairs: list[Intervention], trace: Trace, state: str, context: RunContext
) -> tuple[str, RunContext, tuple[Any, ...]] | None:
    """The state and context after the operator's next repair, when the recorded run had it
    here (after as many marks as the re-drive made, in ``state``), with the output the
    operator supplied (empty: none); None when there is none here.

    A repair is a recorded input like an approval's decision: ``value`` becomes the state's
    output, ``to_state`` the state the run goes on from; with neither, a run that needed
    attention runs its state again with fresh activity ids (a retry)."""
    if not _repairable(repairs, trace, state):
        return None
    repair = repairs.pop(0)
    stopped = trace.stop
    context = context.copy()
    if repair.value is not None:
        context["states"] = {**context["states"], state: repair.value}
    if repair.to_state != state:
        return repair.to_state, enter(context, repair.to_state, state), ()
    if repair.value is not None:
        return state, context, (repair.value,)
    if stopped == "attention":
        position = context["position"]
        context["position"] = {**position, "attempt": position.get("attempt", 0) + 1}
    return state, context, ()


def _outcome(
    workflow: CompiledWorkflow, context: RunContext, state: str, outcome: Outcome, trace: Trace
) -> tuple[str, RunContext] | None:
    """The next state and context after ``outcome``; None when the re-drive ends here."""
    if isinstance(outcome, Finish):
        trace.marks.append(Mark.of(state, "ended", outcome=outcome.outcome))
        _stopped(trace, "ended", state, RunStatus(outcome.outcome).value)
        return None
    if isinstance(outcome, Suspend):  # a wait the record has not passed yet
        _stopped(trace, "waiting", state, outcome.description)
        return None
    if isinstance(outcome, Attention):
        trace.marks.append(Mark.of(state, "attention", why=outcome.reason))
        _stopped(trace, "attention", state, outcome.reason)
        return None
    assert isinstance(outcome, Advance)
    moved = advanced(workflow, context, state, outcome)
    if moved.target is None:
        trace.marks.append(Mark.of(state, "attention", why=moved.problem))
        _stopped(trace, "attention", state, moved.problem)
        return None
    trace.marks.append(Mark.of(state, "advanced", event=outcome.event, to=moved.target))
    return moved.target, moved.context


def _stopped(trace: Trace, stop: str, state: str, why: str) -> Trace:
    trace.stop, trace.state, trace.why = stop, state, why
    return trace


def _context(
    store: Store,
    workflow: CompiledWorkflow,
    history: History,
    replayed: Replayed,
    state: str,
    context: RunContext,
    marks: list[Mark],
) -> ReplayContext:
    position = context["position"]
    run = history.run
    claim = Claim(run.id, "replay", 0, run.updated_at, run.status, run)
    return ReplayContext(
        store=store,
        claim=claim,
        run=run,
        workflow=workflow,
        state=workflow.state(state),
        visit=position["visit"],
        prefix=activity_prefix(state, position),
        scope=state_scope(context["inputs"], context["states"]),
        providers=_no_provider,
        tools=ReplayTools(),
        hook=_no_hook,
        lost=threading.Event(),
        turn_id="",
        history=history,
        replayed=replayed,
        marks=marks,
    )
