"""Request bodies. Field names are camelCase (``expectedRevision``); snake_case is accepted too.

Responses are the same documents as the CLI's ``--output json`` (record fields in snake_case).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic.alias_generators import to_camel

from openseal.api.parameters import WHOLE, ProposalHash, SinceText
from openseal.contract import ROLE_PREFIX
from openseal.runtime.service import LOCAL_OPERATOR, PRINCIPAL_PATTERN, ROLES, SCOPE_PATTERN

Name = Annotated[str, Field(min_length=1, max_length=200)]
Text = Annotated[str, Field(max_length=4000)]
#: at least one character that is not white space
NOT_BLANK = r"\S"
Revision = Annotated[int, Field(ge=0, le=2**31 - 1), WHOLE] | None


class Body(BaseModel):
    # strict: a value of another JSON type than declared is refused, never converted (false
    # is not 0, "3" is not 3), as the document says
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True, strict=True
    )


class ObjectiveCreate(Body):
    """Start a deployed workflow on its active version."""

    workflow: Name
    inputs: dict[str, Any] = Field(default_factory=dict)
    project: Name = "default"
    #: where the objective lives (a scope the caller may act in); omitted: the caller's own
    scope: Name | None = None
    #: what it is for, in the caller's words
    goal: Text | None = None
    #: its runs' claim order among ready runs, higher first; omitted: the workflow's
    priority: Annotated[int, Field(ge=-1000, le=1000), WHOLE] | None = None
    #: create it as a draft: no run starts until its status is set to ``active``
    draft: bool = False


class ObjectiveStatusChange(Body):
    """Pause an objective (``paused``), resume it (``active``) or retire it (``retired``);
    its unfinished runs are paused, resumed or canceled with it. A draft is not resumed
    (409 ``objective_draft``): activate it. ``expectedRevision``: refuse (409) if the objective
    changed since."""

    status: Literal["active", "paused", "retired"]
    reason: Text | None = None
    expected_revision: Revision = None


class ObjectiveActivation(Body):
    """Activate a draft objective: its first run starts. ``expectedRevision``: refuse (409)
    if the objective changed since."""

    reason: Text | None = None
    expected_revision: Revision = None


class RunCommand(Body):
    """Pause, resume or cancel. ``expectedRevision``: refuse (409) if the run changed since."""

    reason: Text | None = None
    expected_revision: Revision = None


class Intervention(Body):
    """Repair a paused run or one that needs attention: set the current state's output
    (``value``), move it (``state``), or neither to retry the state."""

    reason: Annotated[str, Field(min_length=1, max_length=4000)]
    state: Name | None = None
    value: Any = None
    expected_revision: Revision = None


class ApprovalDecision(Body):
    """A decision on the exact proposal whose ``hash`` the approver was shown (whole, or its
    first 10 or more hex digits); ``reject`` and ``request_changes`` need a ``reason`` that is
    not blank (422 ``reason_required``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"decision": {"enum": ["reject", "request_changes"]}},
                "required": ["decision"],
            },
            "then": {
                "properties": {"reason": {"type": "string", "pattern": NOT_BLANK}},
                "required": ["reason"],
            },
        }
    )

    decision: Literal["approve", "reject", "request_changes"]
    hash: ProposalHash
    reason: Text | None = None


class ActionResolution(Body):
    """Settle an action whose outcome is open, with the evidence you checked."""

    outcome: Literal["succeeded", "failed"]
    evidence: Annotated[str, Field(min_length=1, max_length=4000)]
    result: Any = None


class InboundEventBody(Body):
    """An event for runs in a ``wait`` state: ``name`` plus the ``correlation`` they match.

    ``eventId`` is the sender's id for the event (or send it as ``Idempotency-Key``): a second
    delivery with the same id is acknowledged with the first one's answer, not stored again."""

    name: Name
    correlation: dict[str, Any] = Field(default_factory=dict)
    payload: Any = None
    event_id: Name | None = None


class TriggerStatusChange(Body):
    """Pause a trigger (``paused``), resume it (``active``) or retire it (``retired``)."""

    status: Literal["active", "paused", "retired"]
    reason: Text | None = None


class ScopeLimitChange(Body):
    """A scope's concurrency cap: at most ``max`` turns of its runs in flight (null: no cap)."""

    max: Annotated[int, Field(ge=0, le=1_000_000), WHOLE] | None


class ScopeQuotaChange(Body):
    """A scope's quota: at most ``max`` of the measure per period (null: no quota; money in
    its currency, the rest whole numbers), and whether work over it waits (``wait``, the
    default) or is refused with ``429 quota_exceeded`` (``refuse``)."""

    max: Annotated[float, Field(ge=0, le=1e15)] | None
    when_over: Literal["wait", "refuse"] | None = None


class ScopeQueueChange(Body):
    """A scope's ready-queue depth: at most ``max_queued`` of its runs waiting for a worker
    (null: no bound); over it, new work is refused with ``429 queue_full``."""

    max_queued: Annotated[int, Field(ge=0, le=10_000_000), WHOLE] | None


#: a retention period over the API: whole hours, days or weeks, at least ``1h`` (the CLI also
#: takes compound periods such as ``1w2d``, checked by the service)
RETENTION_PERIOD = r"^[1-9][0-9]{0,3}[hdw]$"


class ScopeRetentionChange(Body):
    """A scope's retention: its ended runs stay live ``keep_ended_runs`` (whole hours, days or
    weeks, such as ``90d``; at least ``1h``; null: remove the setting)."""

    keep_ended_runs: Annotated[str, Field(pattern=RETENTION_PERIOD)] | None


#: a principal a token may stand for (the service refuses the others: 422)
TokenPrincipal = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        json_schema_extra={
            "pattern": PRINCIPAL_PATTERN,
            "not": {"anyOf": [{"pattern": f"^{ROLE_PREFIX}"}, {"const": LOCAL_OPERATOR}]},
        },
    ),
]


class TokenCreate(Body):
    """A bearer token for ``principal`` (``kind:name``, not the local operator) with ``roles``
    in ``scopes`` (``*``: every scope), expiring ``expiresIn`` seconds from now (omitted:
    never)."""

    principal: TokenPrincipal
    roles: Annotated[
        list[Annotated[str, Field(json_schema_extra={"enum": list(ROLES)})]],
        Field(min_length=1, max_length=len(ROLES)),
    ]
    scopes: Annotated[
        list[Annotated[str, Field(json_schema_extra={"pattern": SCOPE_PATTERN})]],
        Field(min_length=1, max_length=100),
    ] = ["default"]
    expires_in: Annotated[float | None, Field(gt=0, le=100 * 366 * 86400, allow_inf_nan=False)] = (
        None
    )
    note: Text | None = None


class ProposalFiling(Body):
    """Compiled documents (as ``openseal compile`` writes them) to file a change proposal for."""

    documents: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=10_000)]
    message: Text | None = None


class ProposalReview(Body):
    verdict: Literal["approve", "request_changes"]
    comment: Text | None = None
    expected_revision: Revision = None


class ProposalDecision(Body):
    decision: Literal["approve", "reject"]
    comment: Text | None = None
    expected_revision: Revision = None


class ProposalChange(Body):
    """Activate or refresh."""

    expected_revision: Revision = None


#: a replay's selections given together (each set: not null, and ``run`` not empty)
_GIVEN: dict[str, JsonValue] = {
    "runs": {"type": "integer"},
    "since": {"type": "string"},
    "run": {"minItems": 1},
}
_AT_MOST_ONE: list[JsonValue] = [
    {"required": [a, b], "properties": {a: _GIVEN[a], b: _GIVEN[b]}}
    for a, b in (("runs", "since"), ("runs", "run"), ("since", "run"))
]


class ProposalReplay(Body):
    """Which recorded runs to replay: the ``runs`` newest of each workflow the proposal
    changes (default 100), those started ``since`` (an age such as ``1d`` or an RFC 3339
    time), or the runs named in ``run``; one of them at most."""

    # the document says "one of them at most" too, so a client (and a fuzzer) knows it
    model_config = ConfigDict(json_schema_extra={"not": {"anyOf": _AT_MOST_ONE}})

    runs: Annotated[int, Field(ge=1, le=10_000), WHOLE] | None = None
    since: SinceText | None = None
    run: (
        Annotated[
            list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=10_000)
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _one_way(self) -> ProposalReplay:
        given = [name for name in ("runs", "since", "run") if getattr(self, name)]
        if len(given) > 1:
            raise ValueError(f"choose the runs one way: {' or '.join(given)}, not both")
        return self


class Migration(Body):
    """Move the waiting runs an activated proposal migrates, or with ``dryRun`` show which
    would move where; optionally only those of a workflow, an earlier version or a state."""

    dry_run: bool = False
    workflow: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    version: Annotated[str, Field(pattern=r"^(sha256:)?[0-9a-f]{6,64}$")] | None = None
    state: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class Rollback(Body):
    """Re-activate an earlier version (``to``: a digest or prefix; default the previous one)."""

    to: Annotated[str, Field(min_length=1, max_length=80)] | None = None
    message: Text | None = None


class AuthoringDraftBody(Body):
    """A prompt to author from, against the server's configured definitions and model profile.

    ``propose``: file the compiled draft as a change proposal by the caller (never activated).
    """

    prompt: Annotated[str, Field(min_length=1, max_length=8000)]
    syntax: Literal["hcl", "yaml"] = "hcl"
    propose: bool = False
    max_repairs: Annotated[int, Field(ge=0, le=10), WHOLE] = 2


class AskBody(Body):
    """A prompt for a team or an agent (one of them): its model picks the workflow that fits
    and fills its inputs. ``scope``: where the objective would live (omitted: the caller's)."""

    # exactly one of the two is named (both, or neither, is 422)
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["team"], "properties": {"team": {"type": "string"}}},
                {"required": ["agent"], "properties": {"agent": {"type": "string"}}},
            ]
        }
    )

    prompt: Annotated[str, Field(min_length=1, max_length=8000)]
    team: Name | None = None
    agent: Name | None = None
    project: Name = "default"
    scope: Name | None = None


class AskConfirmation(AskBody):
    """The plan ``POST /asks`` answered, confirmed: start ``workflow`` with ``inputs``."""

    workflow: Name
    inputs: dict[str, Any] = Field(default_factory=dict)


class AgentRequestDecline(Body):
    """The callee will not do the work: why."""

    reason: Annotated[str, Field(min_length=1, max_length=4000)]


class AgentRequestQuestion(Body):
    """The callee needs an answer before it can work on the request."""

    question: Annotated[str, Field(min_length=1, max_length=4000)]


class AgentRequestAnswer(Body):
    """The caller's answer to the open question (any JSON value)."""

    answer: Any


class AgentRequestCompletion(Body):
    """The callee's answer, checked against the request's expected output type (422)."""

    response: Any


class AgentRequestReview(Body):
    """Review a completion the caller asked to review; ``send_back`` needs a ``reason`` and
    reopens the request."""

    verdict: Literal["accept", "send_back"]
    reason: Text | None = None


class Empty(Body):
    """No fields."""
