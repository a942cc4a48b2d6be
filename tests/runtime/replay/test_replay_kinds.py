"""Replay of the states whose work is elsewhere — ``parallel`` and ``for_each`` branches and
items, a ``delegate``'s request and its child run, a ``spawn``'s child runs — and of runs an
operator repaired (a retry, a supplied output, a move): re-driven from what the runs recorded,
on SQLite and PostgreSQL, with the verdicts written out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.replay import Selection, check_runs, replay_proposal
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Run, Store
from tests.runtime.engine_support import DEFS, compile_files, engine, register, scripted
from tests.runtime.replay_support import file_change, verdicts

KINDS = DEFS / "kinds.hcl"
LEFT = {"both": [{"output": {"side": "left"}}]}
HELPER = {"helper": [{"output": {"count": 10}}]}


@pytest.fixture
def kinds(store: Store) -> Store:
    register(store, compile_files(KINDS))
    return store


def _start(store: Store, workflow: str, inputs: dict[str, object]) -> Run:
    return service.create_objective(
        store, service.StartObjective(workflow, inputs), service.CLI
    ).run


def _changed(tmp: Path, name: str, *replacements: tuple[str, str]) -> Path:
    """kinds.hcl with ``replacements`` made, alone in a folder of its own."""
    folder = tmp / name
    folder.mkdir()
    text = KINDS.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    (folder / "kinds.hcl").write_text(text, encoding="utf-8")
    return folder


def _worker(store: Store, tmp: Path, script: dict[str, list[dict[str, object]]]) -> Engine:
    provider, _ = scripted(tmp, script)
    return engine(store, provider)


def _replayed(store: Store, tmp: Path, name: str, *changes: tuple[str, str]) -> dict[str, object]:
    proposal = file_change(store, _changed(tmp, name, *changes))
    return replay_proposal(store, proposal.id, Selection()).to_json()


def test_parallel_branches_and_for_each_items_replay_from_their_records(
    kinds: Store, tmp_path: Path
) -> None:
    runs = {"three": _start(kinds, "fan", {"items": [1, 2, 3]}),
            "two": _start(kinds, "fan", {"items": [4, 5]})}  # fmt: skip
    _worker(kinds, tmp_path, {"both": [{"output": {"side": "left"}}] * 2}).run_until_idle()
    assert {kinds.runs.get(r.id).status for r in runs.values()} == {RunStatus.COMPLETED}
    own = check_runs(kinds, Selection())
    assert own.counts()["same"] == 2 and own.clean, own.render()

    # fewer items allowed: the run of three leaves the for_each by failed
    fewer = _replayed(kinds, tmp_path, "fewer", ("max_items   = 3", "max_items   = 2"))
    assert verdicts(fewer, runs) == {
        "three": ("diverges", "each", "leaves by failed (recorded: done)"),
        "two": ("same", "", ""),
    }
    # another goal for the branch's model: its recorded answer does not answer it
    goal = _replayed(kinds, tmp_path, "goal", ('goal   = "left"', 'goal   = "left side"'))
    asks = "would ask for model call both:1:branch:left:model:1 (a recorded request that differs)"
    assert verdicts(goal, runs) == {name: ("needs_input", "both", asks) for name in runs}


def test_a_delegation_replays_from_its_recorded_request_and_child_run(
    kinds: Store, tmp_path: Path
) -> None:
    runs = {"answered": _start(kinds, "ask_helper", {})}
    worker = _worker(kinds, tmp_path, HELPER)
    worker.run_until_idle()
    declined = _start(kinds, "ask_helper", {})
    for _ in range(20):
        if kinds.runs.get(declined.id).status == RunStatus.WAITING_FOR_AGENT:
            break
        worker.step()
    (request,) = kinds.agent_requests.newest(caller_run_id=declined.id)
    service.step_agent_request(
        kinds, service.AgentRequestStep(request.id, "decline", reason="not mine"),
        service.Caller("user:ann", local=True),
    )  # fmt: skip
    worker.run_until_idle()
    runs["declined"] = declined
    statuses = {name: kinds.runs.get(run.id).status for name, run in runs.items()}
    assert statuses == {"answered": RunStatus.COMPLETED, "declined": RunStatus.CANCELED}
    own = check_runs(kinds, Selection())
    assert own.clean and own.counts()["unsupported"] == 0, own.render()

    # the same request, answered as recorded, by a version that leaves only a failure
    unhandled = _replayed(kinds, tmp_path, "unhandled", ('on "declined"', 'on "failed"'))
    assert verdicts(unhandled, runs) == {
        "answered": ("same", "", ""),
        "declined": (
            "diverges", "delegate",
            "attention in delegate (recorded: delegate -[declined]-> refused)",
        ),
    }  # fmt: skip
    # another goal is another request: its answer was never recorded
    other = _replayed(kinds, tmp_path, "goal", ('"Count the laptops"', '"Count the desks"'))
    asks = (
        "would ask for an answer from agent.helper to another request "
        "(its goal differs from request {})"
    )
    by_run = {
        name: kinds.agent_requests.newest(caller_run_id=run.id)[0].id for name, run in runs.items()
    }
    got = verdicts(other, runs)
    assert got["answered"] == ("needs_input", "delegate", asks.format(by_run["answered"]))
    assert got["declined"] == ("needs_input", "delegate", asks.format(by_run["declined"]))


def test_spawned_children_replay_from_their_recorded_runs(kinds: Store, tmp_path: Path) -> None:
    runs = {"quorum": _start(kinds, "gather", {"modes": ["done", "fail", "done"]}),
            "all_done": _start(kinds, "gather", {"modes": ["done", "done", "done"]})}  # fmt: skip
    _worker(kinds, tmp_path, {}).run_until_idle()
    statuses = {name: kinds.runs.get(run.id).status for name, run in runs.items()}
    assert statuses == {"quorum": RunStatus.COMPLETED, "all_done": RunStatus.COMPLETED}
    own = check_runs(kinds, Selection())
    assert own.clean and own.counts()["unsupported"] == 0, own.render()

    # every child must complete: the recorded failure of b now fails the join
    all_of = _replayed(kinds, tmp_path, "all", ('join       = "quorum"\n      quorum     = 2',
                                                'join       = "all"'))  # fmt: skip
    assert verdicts(all_of, runs) == {
        "quorum": ("diverges", "fan", "leaves by failed (recorded: done)"),
        "all_done": ("same", "", ""),
    }
    # child a with another input: a child run that was never started
    inputs = _replayed(kinds, tmp_path, "inputs", ("{ n = 1, mode", "{ n = 5, mode"))
    got = verdicts(inputs, runs)
    assert {name: v[:2] for name, v in got.items()} == {
        "quorum": ("needs_input", "fan"), "all_done": ("needs_input", "fan"),
    }  # fmt: skip
    assert got["quorum"][2].startswith("would ask for the outcome of child a with other inputs")

    # a change to the children's workflow: the parents (whose workflow it leaves alone) are
    # replayed through their own version, each child through the proposed one; a child that
    # failed would now complete, so how the quorum's join ends is not known
    lenient = _replayed(kinds, tmp_path, "lenient", ('input.mode == "fail"', 'input.mode == "x"'))
    got = verdicts(lenient, runs)
    assert got["all_done"] == ("same", "", "")
    (group,) = kinds.dependencies.of_run(runs["quorum"].id)
    failed = {m.label: m.run_id for m in group.members}["b"]
    assert got["quorum"] == (
        "needs_input", "fan",
        f"would ask for how child b would end under the proposed job: run {failed} diverges "
        "at route: the decision's expressions choose finished (recorded: broken)",
    )  # fmt: skip
    by_run = {r["run"]: r for r in lenient["runs"]}
    assert (by_run[failed]["workflow"], by_run[failed]["verdict"]) == ("job", "diverges")


def test_an_operators_retry_and_supplied_output_replay_as_recorded(
    kinds: Store, tmp_path: Path
) -> None:
    """A model call that failed (no script for it) left the runs needing attention; one was
    retried once the model answered, one was given the state's output by hand, one moved
    on to another state. Replay takes the repairs as recorded inputs: no run diverges."""
    runs = {name: _start(kinds, "fan", {"items": [1]}) for name in ("retried", "supplied", "moved")}
    (tmp_path / "none").mkdir()
    _worker(kinds, tmp_path / "none", {}).run_until_idle()
    assert {kinds.runs.get(r.id).status for r in runs.values()} == {RunStatus.NEEDS_ATTENTION}
    ann = service.Caller("user:ann", local=True)
    service.intervene(kinds, service.Intervention(runs["retried"].id, "model is back"), ann)
    value = {"left": {"side": "by hand"}, "right": "right"}
    service.intervene(
        kinds, service.Intervention(runs["supplied"].id, "answered by hand", value=value), ann
    )
    service.intervene(kinds, service.Intervention(runs["moved"].id, "skip it", state="each"), ann)
    _worker(kinds, tmp_path, LEFT).run_until_idle()
    statuses = {name: kinds.runs.get(run.id).status for name, run in runs.items()}
    assert statuses == dict.fromkeys(runs, RunStatus.COMPLETED)
    retried = kinds.runs.get(runs["retried"].id)
    assert retried.context["states"]["both"]["left"] == {"side": "left"}

    own = check_runs(kinds, Selection())
    assert own.clean and own.counts()["same"] == 3, own.render()
    # and a change elsewhere replays them the same too, the repairs applied again
    fewer = _replayed(kinds, tmp_path, "fewer", ("max_items   = 3", "max_items   = 2"))
    assert verdicts(fewer, runs) == dict.fromkeys(runs, ("same", "", ""))
