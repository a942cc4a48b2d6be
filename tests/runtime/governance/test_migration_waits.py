"""Migrating runs that wait for more than an approval or an event, on SQLite and PostgreSQL:
a run waiting for its agent request moves when the new state would ask the same, and stays
when it would ask something else; a run waiting for capacity moves when its visit has not
begun (it then begins the new state, under that state's limits), and stays when it has (a
delivered event would be lost)."""

from __future__ import annotations

from pathlib import Path

from openseal.runtime import service
from openseal.runtime.engine.capacity import wake_free
from openseal.runtime.governance.migration import Selection
from openseal.runtime.governance.moves import migrate
from openseal.runtime.statuses import AgentRequestStatus, RunStatus
from openseal.runtime.store import Run, Store
from tests.runtime.engine_support import compile_files, engine, register, scripted
from tests.runtime.migration_support import approve_and_activate, compiled, migrated_events

V1 = """
model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

agent "porter" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

agent "runner" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

agent "helper" {
  model        = model.scripted
  instructions = "Help."
}

workflow "ask" {
  owner = agent.clerk
  start = state.ask
  state "ask" {
    delegate {
      to     = agent.helper
      goal   = "Count the laptops"
      output = object({ count = number })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "ask_other" {
  owner = agent.clerk
  start = state.ask
  state "ask" {
    delegate {
      to     = agent.helper
      goal   = "Count the laptops"
      output = object({ count = number })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "handoff" {
  owner = agent.clerk
  start = state.prepare
  input "id" {
    type = string
  }
  state "prepare" {
    transform {
      output = input.id
    }
    next = state.carry
  }
  state "carry" {
    turn {
      agent  = agent.porter
      goal   = "carry"
      output = object({ done = bool })
    }
    next = state.hold
  }
  state "hold" {
    wait {
      event       = "handoff.done"
      correlation = { id = input.id }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""


def _migrate_block(version: str, *states: str) -> str:
    mapped = "".join(f'    state "{s}" {{\n      to = state.{s}\n    }}\n' for s in states)
    return f'  migrate {{\n    version = "{version.removeprefix("sha256:")[:12]}"\n{mapped}  }}\n'


def _version_two(tmp: Path, digests: dict[str, str]) -> Path:
    """Version 2: ``ask`` asks the same (a description added), ``ask_other`` asks for desks,
    ``handoff`` has the runner carry; each migrates its earlier version's waiting runs."""
    text = V1
    for name, states in (("ask", ("ask",)), ("ask_other", ("ask",)),
                         ("handoff", ("carry", "hold"))):  # fmt: skip
        head = f'workflow "{name}" {{\n  owner = agent.clerk\n'
        text = text.replace(head, head + _migrate_block(digests[name], *states), 1)
    ask = 'workflow "ask" {\n'
    text = text.replace(ask, ask + '  description = "asks the same"\n', 1)
    other = text.index('workflow "ask_other"')
    text = text[:other] + text[other:].replace("Count the laptops", "Count the desks", 1)
    text = text.replace("agent  = agent.porter", "agent  = agent.runner")
    folder = tmp / "v2"
    folder.mkdir()
    (folder / "waits.hcl").write_text(text, encoding="utf-8")
    return folder


def _start(store: Store, workflow: str, inputs: dict[str, object]) -> Run:
    return service.create_objective(
        store, service.StartObjective(workflow, inputs), service.CLI
    ).run


def test_runs_waiting_for_an_agent_or_for_capacity_move_where_it_is_safe(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "v1").mkdir()
    v1 = tmp_path / "v1" / "waits.hcl"
    v1.write_text(V1, encoding="utf-8")
    register(store, compile_files(v1))
    provider, _ = scripted(tmp_path, {"carry": [{"output": {"done": True}}] * 3})
    worker = engine(store, provider)

    # waiting for its event: it entered `hold` before the owner's agent was paused
    held = _start(store, "handoff", {"id": "h-1"})
    worker.run_until_idle()
    assert store.runs.get(held.id).status == RunStatus.WAITING_FOR_EVENT
    # waiting for its agent request (the helper's child run has no script: it stops)
    same, other = _start(store, "ask", {}), _start(store, "ask_other", {})
    # waiting for capacity before its visit of `carry` began: the porter is paused
    store.capacity.set("agent:porter", by="user:test", paused=True)
    fresh = _start(store, "handoff", {"id": "h-2"})
    worker.run_until_idle()
    # the event for `held` arrives while its owner's agent is paused: woken, it waits for a
    # slot in the middle of its visit of `hold`, the event consumed
    store.capacity.set("agent:clerk", by="user:test", paused=True)
    store.inbound_events.deliver("handoff.done", {"id": "h-1"}, {"ok": True})
    worker.run_until_idle()
    statuses = {name: store.runs.get(r.id).status for name, r in
                (("held", held), ("same", same), ("other", other), ("fresh", fresh))}  # fmt: skip
    assert statuses == {
        "held": RunStatus.WAITING_FOR_CAPACITY,
        "same": RunStatus.WAITING_FOR_AGENT,
        "other": RunStatus.WAITING_FOR_AGENT,
        "fresh": RunStatus.WAITING_FOR_CAPACITY,
    }
    v1_digests = {name: store.runs.get(r.id).workflow_digest for name, r in
                  (("ask", same), ("ask_other", other), ("handoff", fresh))}  # fmt: skip
    documents = compiled(_version_two(tmp_path, v1_digests))

    proposal = approve_and_activate(store, documents)

    (same_request,) = store.agent_requests.newest(caller_run_id=same.id)
    (other_request,) = store.agent_requests.newest(caller_run_id=other.id)
    for workflow, run in (("ask", same), ("handoff", fresh)):
        new = documents[f"workflow.{workflow}"].digest.removeprefix("sha256:")
        assert store.runs.get(run.id).workflow_digest == new
        assert len(migrated_events(store, run.id)) == 1
    asking = store.runs.get(same.id)
    assert asking.status == RunStatus.WAITING_FOR_AGENT
    assert asking.waiting == {
        "kind": "agent", "agent_request_id": same_request.id, "callee": "agent.helper",
    }  # fmt: skip
    begins = store.runs.get(fresh.id)
    assert (begins.status, begins.waiting) == (RunStatus.QUEUED, None)
    assert store.runs.get(other.id).workflow_digest == v1_digests["ask_other"]
    assert store.runs.get(held.id).workflow_digest == v1_digests["handoff"]
    assert migrated_events(store, other.id) == migrated_events(store, held.id) == []
    # why they stayed: in the dry run of what is left, as in the activation's record
    left = migrate(store, proposal.id, "user:carol", dry_run=True, selection=Selection())
    reasons = {m.run_id: (m.outcome, m.reason) for m in left.moves}
    assert reasons == {
        other.id: ("stays", f"ask would ask agent.helper another request than "
                            f"{other_request.id} (its goal differs)"),
        held.id: ("stays", "its visit of hold has begun"),
    }  # fmt: skip

    # the moved runs go on: the fresh one carries on version 2 with the runner (its porter
    # still paused), then waits at `hold` for its owner's slot like the run that stayed
    worker.run_until_idle()
    carried = store.runs.get(fresh.id)
    assert (carried.status, carried.current_state) == (RunStatus.WAITING_FOR_CAPACITY, "hold")
    assert carried.context["states"]["carry"] == {"done": True}
    store.capacity.set("agent:clerk", by="user:test", paused=False)
    assert wake_free(store, ["agent:clerk"]) == 2  # the run that stayed, and this one
    completed = service.step_agent_request(
        store, service.AgentRequestStep(same_request.id, "complete", value={"count": 3}),
        service.Caller("user:ann", local=True),
    )  # fmt: skip
    assert completed.status == AgentRequestStatus.COMPLETED
    worker.run_until_idle()
    done = store.runs.get(same.id)
    assert (done.status, done.context["states"]["ask"]) == (RunStatus.COMPLETED, {"count": 3})
    # the run that stayed goes on on its own version
    assert store.runs.get(held.id).workflow_digest == v1_digests["handoff"]
    assert store.runs.get(fresh.id).status == RunStatus.WAITING_FOR_EVENT
