"""``openseal replay --check`` and ``openseal proposals replay`` as a user runs them: clean
over recorded runs, and failing (exit 1) when a history is read differently — a tampered
recorded activity, or state logic that reinterprets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.cli.main import main
from openseal.quickstart import Decision, Options, run_quickstart
from openseal.runtime.store import open_store
from openseal.runtime.store.tables import schema
from openseal.simulator.procurement import ProcurementSimulator
from tests.runtime.action_support import simulator_fixture  # noqa: F401  (fixture)
from tests.runtime.replay_support import CONSTRAINT, changed_example, file_change, record_runs
from tests.runtime.support import Backend

REPO = Path(__file__).resolve().parents[2]
DEFINITIONS = REPO / "definitions" / "procurement" / "hcl"
LAUNCH = "import sys; from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"
#: the same command, with a ``decision`` state that leaves by an event no workflow declares
REINTERPRETED = (
    "import sys; from openseal.runtime.engine import states; "
    "from openseal.runtime.engine.states.base import Advance; "
    "states.register('decision', lambda ctx: Advance('reinterpreted')); "
    "from openseal.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def openseal(home: Path, *args: str, launch: str = LAUNCH) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    command = [sys.executable, "-c", launch, *args, "--home", str(home)]
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@dataclass
class Home:
    path: Path
    #: the recorded runs' ids, by name (see ``replay_support.ORDERS``)
    runs: dict[str, str]


@pytest.fixture
def home(simulator: ProcurementSimulator, tmp_path: Path) -> Home:
    """A store under a home with the recorded procurement runs."""
    backend = Backend("sqlite", None, tmp_path / "home", None)
    recorded = record_runs(backend.open(), simulator, tmp_path)
    backend.close_all()
    return Home(tmp_path / "home", {name: run.id for name, run in recorded.runs.items()})


@pytest.mark.slow
def test_check_is_clean_then_fails_on_a_tampered_activity(home: Home) -> None:
    clean = openseal(home.path, "replay", "--check")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.startswith("5 run(s) replayed against pinned: 5 same, 0 diverges")

    # the research answer of the 10-laptop run now says 2000 EUR each: over its budget
    store = open_store(home=home.path)
    activities = schema.activities
    research = sa.and_(
        activities.c.run_id == home.runs["large"], activities.c.activity_id == "research:1:model:1"
    )
    with store.write() as conn:
        result = dict(conn.execute(sa.select(activities.c.result).where(research)).scalar_one())
        result["output"] = {**result["output"], "unit_price": 2000.0}
        conn.execute(sa.update(activities).where(research).values(result=result))
    store.close()

    failed = openseal(home.path, "replay", "--check")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "error: 1 run(s) do not replay the same" in failed.stderr
    assert f"{home.runs['large']}  completed" in failed.stdout
    assert (
        "diverges at check_budget: the decision's expressions choose over_budget" in failed.stdout
    )


@pytest.mark.slow
def test_check_fails_when_state_logic_reinterprets_the_history(home: Home) -> None:
    done = openseal(home.path, "replay", "--check", "--output", "json", launch=REINTERPRETED)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    # every run that passed its decision state now stops there
    assert report["summary"]["diverges"] == 5
    assert {r["state"] for r in report["runs"]} == {"check_budget"}


def test_proposals_replay_prints_the_summary_first(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(home=home.path)
    folder = changed_example(tmp_path, "tighter", {"team.hcl": (CONSTRAINT, "args.total <= 10000")})
    proposal = file_change(store, folder)
    store.close()
    assert main(["proposals", "replay", proposal.id[:8], "--home", str(home.path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"5 run(s) replayed against {proposal.id}: 4 same, 1 diverges, 0 needs input"
    assert "diverges at submit: 1 run(s)" in lines
    assert (
        main(
            [
                "proposals",
                "replay",
                proposal.id,
                "--runs",
                "2",
                "--since",
                "1d",
                "--home",
                str(home),
            ]
        )
        == 2
    )


@pytest.mark.slow
def test_the_quickstart_runs_replay_the_same(tmp_path: Path) -> None:
    home = tmp_path / "home"
    answers = [
        Decision("approve"),
        Decision("reject", "too expensive"),
        Decision("request_changes", "check the vendors again"),
        Decision("approve"),
    ]
    for _ in range(3):
        outcome = run_quickstart(Options(home, DEFINITIONS), decide=lambda _o: answers.pop(0))
        assert outcome.ok
    done = openseal(home, "replay", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("3 run(s) replayed against pinned: 3 same, 0 diverges")
