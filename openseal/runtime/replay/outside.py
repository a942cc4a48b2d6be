"""The steps whose outcome comes from outside the run, taken from its record in replay.

A ``proposal`` state drafts with the engine's own drafting (nothing is stored); an
``approval`` state asks for the current draft and leaves by the recorded decision on a
proposal with the same content; an ``action`` state is admitted as far as the pinned version
decides it (binding, constraints, approval) and leaves by the recorded outcome; a ``wait``
leaves as the record says it did. What was never recorded stops the re-drive
(:class:`~openseal.runtime.replay.drive.NeedsInput`); what is still pending stops it as
waiting (:class:`~openseal.runtime.replay.drive.Waiting`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openseal.contract import ActionSettings, ApprovalSettings, WaitSettings
from openseal.runtime.actions import admission, proposals
from openseal.runtime.actions.proposals import Draft
from openseal.runtime.engine.states import proposal as proposal_state
from openseal.runtime.engine.states.action import leave
from openseal.runtime.engine.states.approval import LEAVE_BY
from openseal.runtime.engine.states.base import Advance, Attention, Outcome, StepContext
from openseal.runtime.replay.drive import NeedsInput, ReplayContext, Waiting
from openseal.runtime.replay.history import Mark, content_hash
from openseal.runtime.statuses import ActionStatus, ApprovalStatus
from openseal.runtime.store import approval_summary


def _replay(ctx: StepContext) -> ReplayContext:
    assert isinstance(ctx, ReplayContext)
    assert ctx.history is not None and ctx.replayed is not None
    return ctx


def _states(ctx: StepContext) -> dict[str, Any]:
    """The states' outputs the re-drive has so far (the run context's ``states``)."""
    state = ctx.scope.get("state")
    assert isinstance(state, dict)
    return {name: entry["output"] for name, entry in state.items()}


def _remember(ctx: ReplayContext, drafted: Draft) -> str:
    """Note ``drafted`` (by the hash its state's output carries); its content hash."""
    assert ctx.replayed is not None
    ctx.replayed.drafts[drafted.hash] = drafted
    content = content_hash(drafted.document)
    ctx.marks.append(Mark.of(ctx.state.name, "drafted", name=drafted.name, payload=content))
    return content


def _output(ctx: ReplayContext, drafted: Draft) -> dict[str, Any]:
    """What the state's output holds for ``drafted`` (as ``proposals.output_of`` would have
    it, with the recorded proposal's id when one had the same content)."""
    assert ctx.history is not None
    content = content_hash(drafted.document)
    same = [p for p in ctx.history.proposals.values() if content_hash(p.document) == content]
    return {
        "id": same[-1].id if same else None,
        "hash": drafted.hash,
        "skill": drafted.skill,
        "actor": drafted.actor,
        "args": drafted.document.get("args"),
        "spend": drafted.document.get("spend"),
    }


def proposal(ctx: StepContext) -> Outcome:
    replay = _replay(ctx)
    output: dict[str, Any] = {}
    for name, drafted in proposal_state.drafts(ctx):
        _remember(replay, drafted)
        output[name] = _output(replay, drafted)
    return Advance("done", output)


def _draft_of(ctx: ReplayContext, reference: str) -> tuple[str, Draft]:
    assert ctx.replayed is not None
    name, digest = proposals.current_hash(ctx.workflow, _states(ctx), reference)
    drafted = ctx.replayed.drafts.get(digest)
    if drafted is None:  # pragma: no cover - every hash in a state's output was drafted here
        raise NeedsInput(ctx.state.name, f"proposal {name} ({digest[:12]}) was not drafted")
    return name, drafted


def approval(ctx: StepContext) -> Outcome:
    replay = _replay(ctx)
    assert replay.history is not None
    config = ctx.state.settings(ApprovalSettings)
    name, drafted = _draft_of(replay, config["proposal"])
    content = content_hash(drafted.document)
    replay.marks.append(Mark.of(ctx.state.name, "asked", name=name, payload=content))
    asked = replay.history.approvals_of(content)
    # each visit of an approval state asks once: the visit's own recorded approval
    earlier = sum(1 for m in replay.marks[:-1] if m.what == "asked" and m.get("payload") == content)
    if earlier >= len(asked):
        approvers = ", ".join(config["approvers"]) or "its approvers"
        raise NeedsInput(
            ctx.state.name, f"a decision by {approvers} on {name} (payload {content[:12]})"
        )
    found = asked[earlier]
    if found.status in LEAVE_BY:
        return Advance(LEAVE_BY[found.status], approval_summary(found))
    if found.status == ApprovalStatus.PENDING:
        raise Waiting(ctx.state.name, f"approval {found.id} is pending")
    raise Waiting(ctx.state.name, f"approval {found.id} was {found.status}")


def action(ctx: StepContext) -> Outcome:
    replay = _replay(ctx)
    assert replay.history is not None
    config = ctx.state.settings(ActionSettings)
    if config["proposal"]:
        name, drafted = _draft_of(replay, str(config["proposal"]))
    else:
        step = proposals.direct_step(config)
        name = ctx.state.name
        drafted = proposals.draft(ctx.workflow, ctx.run.id, name, name, step, ctx.scope)
        _remember(replay, drafted)
    content = content_hash(drafted.document)
    refused = _admission(replay, drafted, content)
    if refused is not None:
        replay.marks.append(Mark.of(ctx.state.name, "denied", refused, name=name, payload=content))
        return Attention(f"the action of {name} would not be admitted: {refused}")
    recorded = replay.history.action_of(content)
    if recorded is None or recorded.status in admission.ADMISSIBLE:
        raise NeedsInput(
            ctx.state.name,
            f"the dispatch of {drafted.skill} for {name} (payload {content[:12]})",
        )
    if recorded.status == ActionStatus.DENIED:
        why = recorded.error or "denied"
        replay.marks.append(Mark.of(ctx.state.name, "denied", why, name=name, payload=content))
        return Attention(f"the action of {name} was not admitted: {why}")
    replay.marks.append(Mark.of(ctx.state.name, "admitted", name=name, payload=content))
    if recorded.status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED):
        return leave(recorded)
    raise Waiting(ctx.state.name, f"action {recorded.id} is {recorded.status}")


def _admission(ctx: ReplayContext, drafted: Draft, content: str) -> str | None:
    """Why the version replayed would not admit ``drafted``, as far as the version alone
    decides it (binding, constraints, an approval it requires); the spend budgets it shares
    with other runs are left to the record."""
    assert ctx.history is not None
    refused = admission.binding_refusal(ctx.workflow, drafted)
    if refused is not None:
        return refused
    if admission.approval_required(ctx.workflow, drafted):
        decided = [a for a in ctx.history.approvals_of(content) if a.status == "approved"]
        if not decided:
            return f"proposal {drafted.name} (payload {content[:12]}) has no approval"
    return None


def wait(ctx: StepContext) -> Outcome:
    replay = _replay(ctx)
    assert replay.history is not None
    config = ctx.state.settings(WaitSettings)
    left = replay.history.leaving(ctx.state.name)
    if ctx.visit > len(left):
        raise Waiting(ctx.state.name, "the recorded run has not left this wait")
    event = left[ctx.visit - 1]
    if config["timer"] is not None:
        return Advance(event, {"waited_seconds": float(config["timer"])})
    if event == "done":
        delivered = replay.history.delivered(ctx.state.name)
        if len(delivered) < ctx.visit:
            raise NeedsInput(ctx.state.name, f"the event {config['event']}")
        return Advance("done", delivered[ctx.visit - 1])
    return Advance(event)


#: the state kinds whose step replay takes from the record, by kind
STEPS: dict[str, Callable[[StepContext], Outcome]] = {
    "proposal": proposal,
    "approval": approval,
    "action": action,
    "wait": wait,
}
