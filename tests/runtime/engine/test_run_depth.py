"""A run tree grows no deeper than its limit: a workflow's ``max_depth``, and whatever the
definitions say, ``MAX_RUN_DEPTH``. A child that would be deeper is not started; the reason is
recorded on the run that asked for it, which leaves by its ``failed`` transition. Spawned
children and delegated requests alike. On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.contract import MAX_RUN_DEPTH
from openseal.runtime import service
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables.records import Run
from tests.runtime.engine_support import compile_files, engine, register, scripted

pytestmark = pytest.mark.slow_on_postgresql

MODEL = """model "m" {
  provider = "scripted"
  model    = "scripted-small"
}
"""

AGENT = """agent "a" {{
  model        = model.m
  instructions = "Work."{workflow}
}}
"""

#: a workflow whose ``deeper`` state starts a run (``{work}``) until it may not, then ends at
#: the bottom
DEEPER = """workflow "{name}" {{
  owner = agent.a
  start = state.deeper{bound}
  state "deeper" {{
    {work}
    on "done" {{ next = state.done }}
    on "failed" {{ next = state.bottom }}
  }}
  state "done" {{
    end = "completed"
  }}
  state "bottom" {{
    end = "completed"
  }}
}}
"""


def spawns(name: str, target: str, bound: str = "") -> str:
    work = f'spawn {{\n      child "next" {{\n        workflow = "{target}"\n      }}\n    }}'
    return DEEPER.format(name=name, bound=bound, work=work)


def delegates(name: str, bound: str) -> str:
    work = 'delegate {\n      to   = agent.a\n      goal = "Go deeper."\n    }'
    return DEEPER.format(name=name, bound=bound, work=work)


def _deploy(store: Store, tmp_path: Path, *projects: str) -> None:
    for number, text in enumerate(projects):
        path = tmp_path / f"project{number}" / "all.hcl"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        register(store, compile_files(path))


def _run_all(store: Store, tmp_path: Path, workflow: str) -> Run:
    started = service.create_objective(store, service.StartObjective(workflow, {}), service.CLI)
    provider, _ = scripted(tmp_path, {})
    engine(store, provider).run_until_idle()
    return store.runs.get(started.run.id)


def _chain(store: Store, root: Run) -> list[Run]:
    """The runs from ``root`` down, each the only child of the one before."""
    chain = [root]
    while True:
        children = store.dependencies.children_of(chain[-1].id)
        if not children:
            return chain
        assert len(children) == 1
        chain.append(children[0])


def _bottom_reason(store: Store, run: Run) -> str:
    events = store.runs.events(run.id, 0, 1000)
    reasons = [
        str(e.payload.get("reason"))
        for e in events
        if e.type in ("dependency.started", "agent_request.failed") and e.payload.get("reason")
    ]
    assert len(reasons) == 1, [(e.type, e.payload) for e in events]
    return reasons[0]


def test_max_depth_bounds_a_workflow_that_spawns_itself(store: Store, tmp_path: Path) -> None:
    text = MODEL + AGENT.format(workflow="") + spawns("nest", "nest", "\n  max_depth = 3")
    _deploy(store, tmp_path, text)
    root = _run_all(store, tmp_path, "nest")
    chain = _chain(store, root)
    assert len(chain) == 3
    assert [r.status for r in chain] == [RunStatus.COMPLETED] * 3
    assert [r.current_state for r in chain] == ["done", "done", "bottom"]
    assert _bottom_reason(store, chain[-1]) == (
        "a child run would be 4 runs deep, and workflow nest allows 3 (its max_depth)"
    )


def test_a_delegation_back_to_the_same_workflow_is_bounded(store: Store, tmp_path: Path) -> None:
    text = (
        MODEL
        + AGENT.format(workflow='\n  workflow     = "ask"')
        + delegates("ask", "\n  max_depth = 2")
    )
    _deploy(store, tmp_path, text)
    root = _run_all(store, tmp_path, "ask")
    chain = _chain(store, root)
    assert len(chain) == 2
    assert [r.status for r in chain] == [RunStatus.COMPLETED] * 2
    assert [r.current_state for r in chain] == ["done", "bottom"]
    assert _bottom_reason(store, chain[-1]) == (
        "a child run would be 3 runs deep, and workflow ask allows 2 (its max_depth)"
    )


def test_a_cycle_across_projects_stops_at_the_run_tree_limit(store: Store, tmp_path: Path) -> None:
    # Each project compiles clean (neither sees the cycle); the runtime still stops it.
    one = MODEL + AGENT.format(workflow="") + spawns("w1", "w2")
    two = MODEL + AGENT.format(workflow="") + spawns("w2", "w1")
    _deploy(store, tmp_path, one, two)
    root = _run_all(store, tmp_path, "w1")
    chain = _chain(store, root)
    assert len(chain) == MAX_RUN_DEPTH
    assert all(r.status == RunStatus.COMPLETED for r in chain)
    assert chain[-1].current_state == "bottom"
    assert _bottom_reason(store, chain[-1]) == (
        f"a child run would be {MAX_RUN_DEPTH + 1} runs deep, and no run tree may be deeper "
        f"than {MAX_RUN_DEPTH} runs"
    )
