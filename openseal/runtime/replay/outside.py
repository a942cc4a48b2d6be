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

from openseal.contract import (
    ActionSettings,
    ApprovalSettings,
    DelegateSettings,
    SpawnSettings,
    WaitSettings,
)
from openseal.runtime.actions import admission, proposals
from openseal.runtime.actions.proposals import Draft
from openseal.runtime.compiled import evaluate_json, same_request
from openseal.runtime.engine.states import delegate as delegation
from openseal.runtime.engine.states import proposal as proposal_state
from openseal.runtime.engine.states.action import leave
from openseal.runtime.engine.states.approval import LEAVE_BY
from openseal.runtime.engine.states.base import Advance, Attention, Outcome, StepContext
from openseal.runtime.engine.states.turn import schema_problems
from openseal.runtime.replay.drive import NeedsInput, ReplayContext, Spend, Waiting
from openseal.runtime.replay.history import Mark, content_hash
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, ActionStatus, ApprovalStatus, RunStatus
from openseal.runtime.statuses import AgentRequestStatus as AgentStatus
from openseal.runtime.store import (
    DependencyGroup,
    approval_summary,
    caller_wakes,
    join_outcome,
)


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
    _spent(replay, drafted, name, content, recorded)
    if recorded.status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED):
        return leave(recorded)
    raise Waiting(ctx.state.name, f"action {recorded.id} is {recorded.status}")


def _spent(ctx: ReplayContext, drafted: Draft, name: str, content: str, recorded: Any) -> None:
    """Note an admitted action's spend, at the time the recorded action was admitted."""
    assert ctx.replayed is not None
    spend = drafted.document.get("spend")
    if not spend or recorded.admitted_at is None:
        return
    ctx.replayed.spends.append(
        Spend(ctx.state.name, name, content, float(spend["amount"]),
              str(spend.get("currency") or ""), recorded.admitted_at)
    )  # fmt: skip


def _admission(ctx: ReplayContext, drafted: Draft, content: str) -> str | None:
    """Why the version replayed would not admit ``drafted``: its binding, constraints, an
    approval it requires, the run's own spend budget, or a budget it shares with other runs
    (counted again over the runs replayed, :attr:`Replayed.refusals`)."""
    assert ctx.history is not None and ctx.replayed is not None
    refused = admission.binding_refusal(ctx.workflow, drafted)
    if refused is not None:
        return refused
    if admission.approval_required(ctx.workflow, drafted):
        decided = [a for a in ctx.history.approvals_of(content) if a.status == "approved"]
        if not decided:
            return f"proposal {drafted.name} (payload {content[:12]}) has no approval"
    return _run_budget(ctx, drafted) or ctx.replayed.refusals.get(content)


def _run_budget(ctx: ReplayContext, drafted: Draft) -> str | None:
    """Why the run's own spend budget (the workflow's, per run) would refuse ``drafted``."""
    assert ctx.replayed is not None
    spend = drafted.document.get("spend")
    if not spend:
        return None
    for budget in admission.spend_budgets(ctx.workflow, ctx.run.id):
        if budget.scope != f"run:{ctx.run.id}":
            continue
        reached = sum(s.amount for s in ctx.replayed.spends) + float(spend["amount"])
        if reached > budget.limit + 1e-9:
            return exceeded(budget, reached, str(spend.get("currency") or ""))
    return None


def exceeded(budget: admission.Budget, reached: float, currency: str) -> str:
    """The refusal of a spend that would take ``budget`` to ``reached``, as admission says it."""
    unit = f" {budget.currency or currency or ''}".rstrip()
    limit = f"{budget.limit:.2f}{unit}"
    return f"spend budget exceeded: {budget.scope} would reach {reached:.2f} of {limit}"


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


def delegate(ctx: StepContext) -> Outcome:
    """The request this visit would make, answered as the recorded request of the same visit
    was (completed, declined, failed, expired), when it asks the same callee the same."""
    replay = _replay(ctx)
    assert replay.history is not None
    config = ctx.state.settings(DelegateSettings)
    callee = config["to"]
    asked = delegation.request_of(ctx, config)
    made = replay.history.requests.get(ctx.state.name, ())
    if len(made) < ctx.visit:
        raise NeedsInput(ctx.state.name, f"an answer from {callee} to: {asked['goal']}")
    recorded = made[ctx.visit - 1]
    changed = same_request(recorded.request, asked)
    if recorded.callee != callee:
        changed.insert(0, "callee")
    if changed:
        raise NeedsInput(
            ctx.state.name,
            f"an answer from {callee} to another request (its {', '.join(changed)} "
            f"differs from request {recorded.id})",
        )
    if recorded.status in (AgentStatus.COMPLETED, AgentStatus.COMPLETION_REVIEWED) and (
        caller_wakes(recorded)
    ):
        problems = schema_problems(recorded.response, ctx.state.output_schema)
        if not problems:
            return Advance("done", recorded.response)
        reason = f"the completion does not match the output type: {problems[0]}"
        if ctx.workflow.outgoing(ctx.state.name, "failed"):
            return Advance("failed", {"error": reason})
        return Attention(f"agent request {recorded.id}: {reason}")
    if recorded.status in delegation.LEAVES:
        return delegation.leave_by(ctx, recorded)
    raise Waiting(ctx.state.name, f"agent request {recorded.id} is {recorded.status}")


def spawn(ctx: StepContext) -> Outcome:
    """The children this visit would start, joined as the recorded group of the same visit
    was, when they are the same children with the same inputs."""
    replay = _replay(ctx)
    assert replay.history is not None
    config = ctx.state.settings(SpawnSettings)
    children = config["child"]
    group = replay.history.groups.get((ctx.state.name, ctx.visit))
    if group is None:
        labels = ", ".join(sorted(children))
        raise NeedsInput(ctx.state.name, f"the outcome of child runs {labels}")
    members = {m.label: m for m in group.members}
    for label, child in sorted(children.items()):
        inputs = {k: evaluate_json(v, ctx.scope) for k, v in sorted(child["input"].items())}
        member = members.get(label)
        if member is None or member.workflow != child["workflow"]:
            raise NeedsInput(
                ctx.state.name, f"the outcome of child {label} ({child['workflow']}), not started"
            )
        if replay.history.child_inputs.get(member.run_id) != inputs:
            raise NeedsInput(
                ctx.state.name,
                f"the outcome of child {label} with other inputs (run {member.run_id} had "
                f"{replay.history.child_inputs.get(member.run_id)})",
            )
    if set(members) - set(children):
        dropped = ", ".join(sorted(set(members) - set(children)))
        raise NeedsInput(ctx.state.name, f"how the children join without {dropped}")
    _children_replayed(replay, group)
    status = _join(ctx, config, group)
    if status is None:
        raise Waiting(ctx.state.name, f"dependency group {group.id} is {group.status}")
    output = group.summary()
    if status == "done":
        return Advance("done", output)
    if status in ("failed", "expired") and ctx.workflow.outgoing(ctx.state.name, status):
        return Advance(status, output)
    return Attention(f"dependency group {group.id} {status}: {group.reason or output}")


def _children_replayed(ctx: ReplayContext, group: DependencyGroup) -> None:
    """When the change replayed changes a child's workflow, the child run is re-driven through
    it too: a child that would not go as recorded leaves the join unknown."""
    assert ctx.replayed is not None
    if ctx.replayed.children is None:
        return
    for member in group.members:
        verdict = ctx.replayed.children(member.run_id, member.workflow)
        if verdict is not None and verdict.verdict != "same":
            raise NeedsInput(
                ctx.state.name,
                f"how child {member.label} would end under the proposed {member.workflow}: "
                f"run {member.run_id} {verdict.line()}",
            )


def _join(ctx: StepContext, config: SpawnSettings, group: DependencyGroup) -> str | None:
    """How the group ends under this version's join: as recorded when the join is the same;
    otherwise counted again from how each child ended (None: still open). A child the
    recorded join canceled has no ending to count: replay asks for it."""
    needed = {"all": len(config["child"]), "any": 1}.get(config["join"]) or int(
        config["quorum"] or 0
    )
    if (config["join"], needed) == (group.join, group.needed) or group.reason is not None:
        return None if group.status == "open" else group.status
    left = f"dependency group {group.id}"
    statuses: list[str | None] = []
    for member in group.members:
        if member.status == RunStatus.CANCELED and group.status != "canceled":
            statuses.append(None)  # canceled by the recorded join: its ending is unknown
        elif RunStatus(member.status) in TERMINAL_RUN_STATUSES:
            statuses.append(member.status)
        else:
            statuses.append(None)
    ended = join_outcome(needed, statuses)
    if ended is None and group.status != "open":
        unknown = [m.label for m, s in zip(group.members, statuses, strict=True) if s is None]
        raise NeedsInput(
            ctx.state.name,
            f"how child {', '.join(unknown)} would end (canceled by the recorded join of {left})",
        )
    return ended


#: the state kinds whose step replay takes from the record, by kind
STEPS: dict[str, Callable[[StepContext], Outcome]] = {
    "proposal": proposal,
    "approval": approval,
    "action": action,
    "wait": wait,
    "delegate": delegate,
    "spawn": spawn,
}
