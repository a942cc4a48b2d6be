"""How deep a run tree may grow: a child run (a spawned child, a delegated request's run)
starts only within the limit.

A run started by no other run is 1 deep, its children 2, and so on. A child deeper than
:data:`~openseal.contract.MAX_RUN_DEPTH` is refused whatever the definitions say, which stops
workflows that start each other across projects (a cycle no single compile sees); a workflow's
``max_depth`` lowers the limit for the children its runs start (the compiler requires it on
one workflow of every cycle it sees).
"""

from __future__ import annotations

from typing import Any

from openseal.contract import MAX_RUN_DEPTH
from openseal.runtime.store import Connection, Run, Store


def child_depth(store: Store, conn: Connection, parent: Run) -> int:
    """How deep a child of ``parent`` would be, counted up to one past the limit."""
    depth, run = 2, parent
    while run.parent_run_id is not None and depth <= MAX_RUN_DEPTH:
        run = store.runs.load(conn, run.parent_run_id)
        depth += 1
    return depth


def refusal(store: Store, conn: Connection, parent: Run, workflow: dict[str, Any]) -> str | None:
    """Why ``parent`` (a run of the compiled ``workflow``) may not start a child, if the child
    would be deeper than the run tree may grow; ``None`` when it may."""
    declared = (workflow.get("spec") or {}).get("max_depth")
    limit = min(int(declared), MAX_RUN_DEPTH) if declared else MAX_RUN_DEPTH
    depth = child_depth(store, conn, parent)
    if depth <= limit:
        return None
    name = workflow.get("name")
    why = (
        f"workflow {name} allows {limit} (its max_depth)"
        if declared and limit == int(declared)
        else f"no run tree may be deeper than {MAX_RUN_DEPTH} runs"
    )
    return f"a child run would be {depth} runs deep, and {why}"
