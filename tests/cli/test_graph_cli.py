"""`openseal graph`: formats, choosing a graph, diagnostics instead of drawings, SVG needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.compiler.output import draw
from tests.golden_helper import GOLDEN

ROOT = Path(__file__).resolve().parents[2]
PROCUREMENT = str(ROOT / "definitions/procurement/hcl")
BROKEN = str(ROOT / "tests/golden/graph/inputs/os402_unreachable_states.hcl")


def exit_code(argv: list[str]) -> int:
    """``main``'s return value, or the status of ``sys.exit`` (how commands report diagnostics)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def golden(name: str) -> str:
    return (GOLDEN / "draw" / name).read_text(encoding="utf-8")


def test_mermaid_on_stdout_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", PROCUREMENT]) == 0
    assert capsys.readouterr().out == golden("procure_laptops.mmd")


def test_dot_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "procure.dot"
    assert exit_code(["graph", PROCUREMENT, "--format", "dot", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == golden("procure_laptops.dot")
    assert capsys.readouterr().out == ""


def test_several_graphs_need_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", str(ROOT / "definitions")]) == 2
    err = capsys.readouterr().err
    assert "workflow.procure_laptops, workflow.release_note" in err and "--name" in err


@pytest.mark.parametrize("name", ["procure_laptops", "workflow.procure_laptops"])
def test_name_picks_one_and_twins_agree(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # definitions/ holds the HCL and the YAML twin of each example: the same drawing.
    assert exit_code(["graph", str(ROOT / "definitions"), "--name", name]) == 0
    assert capsys.readouterr().out == golden("procure_laptops.mmd")


def test_unknown_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", PROCUREMENT, "--name", "procure_laptop"]) == 2
    err = capsys.readouterr().err
    assert "no workflow or runbook named `procure_laptop`" in err
    assert "workflow.procure_laptops" in err


def test_runbooks_draw_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runbook.yaml"
    path.write_text(
        "runbook:\n  tally:\n    step:\n"
        "      fetch: {uses: http, args: {url: https://example.org}}\n"
        "      count: {uses: aggregate, args: {items: '${step.fetch.output.items}'}}\n"
    )
    assert exit_code(["graph", str(path), "--name", "runbook.tally"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("---\ntitle: runbook tally\n---\nflowchart TD\n")
    assert "    s_fetch --> s_count\n" in out


def test_errors_are_reported_not_drawn(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", BROKEN]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error[OS402]: state `lonely` cannot be reached" in captured.err
    assert "Traceback" not in captured.err


def test_errors_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", BROKEN, "--output", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert "OS402" in [d["code"] for d in document["diagnostics"]]


def test_drawing_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", PROCUREMENT, "--format", "dot", "--output", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "kind": "workflow",
        "name": "procure_laptops",
        "format": "dot",
        "drawing": golden("procure_laptops.dot"),
    }


def test_svg_without_graphviz_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(draw.shutil, "which", lambda _name: None)
    assert exit_code(["graph", PROCUREMENT, "--format", "svg"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: SVG output needs the `dot` program from Graphviz")
    assert "apt-get install graphviz" in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.usefixtures("graphviz_dot")
def test_svg_with_graphviz(tmp_path: Path) -> None:
    out = tmp_path / "procure.svg"
    assert exit_code(["graph", PROCUREMENT, "--format", "svg", "--out", str(out)]) == 0
    assert b"<svg" in out.read_bytes()


def test_unwritable_out_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing-dir" / "procure.mmd"
    assert exit_code(["graph", PROCUREMENT, "--out", str(out)]) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot write {out}")


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code(["graph", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--format [mermaid|dot|svg]" in out and "--name" in out and "--out" in out
