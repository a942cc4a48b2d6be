"""One model for both syntaxes: frozen pydantic models for every definition kind.

A definition file is a mapping from kind to a mapping from name to body — in
HCL ``skill "search_vendors" { ... }``, in YAML ``skill: {search_vendors: {...}}``.
The name is the block label, so the body models below carry no ``name`` field.
Expressions, references, types and durations are parsed while validating (see
:mod:`openseal.compiler.definitions.field_types`), so a model holds ASTs, never raw text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_validator,
)

from openseal.compiler.definitions.field_types import (
    Duration,
    Expression,
    Identifier,
    Reference,
    Template,
    Text,
    TypeConstraint,
)
from openseal.contract import MAX_RUN_DEPTH

Effect = Literal["read", "write", "external", "production", "destructive"]
#: Effects in increasing order of risk; index = risk level.
EFFECT_ORDER: tuple[Effect, ...] = ("read", "write", "external", "production", "destructive")
EndOutcome = Literal["completed", "failed", "canceled"]
JSONValue = JsonValue


def _one_or_many(value: object) -> object:
    """A block written once arrives as a mapping; written again, as a list."""
    return [value] if isinstance(value, dict) else value


class Spec(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    )


# --------------------------------------------------------------------------- model


class Price(Spec):
    """What the endpoint charges, per million tokens, in one currency."""

    currency: str = Field("USD", pattern=r"^[A-Z]{3}$", description="ISO 4217 code")
    input_per_million: float = Field(ge=0, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, allow_inf_nan=False)


class RateLimit(Spec):
    """How often a skill may be called, shared by every worker: ``requests`` per ``per``,
    with bursts of up to ``burst`` requests (without it, one interval's worth)."""

    requests: int = Field(ge=1, description="requests allowed per interval")
    per: Duration = Field(description="the interval, e.g. `1m`")
    burst: int | None = Field(
        None, ge=1, description="requests that may go at once; default: `requests`"
    )

    @model_validator(mode="after")
    def _positive_interval(self) -> RateLimit:
        if self.per <= 0:
            raise ValueError("`per` must be a positive duration")
        return self


class ModelRateLimit(Spec):
    """A model endpoint's limit, shared by every worker: ``requests`` and ``tokens`` (prompt
    and output) per ``per``; a call takes its prompt's estimate and its most output before it
    is sent, corrected by what the endpoint reports after."""

    requests: int | None = Field(None, ge=1, description="requests allowed per interval")
    tokens: int | None = Field(None, ge=1, description="tokens (prompt and output) per interval")
    per: Duration = Field(description="the interval, e.g. `1m`")
    burst: int | None = Field(
        None, ge=1, description="requests that may go at once; default: `requests`"
    )

    @model_validator(mode="after")
    def _something_limited(self) -> ModelRateLimit:
        if self.per <= 0:
            raise ValueError("`per` must be a positive duration")
        if self.requests is None and self.tokens is None:
            raise ValueError("a model's `rate_limit` limits `requests`, `tokens` or both")
        if self.burst is not None and self.requests is None:
            raise ValueError("`burst` counts requests: set `requests` too")
        return self


class ModelProfile(Spec):
    """An OpenAI-compatible endpoint. One endpoint per profile; nothing routes silently."""

    provider: Literal["openai", "scripted"] = "openai"
    base_url: str | None = None
    model: str
    credential: str | None = Field(None, description="credential reference, never a value")
    script: str | None = Field(None, description="scripted provider: responses file")
    parameters: dict[str, JSONValue] = Field(default_factory=dict)
    price: Price | None = Field(None, description="prices per million tokens, for run costs")
    rate_limit: ModelRateLimit | None = Field(
        None, description="requests and tokens per interval, shared by every worker"
    )


# --------------------------------------------------------------------------- skill


class HttpAdapter(Spec):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    url: Template
    headers: dict[str, Template] = Field(default_factory=dict)
    body: Expression | None = None
    ambiguous_statuses: list[int] = Field(
        default_factory=lambda: [500, 502, 503, 504],
        description="statuses whose outcome is unknown (the request may have taken effect)",
    )


class PythonAdapter(Spec):
    entry_point: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class RunbookAdapter(Spec):
    runbook: Reference


class Adapter(Spec):
    http: HttpAdapter | None = None
    python: PythonAdapter | None = None
    runbook: RunbookAdapter | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Adapter:
        chosen = [k for k in ("http", "python", "runbook") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError("declare exactly one adapter: `http`, `python` or `runbook`")
        return self


class Retry(Spec):
    attempts: int = Field(1, ge=1, le=20)
    backoff: Duration = 1.0


class Idempotency(Spec):
    key_header: str | None = Field(None, description="header that carries the stable action key")
    same_key_retry: bool = Field(False, description="re-sending with the same key is safe")
    lookup: Adapter | None = Field(None, description="operation that finds an action by its key")
    window: Duration | None = Field(
        None,
        description="how long the destination remembers an action key (its idempotency "
        "window): a settled action's run stays in the live store at least this long",
    )


class ApprovalPolicy(Spec):
    required: bool = True
    approvers: list[str] = Field(default_factory=list)
    expires_in: Duration | None = None


class SkillSpec(Spec):
    description: str
    effect: Effect
    input: TypeConstraint | None = None
    output: TypeConstraint | None = None
    adapter: Adapter
    credential: str | None = Field(None, description="credential reference, never a value")
    timeout: Duration = 30.0
    retry: Retry = Retry()
    idempotency: Idempotency | None = None
    approval: ApprovalPolicy | None = None
    rate_limit: RateLimit | None = Field(
        None, description="calls per interval, shared by every worker"
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="the most calls of this skill in flight to its destination at once, across "
        "every worker: an action holds one from `dispatched` until it is settled (through "
        "`unknown`); a call over it waits (`waiting_for_capacity`) until one is settled",
    )


# --------------------------------------------------------------------------- agents and teams


class Budget(Spec):
    turns: int | None = Field(None, ge=0)
    model_calls: int | None = Field(None, ge=0)
    tool_calls: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    spend: float | None = Field(None, ge=0)
    currency: str | None = None
    period: Duration | None = Field(
        None,
        description="for a team's or agent's spend: a rolling window (e.g. `30d`); "
        "without it, spend counts across all runs for ever",
    )


class AgentSpec(Spec):
    description: str | None = None
    model: Reference
    instructions: Text
    max_risk: Effect = "read"
    budget: Budget = Budget()
    workflow: Identifier | None = Field(
        None,
        description="the workflow (by name, as deployed) a request delegated to this agent "
        "runs as; without it, a delegated request is one turn of this agent with the goal",
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="the most turns of this agent (its own and its workflows' runs) "
        "in flight at once, "
        "across every worker; a turn over it waits (`waiting_for_capacity`) until one ends",
    )


class Role(Spec):
    agent: Reference


class TeamPolicy(Spec):
    approvers: list[str] = Field(default_factory=list, description="who may approve actions")
    approval_required_from: Effect = Field(
        "external", description="actions with this effect or riskier need an approval"
    )
    budget: Budget = Budget()


class TeamSpec(Spec):
    description: str | None = None
    role: dict[Identifier, Role]
    policy: TeamPolicy = TeamPolicy()
    concurrency: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="the most turns of this team (its roles' and its workflows' runs) "
        "in flight at once, "
        "across every worker; a turn over it waits (`waiting_for_capacity`) until one ends",
    )


class BindingSpec(Spec):
    """Grants one skill to an agent, a team, or one role of a team; it can only narrow."""

    skill: Reference
    to: Reference
    max_risk: Effect | None = None
    constraints: list[Expression] = Field(
        default_factory=list, description="guards over `args` that every call must satisfy"
    )
    approval: ApprovalPolicy | None = None


# --------------------------------------------------------------------------- workflows


class Input(Spec):
    type: TypeConstraint
    description: str | None = None
    default: JSONValue = None


class Output(Spec):
    type: TypeConstraint | None = None
    value: Expression


class Transition(Spec):
    next: Reference
    when: Expression | None = None


class Turn(Spec):
    agent: Reference
    goal: Template
    skills: list[Reference] = Field(default_factory=list)
    output: TypeConstraint | None = None
    max_model_calls: int = Field(8, ge=1)


class Spend(Spec):
    amount: Expression
    currency: Expression


class ProposalStep(Spec):
    skill: Reference
    actor: Reference | None = Field(
        None, description="agent, team or team role acting; defaults to the workflow owner"
    )
    args: dict[str, Expression] = Field(default_factory=dict)
    spend: Spend | None = None


class Action(Spec):
    proposal: Reference | None = None
    skill: Reference | None = None
    actor: Reference | None = Field(
        None, description="agent, team or team role acting; defaults to the proposal's actor"
    )
    args: dict[str, Expression] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _proposal_or_skill(self) -> Action:
        if (self.proposal is None) == (self.skill is None):
            raise ValueError("an action names either a `proposal` or a `skill`")
        if self.proposal is not None and self.args:
            raise ValueError("an action of a proposal takes its arguments from the proposal")
        return self


class Approval(Spec):
    proposal: Reference
    approvers: list[str] = Field(default_factory=list)
    expires_in: Duration | None = None
    on_timeout: Literal["expire", "reject"] = "expire"
    separation_of_duties: bool | None = Field(
        None,
        description="the principal who created the run may not approve its proposal; "
        "default: on when the proposal spends (`spend`) or its skill's effect is `external` "
        "or riskier",
    )


class Decision(Spec):
    pass


class Transform(Spec):
    output: Expression


class Wait(Spec):
    timer: Duration | None = None
    event: str | None = None
    correlation: dict[str, Expression] = Field(default_factory=dict)
    timeout: Duration | None = None

    @model_validator(mode="after")
    def _timer_or_event(self) -> Wait:
        if (self.timer is None) == (self.event is None):
            raise ValueError("a wait has either a `timer` or an `event`")
        return self


class CarvedBudget(Spec):
    """What a ``delegate`` carves out of its caller run's budgets for the request's child run:
    held from the caller when the request is made, the child's limit, and settled to what the
    child used when it ends."""

    turns: int | None = Field(None, ge=0)
    model_calls: int | None = Field(None, ge=0)
    tool_calls: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)


class Delegate(Spec):
    to: Reference
    goal: Template
    input: dict[str, Expression] = Field(default_factory=dict)
    output: TypeConstraint | None = None
    review: bool = False
    expires_in: Duration | None = Field(
        None, description='the request expires this long after it is made (`on "expired"`)'
    )
    budget: CarvedBudget | None = Field(
        None, description="the budget carved out of the caller run's for the request's work"
    )


class Child(Spec):
    """One child run a ``spawn`` state starts."""

    workflow: Identifier = Field(
        description="the workflow (by name, as deployed) the child runs; the version active "
        "when the child starts is pinned"
    )
    input: dict[str, Expression] = Field(
        default_factory=dict, description="the child's inputs, from the parent's scope"
    )


class Spawn(Spec):
    """Start child runs of deployed workflows and wait for them as one dependency group."""

    child: dict[Identifier, Child] = Field(description="the children, by label")
    join: Literal["all", "any", "quorum"] = Field(
        "all", description="how many children must complete: every one, one, or `quorum`"
    )
    quorum: int | None = Field(
        None, ge=1, description='with `join = "quorum"`: how many children must complete'
    )
    expires_in: Duration | None = Field(
        None, description='the group expires this long after the children start (`on "expired"`)'
    )
    detach: bool = Field(
        False,
        description="children run on when the parent is canceled or stops waiting for them; "
        "by default they are canceled",
    )

    @field_validator("quorum")
    @classmethod
    def _quorum_fits(cls, quorum: int | None, info: ValidationInfo) -> int | None:
        children = info.data.get("child") or {}
        if quorum is not None and children and quorum > len(children):
            raise ValueError(
                f"a quorum of {quorum} cannot be met by {len(children)} "
                f"child{'ren' if len(children) != 1 else ''}"
            )
        if quorum is not None and info.data.get("join") != "quorum":
            raise ValueError('`quorum` is for `join = "quorum"`')
        return quorum

    @model_validator(mode="after")
    def _quorum_given(self) -> Spawn:
        if self.join == "quorum" and self.quorum is None:
            raise ValueError('`join = "quorum"` needs `quorum`, the number that must complete')
        return self


class BranchWork(Spec):
    """The unit of work of one parallel branch or of each for_each item."""

    turn: Turn | None = None
    action: Action | None = None
    transform: Transform | None = None
    delegate: Delegate | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> BranchWork:
        if sum(x is not None for x in (self.turn, self.action, self.transform, self.delegate)) != 1:
            raise ValueError("declare exactly one of `turn`, `action`, `transform`, `delegate`")
        return self


class Parallel(Spec):
    branch: dict[Identifier, BranchWork]
    join: Literal["all", "any"] = "all"


class ForEach(Spec):
    items: Expression
    item: Identifier = "item"
    max_items: int = Field(100, ge=1)
    concurrency: int = Field(4, ge=1)
    do: BranchWork


#: kinds added after workflows were first deployed: left out of a state's JSON when absent, so
#: a compiler that knows them gives an existing workflow the digest it had before
LATER_KINDS = ("spawn",)

STATE_KINDS = (
    "turn",
    "action",
    "proposal",
    "approval",
    "decision",
    "transform",
    "wait",
    "delegate",
    "parallel",
    "for_each",
    "spawn",
)


class State(Spec):
    """One state: exactly one kind block, or ``end``."""

    description: str | None = None
    turn: Turn | None = None
    action: Action | None = None
    proposal: dict[Identifier, ProposalStep] | None = None
    approval: Approval | None = None
    decision: Decision | None = None
    transform: Transform | None = None
    wait: Wait | None = None
    delegate: Delegate | None = None
    parallel: Parallel | None = None
    for_each: ForEach | None = None
    spawn: Spawn | None = None
    end: EndOutcome | None = None
    next: Reference | None = None
    on: dict[str, Transition] = Field(default_factory=dict)
    branch: Annotated[list[Transition], BeforeValidator(_one_or_many)] = Field(
        default_factory=list, description="guarded choices, in order; the first that holds wins"
    )

    @property
    def kind(self) -> str:
        for name in STATE_KINDS:
            if getattr(self, name) is not None:
                return name
        return "end"

    @model_validator(mode="after")
    def _one_kind(self) -> State:
        kinds = [k for k in STATE_KINDS if getattr(self, k) is not None]
        if self.end is not None:
            kinds.append("end")
        if len(kinds) != 1:
            found = ", ".join(f"`{k}`" for k in kinds) or "none"
            raise ValueError(
                f"a state declares exactly one of {', '.join(STATE_KINDS)} or `end` (found {found})"
            )
        if self.proposal is not None and len(self.proposal) != 1:
            raise ValueError("a proposal state declares exactly one proposal")
        return self


class ObjectiveRetry(Spec):
    """How often an objective's work is tried: a failed or unsatisfied run starts another."""

    max_attempts: int = Field(1, ge=1, le=100, description="runs in all, the first included")
    backoff: Duration = Field(60.0, description="the wait before the second run; it doubles")
    max_backoff: Duration = Field(3600.0, description="the longest wait between two runs")


class ObjectivePolicy(Spec):
    """What the objectives of a workflow want, and how hard they try."""

    priority: int = Field(
        0, ge=-1000, le=1000, description="claim order among ready runs: higher first"
    )
    success: Expression | None = Field(
        None, description="holds when a completed run satisfied its objective (`output.<name>`)"
    )
    retry: ObjectiveRetry = ObjectiveRetry()


class RetentionPolicy(Spec):
    """How long a workflow's ended runs stay in the live store (``openseal db archive``)."""

    keep_ended_runs: Duration = Field(
        ...,
        ge=3600,
        description="how long an ended run stays live before an archive may move it (at "
        "least `1h`); the longer of this and its scope's retention applies",
    )


class MigrateState(Spec):
    """Where the runs waiting in one state of the earlier version go."""

    to: Reference = Field(description="the state of this version the runs move to")
    carry: dict[Identifier, Expression] = Field(
        default_factory=dict,
        description="outputs of this version's states, computed from the moved run: "
        "`state.<name>.output` and `input.<name>` are the run's, as the earlier version "
        "recorded them",
    )


class Migrate(Spec):
    """How runs of an earlier version of the workflow move to this one (under governance)."""

    version: str = Field(
        pattern=r"^(sha256:)?[0-9a-f]{6,64}$",
        description="the earlier version: its digest, or a prefix of at least 6 hex digits",
    )
    state: dict[Identifier, MigrateState] = Field(
        default_factory=dict, description="each waiting state of the earlier version, mapped"
    )
    leave: list[Identifier] = Field(
        default_factory=list,
        description="waiting states of the earlier version whose runs stay on it",
    )


class WorkflowSpec(Spec):
    description: str | None = None
    owner: Reference
    start: Reference
    input: dict[Identifier, Input] = Field(default_factory=dict)
    output: dict[Identifier, Output] = Field(default_factory=dict)
    budget: Budget = Budget()
    on_budget_exhausted: Literal["needs_attention", "failed"] = "needs_attention"
    objective: ObjectivePolicy | None = None
    retention: RetentionPolicy | None = None
    max_depth: int | None = Field(
        None,
        ge=2,
        le=MAX_RUN_DEPTH,
        description="the most runs deep a run tree may be for a child its runs start "
        "(`spawn`, `delegate`); a run started by no other run is 1 deep. Required on one "
        "workflow of every cycle of workflows that start each other",
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="the most turns of this workflow's runs in flight at once, "
        "across every worker; a turn over it waits (`waiting_for_capacity`) until one ends",
    )
    max_queued: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="the most of its runs that may wait for a worker (`queued`); while that "
        "many wait, a new objective or an event that would start one is refused with `429 "
        "queue_full` and `Retry-After`, and a trigger's firing waits",
    )
    state: dict[Identifier, State]
    migrate: Annotated[list[Migrate], BeforeValidator(_one_or_many)] = Field(
        default_factory=list,
        description="maps of earlier versions' waiting states to this version's, one per "
        "earlier version; applied only by an activated change proposal",
    )


# --------------------------------------------------------------------------- runbooks


BUILTIN_STEPS = (
    "trigger",
    "http",
    "transform",
    "set",
    "if",
    "switch",
    "filter",
    "sort",
    "aggregate",
    "merge",
    "split",
    "delay",
)


class Step(Spec):
    skill: Reference | None = None
    uses: Literal[BUILTIN_STEPS] | None = None  # type: ignore[valid-type]
    args: dict[str, Expression] = Field(default_factory=dict)
    depends_on: list[Reference] = Field(default_factory=list)
    when: Expression | None = None
    timeout: Duration = 60.0

    @model_validator(mode="after")
    def _skill_or_builtin(self) -> Step:
        if (self.skill is None) == (self.uses is None):
            raise ValueError("a step names either a `skill` or a built-in step type in `uses`")
        return self


class RunbookSpec(Spec):
    description: str | None = None
    input: dict[Identifier, Input] = Field(default_factory=dict)
    output: dict[Identifier, Output] = Field(default_factory=dict)
    on_failure: Literal["fail_fast", "continue"] = "fail_fast"
    concurrency: int = Field(4, ge=1, le=64)
    step: dict[Identifier, Step]


# --------------------------------------------------------------------------- governance


class GovernanceSpec(Spec):
    """Who may review and decide changes to deployments.

    A change proposal for a deployment is governed by every policy whose
    ``deployments`` patterns match its name (shell-style, ``*`` for all).
    Risk-widening changes always need an explicit decision.
    """

    description: str | None = None
    deployments: list[str] = Field(default_factory=lambda: ["*"])
    reviewers: list[str] = Field(default_factory=list, description="principals who may review")
    deciders: list[str] = Field(
        default_factory=list, description="principals who may approve or reject"
    )
    required_reviews: int = Field(1, ge=0)
    auto_approve_narrowing: bool = Field(
        False, description="approve changes that widen nothing; activation stays a separate step"
    )


# --------------------------------------------------------------------------- triggers


class Schedule(Spec):
    """When a schedule trigger fires: a cron expression in a time zone, or a fixed interval."""

    cron: str | None = Field(
        None, description="five fields (minute hour day-of-month month day-of-week)"
    )
    time_zone: str = Field("UTC", description="IANA name the cron is read in, e.g. Europe/Berlin")
    every: Duration | None = Field(None, description="a fixed interval instead of a cron")

    @field_validator("cron")
    @classmethod
    def _cron_parses(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                CronSim(value, datetime(2000, 1, 1, tzinfo=UTC))
            except CronSimError as exc:
                raise ValueError(f"`{value}` is not a cron expression: {exc}") from None
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone_exists(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"`{value}` is not an IANA time zone (e.g. `Europe/Berlin`)") from None
        return value

    @model_validator(mode="after")
    def _cron_or_every(self) -> Schedule:
        if (self.cron is None) == (self.every is None):
            raise ValueError("a schedule has either a `cron` or an `every`")
        if self.every is not None and self.every < 1:
            raise ValueError("`every` must be at least one second")
        return self


class EventSource(Spec):
    """Which inbound events fire an event trigger."""

    name: str = Field(description="the inbound event's name")
    filter: Expression | None = Field(
        None, description="a guard over `payload` and `event`; the trigger fires when it holds"
    )


class TriggerSpec(Spec):
    """Starts an objective of a deployed workflow on a schedule or on an inbound event."""

    description: str | None = None
    workflow: Reference
    schedule: Schedule | None = None
    event: EventSource | None = None
    input: dict[str, Expression] = Field(
        default_factory=dict, description="the workflow's inputs, from the event or occurrence"
    )
    overlap: Literal["skip", "queue", "allow"] = Field(
        "skip", description="what an occurrence does while an objective it started is open"
    )
    catch_up: Literal["none", "latest", "all"] = Field(
        "latest", description="which occurrences missed while no worker ran still fire"
    )
    catch_up_limit: int = Field(
        10, ge=1, le=1000, description="`all` fires at most this many missed occurrences"
    )
    grace: Duration = Field(
        60.0, description="an occurrence later than this counts as missed (for `none`)"
    )

    @model_validator(mode="after")
    def _schedule_or_event(self) -> TriggerSpec:
        if (self.schedule is None) == (self.event is None):
            raise ValueError("a trigger has either a `schedule` or an `event`")
        return self


# --------------------------------------------------------------------------- the file


KIND_MODELS: dict[str, type[Spec]] = {
    "model": ModelProfile,
    "skill": SkillSpec,
    "agent": AgentSpec,
    "team": TeamSpec,
    "binding": BindingSpec,
    "workflow": WorkflowSpec,
    "runbook": RunbookSpec,
    "governance": GovernanceSpec,
    "trigger": TriggerSpec,
}

Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")]


class DefinitionFile(Spec):
    """The shape of one definition file (used for the editor JSON Schema)."""

    model: dict[Name, ModelProfile] = Field(default_factory=dict)
    skill: dict[Name, SkillSpec] = Field(default_factory=dict)
    agent: dict[Name, AgentSpec] = Field(default_factory=dict)
    team: dict[Name, TeamSpec] = Field(default_factory=dict)
    binding: dict[Name, BindingSpec] = Field(default_factory=dict)
    workflow: dict[Name, WorkflowSpec] = Field(default_factory=dict)
    runbook: dict[Name, RunbookSpec] = Field(default_factory=dict)
    governance: dict[Name, GovernanceSpec] = Field(default_factory=dict)
    trigger: dict[Name, TriggerSpec] = Field(default_factory=dict)
