"""What a state handler gets (:class:`StepContext`) and returns (an :data:`Outcome`).

A handler executes one state of one run. It never writes to the store directly: model and
tool results go through :meth:`StepContext.activity` (recorded before the run advances,
replayed on recovery), and whatever the handler decides is applied by the executor in one
fenced transaction together with the turn's completion.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openseal.runtime import budgets
from openseal.runtime.definitions import canonical_json
from openseal.runtime.fenced import FencedTx
from openseal.runtime.records import Claim, Run
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store_errors import IdempotencyConflict
from openseal.runtime.tools import ToolRunner
from openseal.runtime.workflow import CompiledWorkflow, StateSpec
from openseal.skills.credentials import RuntimeContext

Hook = Callable[[str, Claim], None]


@dataclass(frozen=True)
class Settle:
    """A record of what happened outside (an action's outcome) that an advance depends on.

    It is written with the advance, in the same fenced transaction (``within``, whose run
    events join the transaction's held-back batch; False when the record could not be made as
    expected). If that transaction is refused or fails, it is written on its own (``alone``):
    the outside world changed whether or not the claim holds.
    """

    within: Callable[[FencedTx], bool]
    alone: Callable[[], object]


@dataclass(frozen=True)
class Advance:
    """Leave the state by ``event``; ``output`` (if not None) becomes ``state.<name>.output``."""

    event: str
    output: Any = None
    #: written together with the advance (see :class:`Settle`)
    settle: Settle | None = None


@dataclass(frozen=True)
class Finish:
    """An ``end`` state: the run ends ``completed``, ``failed`` or ``canceled``."""

    outcome: str


@dataclass(frozen=True)
class Attention:
    """The run cannot continue without an operator; ``reason`` says why."""

    reason: str


@dataclass(frozen=True)
class Suspend:
    """The run waits; ``apply`` records the wait (and releases the lease) in the fenced tx."""

    apply: Callable[[FencedTx], None]
    description: str


Outcome = Advance | Finish | Attention | Suspend


class TurnStopped(Exception):
    """The turn ended early and the run was already moved (e.g. a budget ran out)."""


class LeaseLost(Exception):
    """The heartbeat found the claim gone; stop before calling anything else."""


def input_hash(document: Any) -> str:
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()


@dataclass
class StepContext:
    """One turn of one state of one run, as a handler sees it."""

    store: Store
    claim: Claim
    run: Run
    workflow: CompiledWorkflow
    state: StateSpec
    visit: int
    #: prefix of this visit's activity ids, e.g. ``research:1`` (``research:1r1`` on a retry)
    prefix: str
    scope: dict[str, object]
    providers: Callable[[Any], Any]
    tools: ToolRunner
    hook: Hook
    lost: threading.Event
    turn_id: str
    max_repairs: int = 2
    #: the worker's runtime context (``--context``): adapter config and credential sources
    context: RuntimeContext | None = None

    def now(self) -> datetime:
        return self.store.now()

    def activity(
        self,
        suffix: str,
        kind: str,
        request: Any,
        compute: Callable[[], Any],
        *,
        cost: Mapping[str, int],
        cost_of_result: Callable[[Any], Mapping[str, int]] | None = None,
    ) -> Any:
        """The recorded result of activity ``<prefix>:<suffix>``, computing it at most once.

        A recorded result is returned without calling ``compute`` (invariant 4). Otherwise the
        budget for ``cost`` is checked, ``compute`` runs outside any transaction, and its
        result is recorded with the spend in one fenced transaction (invariant 2).
        """
        activity_id = f"{self.prefix}:{suffix}"
        digest = input_hash(request)
        limits = self.workflow.budget_limits()
        with self.store.fenced(self.claim) as tx:
            found = tx.get_activity(activity_id)
            if found is not None:
                if found.input_hash != digest:
                    raise IdempotencyConflict(
                        f"activity {activity_id} was recorded for a different request"
                    )
                return found.result
            reason = budgets.exceeded(limits, tx.run().budget_used, cost)
            if reason is not None:
                self.exhaust(tx, reason)
        if reason is not None:
            raise TurnStopped(reason)
        if self.lost.is_set():
            raise LeaseLost(self.claim.run_id)
        result = compute()
        with self.store.fenced(self.claim) as tx:
            recorded = tx.record_activity(activity_id, kind, digest, result)
            spent = dict(cost)
            if cost_of_result is not None:
                spent.update(cost_of_result(recorded.result))
            used = budgets.add(tx.run().budget_used, spent)
            tx.update_run(budget_used=used, event="budget.spent", payload={"spent": spent})
            late = budgets.overspent(limits, used)
            if late is not None:
                self.exhaust(tx, late)
        self.hook("activity.recorded", self.claim)
        if late is not None:
            raise TurnStopped(late)
        return recorded.result

    def exhaust(self, tx: FencedTx, reason: str) -> None:
        """Stop the run for an exhausted budget, per the workflow's ``on_budget_exhausted``."""
        failed = self.workflow.on_budget_exhausted() == "failed"
        tx.record_turn(self.turn_id, status="failed", error=reason)
        tx.update_run(
            status=RunStatus.FAILED if failed else RunStatus.NEEDS_ATTENTION,
            waiting={"kind": "attention", "reason": reason, "state": self.state.name},
            event="run.budget_exhausted",
            payload={"reason": reason},
        )


Handler = Callable[[StepContext], Outcome]


def state_scope(inputs: Mapping[str, Any], states: Mapping[str, Any]) -> dict[str, object]:
    """The roots a workflow expression may read: ``input`` and ``state.<name>.output``."""
    return {
        "input": dict(inputs),
        "state": {name: {"output": value} for name, value in states.items()},
    }
