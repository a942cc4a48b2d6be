"""The quickstart: the procurement example end to end, on this machine, in a few seconds.

It compiles the example definitions, registers and activates them in the store under
``home``, starts the procurement simulator on a loopback port (requiring a bearer token made up
for this invocation), and drives one run of ``procure_laptops`` with the scripted model: the
research turn searches the simulator's catalogue, the run drafts an exact order and waits for
approval. The caller decides (by default the local operator approves, through the same
service function the CLI uses, with the loopback address); the run then admits and submits the
order once and records the purchase-order id only after the simulator confirmed it.

Nothing here is special-cased in the runtime: the engine, the gateway, the approval authority
and the action path are the ones a worker uses. The CLI (``openseal quickstart``) only renders.
"""

from __future__ import annotations

import logging
import os
import secrets
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openseal.compiler import CompiledDocument, CompileResult, Diagnostic, compile_paths
from openseal.errors import OpenSealError
from openseal.runtime import service
from openseal.runtime.service import ActionStatus, ApprovalAuthority, RunStatus, summarize
from openseal.runtime.service.workers import Engine, default_provider_factory
from openseal.runtime.store import Event, Run, Store, open_store
from openseal.simulator.procurement import ProcurementSimulator
from openseal.skills.credentials import RuntimeContext
from openseal.skills.secrets import SecretFilter

WORKFLOW = "procure_laptops"
REQUEST: Mapping[str, Any] = {"request": {"item": "laptop", "quantity": 10, "budget": 15000}}
DEFAULT_DEFINITIONS = Path("definitions/procurement/hcl")
#: the scripted model's answers, next to the definitions (``../scripts/procurement.json``)
SCRIPT_NAME = Path("scripts") / "procurement.json"
#: the variable holding the simulator's token, in this process only
TOKEN_ENV = "OPENSEAL_QUICKSTART_PROCUREMENT_TOKEN"
CONTEXT_NAME = "quickstart-context.yaml"
#: where the local operator's decision comes from: this process, on this machine
#: approval rounds before giving up (each "request changes" drafts again)
MAX_ROUNDS = 5


class QuickstartError(OpenSealError):
    """The quickstart could not finish; the message is one line."""


class NoDecision(QuickstartError):
    """The person asked for a decision gave none (the input ended): nothing was decided."""

    code = "no_decision"


class DefinitionsInvalid(QuickstartError):
    """The definitions have errors; ``result`` carries the diagnostics to render."""

    def __init__(self, result: CompileResult) -> None:
        errors = sum(1 for d in result.diagnostics if d.severity == "error")
        super().__init__(f"the definitions have {errors} error(s)")
        self.result = result

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.result.diagnostics


@dataclass(frozen=True)
class Options:
    home: Path = Path(".openseal")
    definitions: Path = DEFAULT_DEFINITIONS
    #: the scripted model's responses; default ``<definitions>/../scripts/procurement.json``
    script: Path | None = None
    #: the simulator's bearer token; default a new random one (tests pass a canary)
    token: str | None = None
    #: append one line per scripted model call here (tests)
    calls_file: Path | None = None
    request: Mapping[str, Any] = field(default_factory=lambda: dict(REQUEST))
    #: a runtime context with the model's credentials (a keyed endpoint); the simulator's
    #: entries are added to it
    context: Path | None = None


@dataclass(frozen=True)
class Order:
    """The exact order waiting for approval, read back from the stored proposal artefact."""

    approval_id: str
    proposal: str
    hash: str
    vendor: str
    quantity: int | float
    total: int | float
    currency: str
    destination: str
    skill: str
    actor: str
    #: the artefact's digest matched its content when it was read back
    verified: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id, "proposal": self.proposal, "hash": self.hash,
            "vendor": self.vendor, "quantity": self.quantity, "total": self.total,
            "currency": self.currency, "destination": self.destination, "skill": self.skill,
            "actor": self.actor, "verified": self.verified,
        }  # fmt: skip


@dataclass(frozen=True)
class Decision:
    """``approve``, ``reject`` or ``request_changes``; a reason is needed except to approve."""

    verb: str
    reason: str | None = None


@dataclass(frozen=True)
class Decided:
    order: Order
    decision: Decision
    approver: str


@dataclass(frozen=True)
class TimelineEntry:
    seq: int
    #: seconds since the run's first event
    offset: float
    type: str
    summary: str

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "offset": self.offset, "type": self.type, "summary": self.summary}


@dataclass(frozen=True)
class Outcome:
    home: Path
    definitions: Path
    objective_id: str
    run_id: str
    status: str
    #: the last order shown for approval (None when the run never drafted one)
    order: Order | None
    decisions: tuple[Decided, ...]
    #: set only when the action succeeded: the id the procurement service confirmed
    purchase_order_id: str | None
    #: why the run stopped, when it did not complete
    reason: str | None
    events: tuple[TimelineEntry, ...]

    @property
    def ok(self) -> bool:
        """Completed, or ended as the operator decided (rejected)."""
        return self.status in (RunStatus.COMPLETED, RunStatus.CANCELED) and self.reason is None

    def as_json(self) -> dict[str, Any]:
        return {
            "home": str(self.home),
            "objective_id": self.objective_id,
            "run_id": self.run_id,
            "status": self.status,
            "order": self.order.as_json() if self.order else None,
            "hash": self.order.hash if self.order else None,
            "decisions": [
                {
                    "decision": d.decision.verb,
                    "reason": d.decision.reason,
                    "approver": d.approver,
                    "hash": d.order.hash,
                }
                for d in self.decisions
            ],
            "purchase_order_id": self.purchase_order_id,
            "reason": self.reason,
            "events": [entry.as_json() for entry in self.events],
        }


class Reporter(Protocol):
    """Where progress goes; the CLI prints step lines on a terminal."""

    def step(self, text: str) -> None: ...


class Silent:
    def step(self, text: str) -> None:
        """Progress is not shown."""


Decide = Callable[[Order], Decision]


def approve(_order: Order) -> Decision:
    """The default decision: the local operator approves the order it was shown."""
    return Decision("approve")


# -- the steps -------------------------------------------------------------------------


def compile_definitions(path: Path) -> list[CompiledDocument]:
    """Compile ``path``; :class:`DefinitionsInvalid` with the diagnostics on errors."""
    if not path.exists():
        raise QuickstartError(
            f"{path} does not exist: run from the repository root or pass --definitions"
        )
    result = compile_paths([path])
    if not result.ok:
        raise DefinitionsInvalid(result)
    if not any(d.kind == "workflow" and d.name == WORKFLOW for d in result.documents.values()):
        raise QuickstartError(f"{path} defines no workflow {WORKFLOW!r}")
    return list(result.documents.values())


def scripted(documents: list[CompiledDocument]) -> bool:
    """Whether a model profile of ``documents`` is answered by the scripted provider."""
    return any(
        d.kind == "model" and (d.document.get("spec") or {}).get("provider") == "scripted"
        for d in documents
    )


def script_for(options: Options) -> Path:
    script = options.script or options.definitions.resolve().parent / SCRIPT_NAME
    if not script.is_file():
        raise QuickstartError(f"scripted model responses {script} not found (pass --script)")
    return script


@dataclass(frozen=True)
class Sandbox:
    """The running simulator and the runtime context that points the skills at it."""

    simulator: ProcurementSimulator
    context: RuntimeContext
    context_path: Path


@contextmanager
def procurement_sandbox(
    home: Path, token: str | None = None, context: Path | None = None
) -> Iterator[Sandbox]:
    """Start the simulator requiring a bearer token, and write a context file for it.

    The token lives in this process's environment only (the context file names the variable,
    not the value) and the simulator is stopped whatever happens. ``context`` (the user's
    runtime context, e.g. a model key) is loaded first and the simulator's entries added.
    """
    value = token or secrets.token_urlsafe(32)
    previous = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = value
    scrub = SecretFilter()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:  # a value that strays into a log record is redacted
        handler.addFilter(scrub)
    simulator = ProcurementSimulator(credential=value)
    try:
        simulator.start()
        path = home / CONTEXT_NAME
        path.write_text(
            "# written by `openseal quickstart` for its own simulator; the token's value\n"
            "# is in the quickstart process's environment only\n"
            f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
            f"config:\n  procurement_url: {simulator.url}\n",
            encoding="utf-8",
        )
        sandbox = RuntimeContext.load(path, log_filter=scrub)
        if context is not None:
            sandbox = RuntimeContext.load(context, log_filter=scrub).merged(sandbox)
        yield Sandbox(simulator, sandbox, path)
    finally:
        simulator.stop()
        for handler in handlers:
            handler.removeFilter(scrub)
        if previous is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = previous


def run_quickstart(
    options: Options, *, decide: Decide = approve, reporter: Reporter | None = None
) -> Outcome:
    """The whole quickstart; see the module docstring. Raises :class:`QuickstartError`."""
    report = reporter or Silent()
    report.step(f"compiling {options.definitions}")
    documents = compile_definitions(options.definitions)
    script = script_for(options) if scripted(documents) else None
    options.home.mkdir(parents=True, exist_ok=True)
    store = open_store(home=options.home)
    try:
        report.step(f"registering {len(documents)} compiled versions in {options.home}")
        service.register_documents(store, documents, actor=service.LOCAL_ACTOR, reason="quickstart")
        report.step("starting the procurement simulator on 127.0.0.1")
        with procurement_sandbox(options.home, options.token, options.context) as sandbox:
            engine = Engine(
                store,
                default_provider_factory(
                    script, options.calls_file, credentials=sandbox.context.credentials
                ),
                worker_id=f"quickstart:{os.getpid()}",
                context=sandbox.context,
            )
            request = service.StartObjective(
                WORKFLOW, dict(options.request), request_key=f"quickstart-{uuid.uuid4().hex}"
            )
            # The objective, the claim of its run and its first turn share one commit.
            objective, _ = engine.submit(request, service.CLI)
            assert objective.run is not None  # not a draft
            report.step(f"run {objective.run.id}: researching vendors")
            return drive(store, engine, objective.run, options, decide, report)
    finally:
        store.close()


def drive(
    store: Store,
    engine: Engine,
    run: Run,
    options: Options,
    decide: Decide,
    report: Reporter,
) -> Outcome:
    """Work on ``run`` until it ends or stops; ask ``decide`` at each approval."""
    authority = ApprovalAuthority(local_operator=True)
    decisions: list[Decided] = []
    order: Order | None = None
    engine.run_until_idle()
    current = store.runs.get(run.id)
    for _ in range(MAX_ROUNDS):
        if current.status != RunStatus.WAITING_FOR_APPROVAL:
            break
        order = pending_order(store, run.id)
        report.step(f"order drafted, waiting for approval {order.approval_id}")
        decision = decide(order)
        request = service.ApprovalDecision(
            order.approval_id, decision.verb, order.hash, decision.reason
        )
        decided = service.decide_approval(store, authority, request, service.CLI)
        decisions.append(Decided(order, decision, decided.approval.decided_by or ""))
        report.step(f"{decision.verb.replace('_', ' ')}: continuing the run")
        engine.run_until_idle()
        current = store.runs.get(run.id)
    return Outcome(
        home=options.home,
        definitions=options.definitions,
        objective_id=current.objective_id,
        run_id=run.id,
        status=str(current.status),
        order=order,
        decisions=tuple(decisions),
        purchase_order_id=confirmed_order_id(store, run.id),
        reason=stop_reason(store, current),
        events=timeline(store.runs.events(run.id, 0, 100_000)),
    )


def pending_order(store: Store, run_id: str) -> Order:
    """The order the run waits on, as stored (the artefact, digest-checked)."""
    pending = service.list_approvals(store, status="pending", run_id=run_id)
    if not pending:
        raise QuickstartError(f"run {run_id} waits for an approval, but none is pending")
    view = service.show_approval(store, pending[0].id)
    document = view.proposal.document
    args = document.get("args") or {}
    return Order(
        approval_id=view.approval.id,
        proposal=view.approval.proposal_name,
        hash=view.approval.proposal_hash,
        vendor=str(args.get("vendor")),
        quantity=args.get("quantity", 0),
        total=args.get("total", 0),
        currency=str(args.get("currency")),
        destination=str(args.get("destination")),
        skill=str((document.get("skill") or {}).get("name")),
        actor=str(document.get("actor")),
        verified=view.proposal.verified,
    )


def confirmed_order_id(store: Store, run_id: str) -> str | None:
    """The purchase-order id, only from an action that succeeded (the destination confirmed)."""
    for action in service.list_actions(store, run_id=run_id):
        if action.status == ActionStatus.SUCCEEDED and isinstance(action.result, dict):
            order_id = action.result.get("order_id")
            if isinstance(order_id, str):
                return order_id
    return None


def stop_reason(store: Store, run: Run) -> str | None:
    if run.status == RunStatus.COMPLETED:
        return None
    if run.status == RunStatus.CANCELED:
        # the example ends `canceled` when the requester rejected the order
        return None if _rejected(store, run.id) else "the run was canceled"
    reason = service.waiting_reason(run)
    return f"run {run.id} is {run.status}" + (f": {reason}" if reason else "")


def _rejected(store: Store, run_id: str) -> bool:
    return bool(service.list_approvals(store, status="rejected", run_id=run_id))


# -- the timeline ----------------------------------------------------------------------


def timeline(events: tuple[Event, ...]) -> tuple[TimelineEntry, ...]:
    if not events:
        return ()
    start = events[0].at
    return tuple(
        TimelineEntry(e.seq, round((e.at - start).total_seconds(), 3), e.type, summarize(e))
        for e in events
    )
