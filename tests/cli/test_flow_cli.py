"""``openseal agents show`` on both backends: what an agent is doing now includes the calls its
runs have in flight to capped skills, each holding a slot of ``skill:<name>`` — also a call
sent before its skill declared the cap, which counts as if it held one."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime.store import Store
from tests.cli.support import Cli
from tests.runtime import capacity_skills
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)
from tests.runtime.engine.test_skill_capacity import dies, start
from tests.runtime.engine_support import DEFS, compile_files, register
from tests.runtime.support import Backend


@pytest.fixture
def capped(cli: Cli, backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:  # noqa: F811
    assert cli("db", "upgrade")[0] == 0
    monkeypatch.setenv(capacity_skills.LOG_ENV, str(tmp_path / "destination.jsonl"))
    opened = backend.open()
    register(opened, compile_files(DEFS / "skill_capacity.hcl"))
    return opened


def test_agents_show_lists_the_calls_its_runs_hold_slots_for(cli: Cli, capped: Store) -> None:
    run = start(capped, "orders", 1)
    dies(capped, run)  # its action marked dispatched: the call holds a slot of skill:submit
    with capped.read() as conn:
        action = capped.actions.of_run(conn, run.id)[0]

    code, out, err = cli("agents", "show", "clerk")
    assert code == 0, err
    lines = out.splitlines()
    assert "  calls in flight     1" in lines
    shown = next(line for line in lines if line.startswith("    skill:submit"))
    assert shown.startswith(f"    skill:submit  action {action.id}  of run {run.id}  since ")

    shown_json = cli.json("agents", "show", "clerk")
    assert isinstance(shown_json, dict)
    calls = shown_json["agent"]["calls"]
    assert [(c["key"], c["action_id"], c["run_id"]) for c in calls] == [
        ("skill:submit", action.id, run.id)
    ]
    assert calls[0]["taken_at"]
