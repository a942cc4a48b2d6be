"""Calling a skill for an action: its pinned spec, the adapter, the key, the context.

The runtime holds compiled documents only, so the skill's :class:`~openseal.skills.Skill` is
read from its pinned compiled version (expressions and types come back from their JSON). The
credential is never read here: the runtime context's resolver is handed to the adapter, which
reads the value at call time (invariant 10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from openseal.compiler import types as ty
from openseal.runtime import telemetry
from openseal.runtime.actions.proposal_check import check_payload
from openseal.runtime.actions.replies import scrub, secrets_for
from openseal.runtime.actions.skill_documents import skill_spec
from openseal.runtime.compiled import CompiledWorkflow
from openseal.runtime.store import Proposal
from openseal.skills import Skill, adapter_for
from openseal.skills.base import SkillCall, SkillResult
from openseal.skills.bounded import GRACE_SECONDS, call_bounded
from openseal.skills.credentials import RuntimeContext
from openseal.skills.readiness import missing


def adapter_config(context: RuntimeContext | None) -> dict[str, str]:
    """``config.*`` for the adapter's templates (non-secret by the context file's rules)."""
    if context is None:
        return {}
    return {key: _text(value) for key, value in context.config.items()}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Target:
    """Everything a dispatch or a lookup needs, fixed at admission."""

    skill: str
    spec: Skill
    #: the proposal's document: what is sent is its ``args``, and it must hash to the approval
    document: Mapping[str, Any]
    proposal_hash: str
    key: str
    run_id: str
    proposal: str

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.document.get("args") or {})

    def call(self, spec: Skill, context: RuntimeContext | None) -> SkillCall:
        return SkillCall(
            skill=self.skill,
            spec=spec,
            args=self.args,
            timeout=float(spec.timeout),
            idempotency_key=self.key,
            config=adapter_config(context),
            action={"key": self.key, "run": self.run_id, "proposal": self.proposal},
            # where each credential lives; the adapter reads the value at call time
            credentials=context.credentials if context is not None else None,
        )


def unavailable(target: Target, context: RuntimeContext | None) -> str | None:
    """Why this worker cannot call ``target``'s skill at all (its runtime context lacks the
    credential or a ``config`` value the skill uses, or the entry point's module is not
    installed), or None. Such an action is not sent: sending it could only fail here, and a
    failure would read as the destination's answer."""
    problem = missing(target.call(target.spec, context))
    if problem is None:
        return None
    return f"this worker cannot call skill {target.skill}: {problem}"


def dispatch(
    target: Target,
    context: RuntimeContext | None,
    on_late: Callable[[SkillResult], None] | None = None,
) -> SkillResult:
    """Send the action once with its stable key; an adapter crash counts as ``unknown``.

    The hash of exactly what is sent is recomputed first: content that is not the approved
    proposal is never sent (:class:`~openseal.runtime.actions.proposal_check.ProposalUnverified`).
    The call is bounded by the skill's timeout: past it the outcome is ``unknown`` (to be
    reconciled, never ``failed``), and a reply that still comes goes to ``on_late``.
    """
    check_payload(dict(target.document), target.proposal_hash, f"action {target.key}")
    call = target.call(target.spec, context)
    return telemetry.action_call(
        target.run_id, target.key, target.skill,
        lambda: _run(call, ambiguous=True, on_late=on_late),
    )  # fmt: skip


def lookup(target: Target, context: RuntimeContext | None) -> SkillResult | None:
    """Ask the destination for the action by its key; None when the skill declares no lookup."""
    idempotency = target.spec.idempotency
    if idempotency is None or idempotency.lookup is None:
        return None
    # A lookup reads: an unclear answer is just "no answer", and its reply is the
    # destination's record, which need not match the skill's input or output type.
    spec = replace(target.spec, adapter=idempotency.lookup, effect="read", input=None, output=None)
    return _run(target.call(spec, context), ambiguous=False)


def _run(
    call: SkillCall,
    *,
    ambiguous: bool,
    on_late: Callable[[SkillResult], None] | None = None,
) -> SkillResult:
    adapter = adapter_for(call.spec)
    if adapter is None:
        return SkillResult(
            "failed", error=f"skill `{call.skill}`: runbook skills cannot be actions"
        )
    outcome: Literal["unknown", "failed"] = "unknown" if ambiguous else "failed"

    def attempt() -> SkillResult:
        try:
            return adapter.call(call)
        except Exception as exc:  # an adapter bug must not lose track of a possible effect
            return SkillResult(
                outcome, error=f"skill `{call.skill}` adapter error: {type(exc).__name__}"
            )

    def late(result: SkillResult) -> None:  # a reply after the bound is recorded scrubbed too
        if on_late is not None:
            on_late(scrub(result, secrets_for(call)))

    ends_in_time = getattr(adapter, "ends_in_time", None)
    if ends_in_time is not None and ends_in_time(call.spec):
        # the adapter ends the call by its timeout itself (a child process it kills): no
        # thread of its own to bound it, and no reply that comes late
        result: SkillResult | None = attempt()
    else:
        result = call_bounded(
            attempt, call.timeout + GRACE_SECONDS, on_late=late if on_late is not None else None
        )
    if result is None:
        return SkillResult(
            outcome, error=f"skill `{call.skill}` gave no answer within {call.timeout:g}s"
        )
    # Whatever records this reply records it without a credential the destination echoed.
    return scrub(result, secrets_for(call))


LookupVerdict = Literal["found", "not_found", "inconclusive"]


def read_lookup(result: SkillResult) -> LookupVerdict:
    """found (a record), not_found (HTTP 404/410, or no record), or inconclusive."""
    status = result.detail.get("status")
    if result.ok:
        return "found" if result.output not in (None, "", {}) else "not_found"
    if result.outcome == "failed" and status in (404, 410):
        return "not_found"
    return "inconclusive"


def confirmed(result: SkillResult) -> bool:
    """The destination confirmed the effect: success, or a 2xx whose reply failed the type."""
    status = result.detail.get("status")
    return result.ok or (isinstance(status, int) and 200 <= status < 300)


#: a confirmed reply's output narrowed to the skill's output fields, and any problem left
Fit = tuple[object, str | None]


def output_of(spec: Skill, output: object) -> Fit:
    """The confirmed reply narrowed to the skill's output fields, and any problem left.

    Destinations answer with more than a skill declares (the whole order, not just its id);
    the recorded result keeps the declared fields so the workflow reads what it typed.
    """
    declared = spec.output
    if declared is None:
        return output, None
    if isinstance(declared, ty.ObjectType) and isinstance(output, Mapping):
        names = {f.name for f in declared.fields}
        output = {k: v for k, v in output.items() if k in names}
    problems = ty.conforms(output, declared)
    return output, ("; ".join(problems) if problems else None)


def target_for(workflow: CompiledWorkflow, proposal: Proposal) -> Target:
    """The dispatch target of ``proposal`` with the skill version the run pinned."""
    document = workflow.dependency(f"skill.{proposal.skill}")
    return Target(
        skill=proposal.skill,
        spec=skill_spec(document),
        document=proposal.document,
        proposal_hash=proposal.hash,
        key=proposal.action_key,
        run_id=proposal.run_id,
        proposal=proposal.name,
    )
