"""`openseal run`: the boundary statement, outputs, exit codes, typed inputs, --plan goldens."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.runbooks.executor import BOUNDARY
from tests.golden_helper import assert_golden
from tests.skills.server import Server, serve

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "definitions" / "runbooks" / "vendor_quotes"
HCL = EXAMPLE / "hcl" / "runbook.hcl"
YAML = EXAMPLE / "yaml" / "runbook.yaml"
QUOTES = EXAMPLE / "quotes.json"
TRIAGE = ROOT / "tests" / "runbooks" / "inputs" / "order_triage.hcl"


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as running:
        yield running


def invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(["run", *args])
    except SystemExit as exc:  # commands end with sys.exit(1) on failure, as `validate` does
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_help_states_the_boundary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, "--help")
    assert code == 0
    flat = re.sub(r"\s+", " ", out)
    assert "no persistence, approvals, event stream or recovery" in flat
    assert "use a workflow for those" in flat


@pytest.mark.parametrize("path", [HCL, YAML], ids=["hcl", "yaml"])
def test_runs_the_example_and_prints_its_outputs(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    code, out, err = invoke(
        capsys, str(path), "--input-file", str(QUOTES), "--input", "budget=9000"
    )
    assert code == 0, err
    assert json.loads(out) == {
        "choice": {"vendor": "Contoso", "total": 8490},
        "market_average": 849,
    }
    assert err.splitlines()[0] == BOUNDARY
    assert "runbook vendor_quotes succeeded" in err


def test_output_json_is_the_whole_result(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(
        capsys,
        str(HCL),
        "--input-file",
        str(QUOTES),
        "-i",
        "budget=9000",
        "-i",
        "quantity=2",
        "--output",
        "json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["status"] == "succeeded"
    assert data["outputs"]["choice"] == {"vendor": "Contoso", "total": 1698}
    assert list(data["steps"]) == ["approved", "average", "found", "ranked", "choice"]
    assert all(s["status"] == "succeeded" for s in data["steps"].values())
    assert all(s["duration"] is not None for s in data["steps"].values())


def test_a_skipped_output_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(capsys, str(HCL), "--input-file", str(QUOTES), "-i", "budget=10")
    assert code == 1
    assert out == ""
    assert "choice: skipped — `when` is false" in err
    assert "output `choice` does not fit" in err


FILE = ["--input-file", str(QUOTES)]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([*FILE, "-i", "budget=lots"], 1, "error: input `budget` expects a number, got `lots`"),
        ([*FILE, "-i", "budgt=1"], 2, "error: this runbook has no input `budgt`"),
        ([*FILE, "-i", "budget"], 2, "error: `budget` is not NAME=VALUE"),
        (["-i", "quotes=[1]", "-i", "budget=1"], 1, "error: input `quotes` does not fit"),
        (["-i", "quotes={", "-i", "budget=1"], 1, "error: input `quotes` expects list("),
        (FILE, 1, "error: input `budget` is required (number)"),
        (["--concurrency", "0"], 2, "Invalid value for '--concurrency'"),
    ],
)
def test_input_errors_name_the_input_and_choose_the_exit_code(
    capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    got, out, err = invoke(capsys, str(HCL), *args)
    assert got == code, err
    assert message in err
    assert out == ""


def test_input_file_must_hold_an_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "inputs.json"
    bad.write_text("[1, 2]")
    code, _, err = invoke(capsys, str(HCL), "--input-file", str(bad))
    assert code == 2
    assert "must hold a JSON object" in err


def test_an_approval_requiring_skill_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "openseal.project").write_text("")
    path = tmp_path / "notify.hcl"
    path.write_text("""skill "send_email" {
  description = "Send an email."
  effect      = "external"
  adapter "http" {
    url = "http://127.0.0.1:9/send"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  approval {
    required = true
  }
}

runbook "notify" {
  step "send" {
    skill = skill.send_email
  }
}
""")
    code, out, err = invoke(capsys, str(path))
    assert code == 1
    assert out == ""
    assert f"{path}:17:13: error[OS508]" in err


def test_a_failing_step_exits_1_with_the_step_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: Server
) -> None:
    path = tmp_path / "fetch.hcl"
    path.write_text(f'''runbook "fetch" {{
  step "get" {{
    uses = "http"
    args = {{ url = "{server.url}/status/500" }}
  }}
}}
''')
    code, _out, err = invoke(capsys, str(path))
    assert code == 1
    assert "get: failed — GET " in err and "answered 500 (expected 2xx)" in err


def test_several_runbooks_without_a_name_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "two.hcl"
    path.write_text(
        'runbook "a" {\n  step "s" { uses = "trigger" }\n}\n'
        'runbook "b" {\n  step "s" { uses = "trigger" }\n}\n'
    )
    code, _, err = invoke(capsys, str(path))
    assert code == 2
    assert "choose one with --name" in err
    code, _out, _ = invoke(capsys, str(path), "--name", "b", "-i", "x=1")
    assert code == 2  # the definition form checks input names: `b` declares none


def test_node_form_runs_from_the_cli(capsys: pytest.CaptureFixture[str], server: Server) -> None:
    code, out, err = invoke(
        capsys, str(TRIAGE), "-i", f"base_url={server.url}", "-i", "order_id=urgent-3"
    )
    assert code == 0, err
    outputs = json.loads(out)
    assert outputs["page"]["status"] == 200
    assert outputs["item_total"] == 6


@pytest.mark.parametrize(
    ("path", "golden"),
    [
        (HCL, "vendor_quotes.plan.txt"),
        (YAML, "vendor_quotes.plan.txt"),
        (TRIAGE, "order_triage.plan.txt"),
    ],
    ids=["hcl", "yaml", "nodes"],
)
def test_plan_golden(capsys: pytest.CaptureFixture[str], path: Path, golden: str) -> None:
    code, out, _ = invoke(capsys, str(path), "--plan")
    assert code == 0
    assert_golden(out, f"runbooks/{golden}")


def test_plan_json_golden(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(capsys, str(TRIAGE), "--plan", "--output", "json", "--concurrency", "3")
    assert code == 0
    assert json.loads(out)["concurrency"] == 3
    assert_golden(out, "runbooks/order_triage.plan.json")


def test_a_stuck_skill_does_not_hold_the_process_after_its_timeout(tmp_path: Path) -> None:
    """The blocked thread is abandoned: the process reports the timeout and exits."""
    (tmp_path / "openseal.project").write_text("")
    path = tmp_path / "stuck.hcl"
    path.write_text("""skill "sleepy" {
  description = "Blocks."
  effect      = "read"
  input       = object({ seconds = number })
  adapter "python" {
    entry_point = "tests.skills.sample_skills:sleepy"
  }
}

runbook "stuck" {
  step "wait" {
    skill   = skill.sleepy
    args    = { seconds = 60 }
    timeout = "200ms"
  }
}
""")
    env = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", "from openseal.cli.main import run; run()", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=50,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr
    assert "wait: failed — timed out after 0.2s" in done.stderr


def test_progress_view_shows_each_step_and_its_status() -> None:
    from rich.console import Console

    from openseal.cli.run import _ProgressView
    from openseal.compiler.runbook_pipeline import prepare
    from openseal.runbooks.executor import StepOutcome

    plan = prepare(HCL).plan
    assert plan is not None
    view = _ProgressView(plan)
    view.step_changed(StepOutcome("approved", "succeeded", started=0.0, finished=0.25))
    view.step_changed(StepOutcome("choice", "skipped", error="`when` is false"))
    console = Console(record=True, width=120, color_system=None)
    console.print(view.table())
    text = console.export_text()
    assert re.search(r"approved\s+filter\s+succeeded\s+0\.25s", text)
    assert re.search(r"choice\s+transform\s+skipped\s+`when` is false", text)
    assert re.search(r"ranked\s+sort\s+pending", text)
