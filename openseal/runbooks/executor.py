"""The in-process DAG executor: run a runbook's plan once, in memory.

Independent steps run concurrently on one asyncio loop, at most
``concurrency`` at a time; blocking work (HTTP, user Python) runs on daemon
threads. Each step has a timeout. With ``fail_fast`` the first failure cancels
the running steps and everything not yet started (reported ``canceled``);
with ``continue`` every step that does not depend on a failure still runs
and the dependents of a failure are ``skipped``.

Nothing is persisted, nothing waits for approval, no events are published,
and a crash loses the run: a runbook is a quick, honest script, not a
workflow (see :data:`BOUNDARY`).

>>> result = run(plan, {"n": 3})            # doctest: +SKIP
>>> result.status, result.outputs           # doctest: +SKIP
('succeeded', {'doubled': 6})
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, cast

from openseal.compiler import (
    STEP_TYPES,
    EvaluationError,
    Expression,
    Plan,
    PlanStep,
    evaluate,
    functions,
)
from openseal.compiler import types as ty
from openseal.contract import SkillSettings
from openseal.runbooks.boundary import BOUNDARY as BOUNDARY
from openseal.runbooks.inputs import check
from openseal.runbooks.steps import HANDLERS, StepContext, StepFailure
from openseal.runbooks.threads import in_thread
from openseal.skills import ADAPTERS, Skill, SkillAdapter, SkillCall

#: Plain-words statement of what a runbook is not; printed by ``openseal run`` and its help.

StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "canceled"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "skipped", "canceled"})


@dataclass(frozen=True, slots=True)
class StepOutcome:
    id: str
    status: StepStatus = "pending"
    output: object = None
    #: why it failed, was skipped or was canceled
    error: str | None = None
    #: seconds from the start of the run
    started: float | None = None
    finished: float | None = None

    @property
    def duration(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return self.finished - self.started

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "output": self.output,
            "error": self.error,
            "started": _rounded(self.started),
            "finished": _rounded(self.finished),
            "duration": _rounded(self.duration),
        }


@dataclass(frozen=True, slots=True)
class RunResult:
    runbook: str
    status: Literal["succeeded", "failed"]
    outputs: Mapping[str, object]
    #: every step, in the plan's order
    steps: Mapping[str, StepOutcome]
    error: str | None
    duration: float

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, object]:
        return {
            "runbook": self.runbook,
            "status": self.status,
            "error": self.error,
            "duration": _rounded(self.duration),
            "outputs": dict(self.outputs),
            "steps": {sid: outcome.to_json() for sid, outcome in self.steps.items()},
        }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 4)


class Observer(Protocol):
    """Told about every change of a step's status (the CLI's progress view)."""

    def step_changed(self, outcome: StepOutcome) -> None: ...


@dataclass
class RunOptions:
    concurrency: int | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    observer: Observer | None = None
    adapters: Mapping[str, SkillAdapter] = field(default_factory=lambda: dict(ADAPTERS))


def run(plan: Plan, inputs: Mapping[str, object], options: RunOptions | None = None) -> RunResult:
    """Run ``plan`` to the end on a fresh event loop; inputs are checked first (InputTypeError)."""
    return asyncio.run(execute(plan, inputs, options))


async def execute(
    plan: Plan, inputs: Mapping[str, object], options: RunOptions | None = None
) -> RunResult:
    """Run ``plan`` on the current event loop."""
    values = check(plan.inputs, inputs)
    return await _Run(plan, values, options or RunOptions()).go()


class _Run:
    def __init__(self, plan: Plan, inputs: dict[str, object], options: RunOptions) -> None:
        self.plan = plan
        self.inputs = inputs
        self.options = options
        self.limit = max(1, options.concurrency or plan.concurrency)
        self.order = plan.order()
        self.outcomes: dict[str, StepOutcome] = {sid: StepOutcome(sid) for sid in self.order}
        #: steps whose status is due to a failure upstream (their dependents are skipped too)
        self.failure_lineage: set[str] = set()
        self.running: dict[asyncio.Task[object], str] = {}
        self.run_id = uuid.uuid4().hex[:12]
        self.t0 = time.monotonic()
        self.aborted: str | None = None
        self.skills: dict[str, Skill] = {}

    def now(self) -> float:
        return time.monotonic() - self.t0

    def set(self, outcome: StepOutcome) -> None:
        self.outcomes[outcome.id] = outcome
        if self.options.observer is not None:
            self.options.observer.step_changed(outcome)

    # --- the loop ---------------------------------------------------------------------

    async def go(self) -> RunResult:
        try:
            await self._loop()
        finally:
            await self._cancel_running("the run was interrupted")
        return self._result()

    async def _loop(self) -> None:
        while True:
            ready = self._ready()
            if self.aborted is not None:
                await self._cancel_running(self.aborted)
                self._cancel_pending(self.aborted)
                return
            for step_id in ready[: self.limit - len(self.running)]:
                self._start(self.plan.steps[step_id])
            if not self.running:
                self._cancel_pending("never became ready")  # only reachable with a cycle
                return
            done, _ = await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: self.running[t]):
                self._finish(self.running.pop(task), task)

    def _ready(self) -> list[str]:
        """Pending steps whose dependencies are all settled; decides skips on the way."""
        ready: list[str] = []
        changed = True
        while changed:  # a skip can settle the dependencies of later steps
            changed = False
            ready = []
            for step_id in self.order:
                if self.outcomes[step_id].status != "pending":
                    continue
                step = self.plan.steps[step_id]
                if not all(self.outcomes[d].status in TERMINAL for d in step.depends_on):
                    continue
                verdict = self._gate(step)
                if verdict is None:
                    ready.append(step_id)
                else:
                    changed = True
        return ready

    def _gate(self, step: PlanStep) -> str | None:
        """Settle ``step`` now (skipped or failed) and say so, or ``None`` when it should run."""
        for dep in step.depends_on:
            outcome = self.outcomes[dep]
            if outcome.status in ("failed", "canceled") or dep in self.failure_lineage:
                self.failure_lineage.add(step.id)
                return self._skip(step, f"`{dep}` {outcome.status}")
        for dep in step.needs:
            if self.outcomes[dep].status == "skipped":
                return self._skip(step, f"needs the output of `{dep}`, which was skipped")
        try:
            if step.edges and not self._an_edge_fires(step):
                sources = ", ".join(f"`{e.source}`" for e in step.edges)
                return self._skip(step, f"no incoming edge fired (from {sources})")
            if step.when is not None and not self._guard(step):
                return self._skip(step, "`when` is false")
        except StepFailure as exc:
            now = self.now()
            self.set(StepOutcome(step.id, "failed", error=exc.message, started=now, finished=now))
            self._after_failure(step.id)
            return "failed"
        return None

    def _skip(self, step: PlanStep, reason: str) -> str:
        self.set(StepOutcome(step.id, "skipped", error=reason))
        return "skipped"

    def _an_edge_fires(self, step: PlanStep) -> bool:
        for edge in step.edges:
            source = self.outcomes[edge.source]
            if source.status != "succeeded":
                continue
            if edge.condition is None:
                return True
            verdict = _evaluate(edge.condition, {**self.scope(), "output": source.output})
            if not isinstance(verdict, bool):
                raise StepFailure(
                    f"the condition of the edge from `{edge.source}` gave "
                    f"{functions.kind(verdict)}, not true or false ({edge.condition.span})"
                )
            if verdict:
                return True
        return False

    def _guard(self, step: PlanStep) -> bool:
        assert step.when is not None
        verdict = _evaluate(step.when, self.scope())
        if not isinstance(verdict, bool):
            raise StepFailure(
                f"`when` gave {functions.kind(verdict)}, not true or false ({step.when.span})"
            )
        return verdict

    # --- starting and finishing steps ----------------------------------------------------

    def _start(self, step: PlanStep) -> None:
        self.set(StepOutcome(step.id, "running", started=self.now()))
        task = asyncio.create_task(self._timed(step), name=f"step:{step.id}")
        self.running[task] = step.id

    async def _timed(self, step: PlanStep) -> object:
        try:
            return await asyncio.wait_for(self._body(step), timeout=step.timeout)
        except TimeoutError:
            raise StepFailure(f"timed out after {step.timeout:g}s") from None

    def _finish(self, step_id: str, task: asyncio.Task[object]) -> None:
        started = self.outcomes[step_id].started
        finished = self.now()
        error = _error_of(task)
        if error is None:
            self.set(StepOutcome(step_id, "succeeded", task.result(), None, started, finished))
            return
        self.set(StepOutcome(step_id, "failed", None, error, started, finished))
        self._after_failure(step_id)

    def _after_failure(self, step_id: str) -> None:
        if self.plan.on_failure == "fail_fast" and self.aborted is None:
            self.aborted = f"canceled: `{step_id}` failed (on_failure = fail_fast)"

    async def _cancel_running(self, reason: str) -> None:
        tasks = list(self.running)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            step_id = self.running.pop(task)
            outcome = self.outcomes[step_id]
            self.set(replace(outcome, status="canceled", error=reason, finished=self.now()))

    def _cancel_pending(self, reason: str) -> None:
        for step_id in self.order:
            if self.outcomes[step_id].status == "pending":
                self.set(StepOutcome(step_id, "canceled", error=reason))

    # --- what a step does ------------------------------------------------------------------

    def scope(self) -> dict[str, object]:
        settled = {
            sid: {"output": o.output, "status": o.status}
            for sid, o in self.outcomes.items()
            if o.status in TERMINAL
        }
        scope: dict[str, object] = {"input": self.inputs, "step": settled}
        if self.plan.node_roots:
            scope.update(settled)
        return scope

    async def _body(self, step: PlanStep) -> object:
        scope = self.scope()
        lazy = STEP_TYPES[step.uses].lazy if step.uses is not None else ()
        args = {k: _evaluate(v, scope) for k, v in step.args.items() if k not in lazy}
        if step.uses is not None:
            ctx = StepContext(
                step.id,
                args,
                {k: step.args[k] for k in lazy if k in step.args},
                scope,
                self.inputs,
                step.timeout,
            )
            try:
                return await HANDLERS[step.uses](ctx)
            except EvaluationError as exc:  # a lazy argument, evaluated inside the handler
                raise StepFailure(f"{exc.message} ({exc.span})") from None
        return await self._call_skill(step, args)

    def _skill(self, key: str) -> Skill:
        """The plan's skill ``key`` as the adapters call it, read once a run from the settings
        it compiles to."""
        if key not in self.skills:
            settings = self.plan.skills[key].model_dump(mode="json")
            self.skills[key] = Skill.from_settings(cast(SkillSettings, settings))
        return self.skills[key]

    async def _call_skill(self, step: PlanStep, args: dict[str, object]) -> object:
        assert step.skill is not None
        spec = self._skill(step.skill)
        name = step.skill.removeprefix("skill.")
        if spec.adapter.runbook is not None:
            return await self._call_runbook(spec.adapter.runbook.runbook, args)
        adapter = self.options.adapters.get(spec.adapter.kind)
        if adapter is None:
            raise StepFailure(f"no `{spec.adapter.kind}` adapter is available for `{step.skill}`")
        key = None if spec.effect == "read" else f"runbook:{self.run_id}:{step.id}"
        call = SkillCall(
            name, spec, args, min(step.timeout, spec.timeout), key, self.options.config
        )
        retry_safe = spec.effect == "read" or bool(
            spec.idempotency and spec.idempotency.same_key_retry
        )
        attempts = spec.retry.attempts if retry_safe else 1
        for attempt in range(attempts):
            result = await in_thread(lambda: adapter.call(call), step.id)
            if result.ok:
                return result.output
            if result.outcome == "unknown":
                raise StepFailure(
                    f"outcome unknown: {result.error}; the call may have taken effect "
                    "(runbooks do not reconcile — check before running again)"
                )
            if attempt + 1 < attempts:
                await asyncio.sleep(spec.retry.backoff * 2**attempt)
        raise StepFailure(str(result.error))

    async def _call_runbook(self, key: str, args: dict[str, object]) -> object:
        nested = self.plan.runbooks[key]
        options = replace(self.options, observer=None, concurrency=None)
        result = await execute(nested, args, options)
        if not result.ok:
            raise StepFailure(f"runbook `{nested.name}` failed: {result.error}")
        return dict(result.outputs)

    # --- the result ---------------------------------------------------------------------------

    def _result(self) -> RunResult:
        failed = [o for o in self.outcomes.values() if o.status == "failed"]
        outputs: dict[str, object] = {}
        error: str | None = None
        if failed:
            first = min(failed, key=lambda o: (o.finished or 0.0, o.id))
            error = f"step `{first.id}` failed: {first.error}"
            if len(failed) > 1:
                error += f" (and {len(failed) - 1} more)"
        else:
            try:
                outputs = self._outputs()
            except StepFailure as exc:
                error = exc.message
        return RunResult(
            self.plan.name,
            "failed" if error else "succeeded",
            outputs,
            dict(self.outcomes),
            error,
            self.now(),
        )

    def _outputs(self) -> dict[str, object]:
        if self.plan.outputs is None:
            return {
                sid: self.outcomes[sid].output
                for sid in self.plan.sinks()
                if self.outcomes[sid].status == "succeeded"
            }
        scope = self.scope()
        out: dict[str, object] = {}
        for name in sorted(self.plan.outputs):
            declared = self.plan.outputs[name]
            try:
                value = _evaluate(declared.value, scope)
            except StepFailure as exc:
                raise StepFailure(f"output `{name}`: {exc.message}") from None
            if declared.type is not None:
                value = ty.apply_defaults(value, declared.type)
                problems = ty.conforms(value, declared.type)
                if problems:
                    raise StepFailure(
                        f"output `{name}` does not fit {ty.to_source(declared.type)}: "
                        + "; ".join(problems)
                    )
            out[name] = value
        return out


def _evaluate(expression: Expression, scope: Mapping[str, object]) -> object:
    try:
        return evaluate(expression, scope)
    except EvaluationError as exc:
        raise StepFailure(f"{exc.message} ({exc.span})") from None


def _error_of(task: asyncio.Task[object]) -> str | None:
    if task.cancelled():
        return "canceled"
    exc = task.exception()
    if exc is None:
        return None
    if isinstance(exc, StepFailure):
        return exc.message
    # A bug in a handler or adapter must still reach the user as one line.
    return f"internal error: {exc.__class__.__name__}: {exc}"
