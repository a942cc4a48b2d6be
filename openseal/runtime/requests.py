"""The request objects of the runtime's mutations: one frozen dataclass per operation, so a
field can be added without touching every caller, and nothing is forwarded argument by
argument from a route or a command down to the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunCommand:
    """Pause, resume or cancel run ``run_id``; refused when ``expected_revision`` (if given)
    is not the run's revision any more."""

    run_id: str
    reason: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class Intervention:
    """Repair a paused or stuck run: ``value`` becomes its current state's output (when not
    None), and it continues from ``state`` (when given)."""

    run_id: str
    reason: str
    state: str | None = None
    value: Any = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class ApprovalDecision:
    """Decide approval ``ref`` (an id or a proposal hash) on the proposal hash the approver was
    shown (``seen_hash``): ``approve``, ``reject`` or ``request_changes`` (these two need a
    ``reason``)."""

    ref: str
    decision: str
    seen_hash: str
    reason: str | None = None


@dataclass(frozen=True)
class Reconciliation:
    """Reconcile action ``action_id`` (an id or an action key) whose outcome is open."""

    action_id: str


@dataclass(frozen=True)
class Resolution:
    """Settle action ``action_id`` by hand: ``outcome`` ``succeeded`` or ``failed``, with the
    ``evidence`` the operator checked; ``result`` becomes a success's result."""

    action_id: str
    outcome: str
    evidence: str
    result: Any = None


@dataclass(frozen=True)
class Deployment:
    """File a change proposal for ``source`` (compiled documents by name, or a bundle)."""

    source: Any
    message: str | None = None


@dataclass(frozen=True)
class Rollback:
    """File a rollback of deployment ``name`` to ``to`` (a digest or unique prefix; default the
    version active before the current one)."""

    name: str
    to: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class ProposalReview:
    """Review change proposal ``proposal_id``: ``approve`` or ``request_changes``."""

    proposal_id: str
    verdict: str
    comment: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class ProposalDecision:
    """Decide change proposal ``proposal_id``: ``approve`` or ``reject``."""

    proposal_id: str
    decision: str
    comment: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class ProposalCommand:
    """Activate or refresh change proposal ``proposal_id``."""

    proposal_id: str
    expected_revision: int | None = None


@dataclass(frozen=True)
class RunMigration:
    """Move (or with ``dry_run`` plan to move) the waiting runs change proposal
    ``proposal_id`` migrates, narrowed to a ``workflow``, an earlier ``version`` (a digest
    prefix) and a ``state`` of it."""

    proposal_id: str
    dry_run: bool = False
    workflow: str | None = None
    version: str | None = None
    state: str | None = None


@dataclass(frozen=True)
class EventDelivery:
    """An event from outside: ``name``, ``payload``, the ``correlation`` a waiting run matches,
    and the sender's ``key`` for this delivery (a redelivery with it changes nothing)."""

    name: str
    payload: Any = None
    correlation: dict[str, Any] | None = None
    key: str | None = None


@dataclass(frozen=True)
class TriggerCommand:
    """Set trigger ``name`` to ``status``: ``paused``, ``active`` (resume) or ``retired``."""

    name: str
    status: str
    reason: str | None = None


@dataclass(frozen=True)
class StartObjective:
    """Start ``workflow`` (its active version) with ``inputs`` in ``project``; the same
    ``request_key`` with the same content returns the objective it created."""

    workflow: str
    inputs: dict[str, Any]
    project: str = "default"
    request_key: str | None = None
    #: where the objective lives (None: the caller's scope)
    scope: str | None = None
    #: what it is for, in the caller's words
    goal: str | None = None
    #: its runs' claim order, higher first (None: the workflow's ``objective.priority``, or 0)
    priority: int | None = None
    #: create it as a ``draft``: no run starts until it is activated
    draft: bool = False


@dataclass(frozen=True)
class Ask:
    """Ask ``team`` or ``agent`` (one of them) to start the deployed workflow that fits
    ``prompt``, with inputs taken from it; the objective lives in ``project`` and ``scope``."""

    prompt: str
    team: str | None = None
    agent: str | None = None
    project: str = "default"
    #: where the objective would live (None: the caller's scope)
    scope: str | None = None


@dataclass(frozen=True)
class ObjectiveCommand:
    """Pause (``paused``), resume (``active``) or retire (``retired``) an objective; its
    unfinished runs are paused, resumed or canceled with it."""

    objective_id: str
    status: str
    reason: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class ActivateObjective:
    """Activate a draft objective: its first run starts."""

    objective_id: str
    reason: str | None = None
    expected_revision: int | None = None


@dataclass(frozen=True)
class NewToken:
    """Make a bearer token for ``principal`` with ``roles`` in ``scopes`` (``*``: every scope),
    expiring ``expires_in`` seconds from now (None: never)."""

    principal: str
    roles: tuple[str, ...]
    scopes: tuple[str, ...] = ("default",)
    expires_in: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class AgentRequestStep:
    """One step on agent request ``request_id`` (an id or a unique prefix of one), taken by a
    person or an outside system on the callee's or the caller's side:

    - ``accept`` — the callee takes the request on;
    - ``decline`` — the callee will not do it (``reason``);
    - ``ask`` — the callee needs an answer first (``text``: the question);
    - ``clarify`` — the caller's side answers the open question (``value``);
    - ``complete`` — the callee's answer (``value``, checked against the expected type);
    - ``review`` — the caller's side reviews a completion: ``verdict`` ``accept`` or
      ``send_back`` (with a ``reason``, which reopens the request).
    """

    request_id: str
    step: str
    value: Any = None
    text: str | None = None
    reason: str | None = None
    verdict: str | None = None
