"""An agent request: the caller's ask, and the callee side, a child run doing the work.

The callee is resolved through the caller's pinned versions: ``agent.x``, a team role (its
agent), or a team (its policy picks the member: the first role by name). If the agent's
definition names a ``workflow``, the child runs the version of it active now, with the
request's inputs; otherwise the child is one turn of the agent with the goal, a workflow
document made here from the request (stored by its digest like any version, so the child is
pinned like any run). The child's output completes the request (settled when the child ends,
:mod:`openseal.runtime.engine.endings`); the caller checks it against the expected output
type. A budget the caller carved for the request is the child's limit: what the caller still
holds for it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import jsonschema

from openseal.canonical import canonical_json
from openseal.contract import EndSettings, TurnSettings
from openseal.errors import RuntimeFailure, UsageError
from openseal.runtime.clock import new_id
from openseal.runtime.compiled import CompiledWorkflow
from openseal.runtime.engine import run_depth
from openseal.runtime.engine.catalog import WorkflowCatalog
from openseal.runtime.statuses import AgentRequestStatus
from openseal.runtime.store import (
    AgentRequest,
    Connection,
    FencedTx,
    Restart,
    Run,
    Store,
    carve,
    carved_child_budget,
    carved_limit,
)

#: the state of a single-turn child run (scripted responses may be keyed by it)
TURN_STATE = "work"


class DelegationFailed(RuntimeFailure):
    code = "delegation_failed"


class CompletionMismatch(UsageError):
    code = "completion_mismatch"


def callee_agent(workflow: CompiledWorkflow, callee: str) -> tuple[str, str]:
    """``(agent key, agent digest)`` of the member that works on a request to ``callee``."""
    parts = callee.split(".")
    holder: dict[str, Any] = workflow.document
    if parts[0] == "team":
        team = workflow.dependency(f"team.{parts[1]}")
        roles = (team.get("spec") or {}).get("role") or {}
        role = parts[3] if len(parts) == 4 else next(iter(sorted(roles)), None)
        agent_key = (roles.get(role) or {}).get("agent") if role else None
        if not agent_key:
            raise DelegationFailed(f"team {parts[1]} has no member to work on the request")
        holder = team
    elif parts[0] == "agent" and len(parts) == 2:
        agent_key = callee
    else:
        raise DelegationFailed(f"{callee!r} does not name an agent, a team role or a team")
    digest = (holder.get("dependencies") or {}).get(agent_key)
    if digest is None:
        raise DelegationFailed(f"workflow {workflow.name} does not pin a version of {agent_key}")
    return str(agent_key), str(digest)


def request_work(
    store: Store,
    tx: FencedTx,
    callee: str,
    request: Any,
    *,
    deadline: datetime | None = None,
    budget: Mapping[str, int] | None = None,
) -> AgentRequest:
    """Ask agent or team ``callee`` for work, in the caller's fenced transaction ``tx``: the
    request is stored and ``agent_request.requested`` appended to the caller run; the caller
    then waits (``FencedTx.update_run``). ``budget`` is carved out of the caller's and held for
    the request (the caller checked that it fits)."""
    now = tx.now
    created = AgentRequest(
        id=new_id(),
        caller_run_id=tx.claim.run_id,
        callee=callee,
        child_run_id=None,
        status=AgentRequestStatus.REQUESTED,
        request=request,
        response=None,
        clarification=None,
        review=None,
        created_at=now,
        updated_at=now,
        deadline=deadline,
    )
    store.agent_requests.insert(tx.conn, created)
    payload: dict[str, Any] = {"agent_request_id": created.id, "callee": callee}
    if not budget:
        tx.update_run(event="agent_request.requested", payload=payload)
        return created
    payload["budget"] = dict(budget)
    used = carve(tx.run().budget_used, created.id, budget)
    tx.update_run(budget_used=used, event="agent_request.requested", payload=payload)
    return created


def start_child(
    store: Store,
    conn: Connection,
    caller: Run,
    request: AgentRequest,
    *,
    workflow: CompiledWorkflow | None = None,
) -> str:
    """Start the child run working on ``request`` in the caller's transaction (which holds
    the caller's row lock) and record it on the request, now ``accepted``; the child's id."""
    if workflow is None:
        workflow = WorkflowCatalog(store).workflow(caller.workflow_digest)
    too_deep = run_depth.refusal(store, conn, caller, workflow.document)
    if too_deep is not None:
        raise DelegationFailed(too_deep)
    agent_key, agent_digest = callee_agent(workflow, request.callee)
    meta: dict[str, Any] = request.request if isinstance(request.request, dict) else {}
    agent = workflow.dependency(agent_key, _holder(workflow, request.callee))
    target = (agent.get("spec") or {}).get("workflow")
    if target:
        version = store.definitions.active_version_in(conn, str(target))
        if version is None or version.kind != "workflow":
            raise DelegationFailed(f"no workflow {target!r} is deployed for {agent_key}")
        inputs = dict(meta.get("input") or {})
        try:
            jsonschema.validate(inputs, version.document.get("inputs") or {})
        except jsonschema.ValidationError as exc:
            raise DelegationFailed(
                f"the request's inputs do not fit workflow {target}: {exc.message}"
            ) from None
        digest, mode = version.digest, "workflow"
    else:
        document = single_turn_document(agent_key, agent_digest, meta)
        digest = hashlib.sha256(canonical_json(document).encode()).hexdigest()
        store.definitions.put_in(conn, digest, "workflow", str(document["name"]), document)
        inputs, mode = {"goal": child_goal(request)}, "turn"
    budget_used = carved_child_budget(caller.budget_used, request.id)
    payload: dict[str, Any] = {
        "agent_request_id": request.id,
        "callee": request.callee,
        "mode": mode,
    }
    if budget_used:
        payload["budget"] = carved_limit(budget_used)
    child = store.objectives.start_child_run(
        conn, caller, digest, inputs, actor=agent_key.replace(".", ":", 1), payload=payload,
        budget_used=budget_used,
    )  # fmt: skip
    store.agent_requests.note_child(conn, request.id, child.id, mode, store.now())
    return child.id


def _holder(workflow: CompiledWorkflow, callee: str) -> dict[str, Any]:
    parts = callee.split(".")
    if parts[0] == "team":
        return workflow.dependency(f"team.{parts[1]}")
    return workflow.document


def child_goal(request: AgentRequest) -> str:
    """The goal a single-turn child works on: the request's goal, its inputs, every answered
    clarification and every reviewer's reason for sending a completion back."""
    meta: dict[str, Any] = request.request if isinstance(request.request, dict) else {}
    lines = [str(meta.get("goal") or "")]
    if meta.get("input"):
        lines.append("Input: " + json.dumps(meta["input"], sort_keys=True))
    for round_ in request.clarification or []:
        if round_.get("answer") is not None:
            lines.append(f"Q: {round_['question']}\nA: {json.dumps(round_['answer'])}")
    for review in request.review or []:
        if review.get("verdict") == "send_back":
            lines.append(f"Sent back by the reviewer: {review.get('reason')}")
    return "\n\n".join(lines)


def single_turn_document(agent_key: str, agent_digest: str, meta: dict[str, Any]) -> dict[str, Any]:
    """A one-state workflow document: ``agent_key`` works on ``input.goal`` once and its
    structured output is the run's ``result``."""
    output_type = meta.get("output_type")
    output_schema = meta.get("output_schema")
    goal = {"node": "ref", "root": "input", "path": ["goal"]}
    result = {"node": "ref", "root": "state", "path": [TURN_STATE, "output"]}
    turn: TurnSettings = {"agent": agent_key, "goal": goal, "skills": [], "output": output_type,
            "max_model_calls": 8}  # fmt: skip
    end: EndSettings = {"outcome": "completed"}
    return {
        "apiVersion": "openseal/v1",
        "kind": "workflow",
        "name": f"{agent_key.removeprefix('agent.')}.delegated",
        "dependencies": {agent_key: agent_digest},
        "budgets": {"on_exhausted": "needs_attention", "workflow": {}},
        "inputs": {
            "type": "object",
            "properties": {"goal": {"type": "string"}},
            "required": ["goal"],
        },
        "outputs": {"type": "object"},
        "skills": {},
        "spec": {"owner": agent_key, "output": {"result": {"value": result}}},
        "graph": {
            "initial": TURN_STATE,
            "states": {
                TURN_STATE: {"kind": "turn", "config": turn, "output_schema": output_schema},
                "done": {"kind": "end", "config": end},
            },
            "transitions": [
                {"from": TURN_STATE, "to": "done", "event": "done", "guard": None, "order": 0}
            ],
            "ends": {"done": "completed"},
        },
    }


def restarter(store: Store) -> Restart:
    """The store's ``Restart`` callback: a new child run for a reopened request."""

    def restart(conn: Connection, request: AgentRequest) -> None:
        meta = request.request if isinstance(request.request, dict) else {}
        if not meta.get("child"):
            return  # a person or an outside system works on it: nothing to start
        caller = store.runs.load(conn, request.caller_run_id)
        start_child(store, conn, caller, request)

    return restart
