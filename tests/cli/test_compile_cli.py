"""`openseal compile` and `openseal diff`: bundles, determinism, exit codes, git revisions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openseal.cli.diff import render_report
from openseal.compiler.output.diff import diff_documents
from tests.compiler.compile_support import project_text, write_project

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a new process, as a user (or CI) runs it."""
    return subprocess.run(
        [sys.executable, "-c", "from openseal.cli.main import run; run()", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", **env},
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- compile


def test_compile_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "definitions", tmp_path / "definitions")
    for out in ("one", "two"):
        result = run("compile", "definitions/", "--out", out, cwd=tmp_path, OPENSEAL_CACHE="off")
        assert result.returncode == 0, result.stderr
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert one == two
    assert "workflow/procure_laptops.json" in one and "manifest.json" in one
    manifest = json.loads(one["manifest.json"])
    assert "definitions/procurement/hcl/workflow.hcl" in manifest["sources"]
    assert "workflow.release_note" in manifest["definitions"]


def test_compile_prints_digests_and_summary(tmp_path: Path) -> None:
    write_project(tmp_path / "p", {"all.hcl": project_text()})
    result = run("compile", str(tmp_path / "p"), "--out", str(tmp_path / "build"))
    assert result.returncode == 0, result.stderr
    assert "workflow.answer" in result.stdout and "sha256:" in result.stdout
    assert "compiled 5 definitions; bundle written to" in result.stdout
    assert (tmp_path / "build" / "workflow" / "answer.json").is_file()


def test_check_writes_nothing_and_json_output_lists_digests(tmp_path: Path) -> None:
    write_project(tmp_path / "p", {"all.hcl": project_text()})
    out = tmp_path / "build"
    result = run("compile", str(tmp_path / "p"), "--check", "--out", str(out), "--output", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["bundle"] is None
    assert report["definitions"]["workflow.answer"]["digest"].startswith("sha256:")
    assert report["summary"]["errors"] == 0
    assert not out.exists()


def test_errors_exit_1_with_located_diagnostics_and_no_bundle(tmp_path: Path) -> None:
    broken = project_text().replace("next = state.check", "next = state.chek")
    write_project(tmp_path / "p", {"all.hcl": broken})
    out = tmp_path / "build"
    result = run("compile", str(tmp_path / "p"), "--out", str(out))
    assert result.returncode == 1
    assert "all.hcl:" in result.stderr and "error[" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
    as_json = run("compile", str(tmp_path / "p"), "--output", "json", "--check")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["ok"] is False


def test_github_format_keeps_stdout_for_annotations(tmp_path: Path) -> None:
    broken = project_text().replace("next = state.check", "next = state.chek")
    write_project(tmp_path / "p", {"all.hcl": broken})
    result = run("compile", str(tmp_path / "p"), "--check", "--format", "github")
    assert result.returncode == 1
    assert result.stdout.startswith("::error file=")


def test_usage_error_exits_2() -> None:
    assert run("compile").returncode == 2
    assert run("compile", "x.hcl", "--format", "xml").returncode == 2


# --------------------------------------------------------------------------- diff


def _compile(src: Path, out: Path, text: str) -> Path:
    write_project(src, {"all.hcl": text})
    result = run("compile", str(src), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_diff_two_bundles_human_and_json(tmp_path: Path) -> None:
    old = _compile(tmp_path / "a", tmp_path / "old", project_text())
    widened = project_text().replace('max_risk     = "read"', 'max_risk     = "external"')
    new = _compile(tmp_path / "b", tmp_path / "new", widened)
    human = run("diff", str(old), str(new))
    assert human.returncode == 0, human.stderr
    assert "agent.helper  (changed)" in human.stdout
    assert "! agent risk ceiling raised: read → external  [risk-widening]" in human.stdout
    assert "risk widening: yes" in human.stdout
    assert "\x1b[" not in human.stdout  # NO_COLOR and not a TTY
    report = json.loads(run("diff", str(old), str(new), "--output", "json").stdout)
    assert report["risk_widening"] is True
    widening = [c for c in report["changes"] if c["widening"]]
    assert widening[0]["kind"] == "risk_raised" and widening[0]["path"] == "spec.max_risk"
    assert run("diff", str(old), str(new), "--exit-code").returncode == 1
    assert run("diff", str(new), str(old), "--exit-code").returncode == 0
    forced = run("diff", str(old), str(new), NO_COLOR="", FORCE_COLOR="1")
    assert "\x1b[" in forced.stdout  # colour chosen on purpose survives click's stripping


def test_diff_accepts_definition_directories(tmp_path: Path) -> None:
    a = write_project(tmp_path / "a", {"all.hcl": project_text()})
    b = write_project(tmp_path / "b", {"all.hcl": project_text()})
    result = run("diff", str(a), str(b), "--exit-code")
    assert result.returncode == 0, result.stderr
    assert "no semantic changes" in result.stdout
    assert "risk widening: no" in result.stdout


def test_diff_refuses_a_tampered_bundle(tmp_path: Path) -> None:
    old = _compile(tmp_path / "a", tmp_path / "old", project_text())
    path = old / "agent" / "helper.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"read"', '"destructive"'))
    result = run("diff", str(old), str(old))
    assert result.returncode == 1
    assert "does not match its digest" in result.stderr and "Traceback" not in result.stderr


def test_diff_unknown_side_is_a_usage_error(tmp_path: Path) -> None:
    result = run("diff", "no-such-thing", "neither", cwd=tmp_path)
    assert result.returncode == 2
    assert "neither a bundle directory" in result.stderr


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_diff_between_git_revisions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_project(repo / "defs", {"all.hcl": project_text()})
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "first")
    grant = 'binding "extra" {\n  skill = skill.lookup\n  to    = agent.helper\n}\n'
    (repo / "defs" / "more.hcl").write_text(grant, encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "second")
    result = run("diff", "main~1", "main", "--path", "defs", "--output", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["definitions"]["added"] == ["binding.extra"]
    assert report["risk_widening"] is True
    missing = run("diff", "main~1", "main", cwd=repo)
    assert missing.returncode == 2 and "--path" in missing.stderr


def test_render_report_colours_only_when_asked(tmp_path: Path) -> None:
    old = {"skill.s": {"kind": "skill", "name": "s", "spec": {"effect": "read"}}}
    new = {"skill.s": {"kind": "skill", "name": "s", "spec": {"effect": "write"}}}
    report = diff_documents(old, new)
    assert "\x1b[" in render_report(report, color=True)
    plain = render_report(report, color=False)
    assert "\x1b[" not in plain and "effect raised: read → write" in plain


def test_a_number_json_cannot_carry_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "model:\n  m: {provider: scripted, model: x, parameters: {seed: 99999999999999999999}}\n"
    )
    result = run("compile", str(path), "--check")
    assert result.returncode == 1
    assert f"{path}:2:56: error[OS104]: the integer 99999999999999999999 is beyond" in result.stderr
    assert "Traceback" not in result.stderr
