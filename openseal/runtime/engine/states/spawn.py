"""``spawn``: start child runs of deployed workflows and wait for them in
``waiting_for_dependency``.

The children start, each pinned to the version of its workflow active now, in the turn's
fenced transaction, together with their dependency group (:mod:`openseal.runtime.store`'s
``store.dependencies``); the run then waits, holding no lease, until the group's deadline at
most. The store settles the group when a child's end decides the join (``done``: enough
completed; ``failed``: that can no longer happen) and wakes the run; at the deadline the run
expires an open group itself. The state leaves by the group's outcome (``done``, ``failed``,
``expired``) with every child's run, status and outputs; without a transition for a failure
or an expiry, an operator must decide. Children the join no longer waits for are canceled
then, unless the state lets them ``detach``.

A child that cannot start (its workflow is not deployed, its inputs do not fit the active
version, or it would be deeper than the run tree may grow: see
:mod:`~openseal.runtime.engine.run_depth`) starts none of them: the group is ``failed`` at
once, with the reason.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

import jsonschema

from openseal.contract import ChildSettings, DependencyWait, SpawnSettings
from openseal.runtime.compiled import evaluate_json
from openseal.runtime.engine import run_depth
from openseal.runtime.engine.cascade import cancel_unless_ended
from openseal.runtime.engine.states.base import Advance, Attention, Outcome, StepContext, Suspend
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.store import (
    Connection,
    DependencyGroup,
    FencedTx,
    NewChild,
    Run,
    Store,
)

WAIT_KIND: Final = "dependency"


def execute(ctx: StepContext) -> Outcome:
    waiting = ctx.run.waiting
    if waiting is not None and waiting["kind"] == WAIT_KIND and waiting["state"] == ctx.state.name:
        return _joined(ctx, waiting["group_id"])
    config = ctx.state.settings(SpawnSettings)
    children = config["child"]
    inputs = {
        label: {k: evaluate_json(v, ctx.scope) for k, v in sorted(child["input"].items())}
        for label, child in sorted(children.items())
    }
    join = config["join"]
    needed = {"all": len(children), "any": 1}.get(join) or int(config["quorum"] or 0)
    expires_in = config["expires_in"]
    deadline = ctx.now() + timedelta(seconds=float(expires_in)) if expires_in else None

    def start(tx: FencedTx) -> None:
        conn = tx.conn
        too_deep = run_depth.refusal(ctx.store, conn, tx.run(), ctx.workflow.document)
        pinned, reason = ([], too_deep) if too_deep else _pin(ctx.store, conn, children, inputs)
        group_id = ctx.store.dependencies.open_in(
            conn, tx.run(), state=ctx.state.name, visit=ctx.visit, join=join, needed=needed,
            detach=config["detach"], deadline=deadline, reason=reason,
        )  # fmt: skip
        if reason is None:
            _start_children(ctx.store, conn, tx.run(), group_id, pinned)
        group = ctx.store.dependencies.get_in(conn, group_id)
        tx.append_event(
            "dependency.started",
            {"dependency_group_id": group.id, "join": join, "needed": needed,
             "children": {m.label: m.run_id for m in group.members}, "reason": reason},
        )  # fmt: skip
        waiting: DependencyWait = {"kind": WAIT_KIND, "state": ctx.state.name, "group_id": group.id}
        _wait(tx, waiting, wake_at=tx.now if reason is not None else deadline)

    return Suspend(start, f"waiting for {needed} of {len(children)} children ({join})")


def _start_children(
    store: Store, conn: Connection, parent: Run, group_id: str, children: list[NewChild]
) -> None:
    """Start an objective's run for each child of the group, in the parent's fenced
    transaction (``conn``), each recorded as a member as it starts."""
    for child in children:
        run = store.objectives.start_child_run(
            conn, parent, child.digest, child.inputs, actor=f"run:{parent.id}",
            payload={"dependency_group_id": group_id, "child": child.label,
                     "workflow": child.workflow},
        )  # fmt: skip
        store.dependencies.add_member_in(conn, group_id, run.id, child)


def _pin(
    store: Store,
    conn: Connection,
    children: dict[str, ChildSettings],
    inputs: dict[str, dict[str, Any]],
) -> tuple[list[NewChild], str | None]:
    """Each child with the version of its workflow active now; or why one cannot start."""
    pinned = []
    for label, child in sorted(children.items()):
        name = child["workflow"]
        version = store.definitions.active_version_in(conn, name)
        if version is None or version.kind != "workflow":
            return [], f"child {label}: no workflow {name!r} is deployed"
        try:
            jsonschema.validate(inputs[label], version.document.get("inputs") or {})
        except jsonschema.ValidationError as exc:
            return [], f"child {label}: the inputs do not fit workflow {name}: {exc.message}"
        pinned.append(NewChild(label, name, version.digest, inputs[label]))
    return pinned, None


def _joined(ctx: StepContext, group_id: str) -> Outcome:
    group = ctx.store.dependencies.get(group_id)
    if group.status == "open" and group.deadline is not None and ctx.now() >= group.deadline:
        ctx.store.dependencies.expire(group_id, ctx.now())
        group = ctx.store.dependencies.get(group_id)
    if group.status == "open":

        def wait_again(tx: FencedTx) -> None:
            # Settled after this turn read it (the run was not waiting then, so nothing woke
            # it): look again at once instead of waiting for a wake-up that will not come.
            settled = ctx.store.dependencies.status_in(tx.row_conn, group_id) != "open"
            waiting: DependencyWait = {"kind": WAIT_KIND, "state": ctx.state.name,
                                       "group_id": group_id}  # fmt: skip
            _wait(tx, waiting, wake_at=tx.now if settled else group.deadline)

        return Suspend(wait_again, f"waiting for children ({group.join})")
    if not group.detach and _cancel_leftovers(ctx, group):
        group = ctx.store.dependencies.get(group_id)
    output = group.summary()
    if group.status == "done":
        return Advance("done", output)
    if group.status in ("failed", "expired") and ctx.workflow.outgoing(
        ctx.state.name, group.status
    ):
        return Advance(group.status, output)
    return Attention(f"dependency group {group.id} {group.status}: {group.reason or output}")


def _cancel_leftovers(ctx: StepContext, group: DependencyGroup) -> bool:
    """Cancel the children the join no longer waits for (each in its own transaction: a
    child is always locked before its parent); whether there were any."""
    actor = f"run:{group.parent_run_id}"
    leftovers = [m for m in group.members if RunStatus(m.status) not in TERMINAL_RUN_STATUSES]
    for member in leftovers:
        reason = f"dependency group {group.id} {group.status}"
        cancel_unless_ended(ctx.store, member.run_id, actor, reason)
    return bool(leftovers)


def _wait(tx: FencedTx, waiting: DependencyWait, *, wake_at: Any) -> None:
    tx.update_run(
        status=RunStatus.WAITING_FOR_DEPENDENCY,
        waiting=waiting,
        wake_at=wake_at,
        event="wait.dependency",
    )
