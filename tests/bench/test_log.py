"""``python -m bench log``: results become entries appended to the log, each exactly once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.__main__ import main
from bench.harness import (
    Report,
    Target,
    compare,
    machine,
    summarize,
    unavailable,
    write_report,
)
from bench.log import LOG, append_results, marker

MACHINE = {"cpu_count": 2, "python": "3.11.7", "sqlite": "3.40.1", "commit": "abc1234"}


def result(
    directory: Path, name: str, recorded: str, median: float, *, quick: bool = False
) -> dict[str, Any]:
    report = Report(name, parameters={"quick": quick})
    base = report.add(compare("hcl2.loads", "ms", summarize([2.0, 2.0, 2.0])))
    report.add(
        compare("compile", "ms", summarize([median - 1, median, median + 1]), base, Target(1.0))
    )
    report.add(unavailable("peer", "not installed", "runs/s"))
    path = write_report(report, MACHINE, directory)
    data: dict[str, Any] = json.loads(path.read_text())
    data["recorded"] = recorded  # two runs a second apart would otherwise share a time
    path.write_text(json.dumps(data))
    return data


def log_page(tmp_path: Path) -> Path:
    page = tmp_path / "log.md"
    page.write_text("# Log\n\nHistory kept by hand.\n\n## Results\n")
    return page


def test_each_result_is_appended_once_with_its_commit_machine_and_figures(tmp_path: Path) -> None:
    results, page = tmp_path / "results", log_page(tmp_path)
    first = result(results, "compiler", "2026-12-07T03:00:00+00:00", 4.0)
    assert append_results(results, page) == [marker(first)]
    text = page.read_text()
    assert text.startswith("# Log\n\nHistory kept by hand.\n\n## Results\n")
    assert "### compiler, 2026-12-07T03:00:00+00:00" in text
    assert "Commit abc1234; 2 CPUs" in text and "SQLite 3.40.1" in text
    assert "| compile | 4.00 ms | 3.00–5.00 | 3 | 2.00× | hcl2.loads | ≤ 1× | **missed** |" in text
    assert "| peer | — |" in text and "- peer: not available: not installed" in text

    assert append_results(results, page) == []  # the same results again: nothing added
    assert page.read_text() == text


def test_a_smoke_run_is_left_out(tmp_path: Path) -> None:
    results, page = tmp_path / "results", log_page(tmp_path)
    result(results, "compiler", "2026-12-07T03:00:00+00:00", 4.0, quick=True)
    before = page.read_text()
    assert append_results(results, page) == []
    assert page.read_text() == before


def test_a_newer_result_goes_after_what_the_log_holds(tmp_path: Path) -> None:
    results, page = tmp_path / "results", log_page(tmp_path)
    result(results, "cache", "2026-12-07T03:00:00+00:00", 1.0)
    append_results(results, page)
    before = page.read_text()
    newer = result(results, "cache", "2026-12-07T04:00:00+00:00", 3.0)  # overwrites cache.json
    result(results, "compiler", "2026-12-07T03:30:00+00:00", 2.0)
    added = append_results(results, page)
    assert added[-1] == marker(newer) and len(added) == 2
    text = page.read_text()
    assert text.startswith(before)
    assert text.index("compiler, 2026-12-07T03:30") < text.index("cache, 2026-12-07T04:00")


def test_the_command_appends_to_the_named_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, page = tmp_path / "results", log_page(tmp_path)
    result(results, "startup", "2026-12-07T03:00:00+00:00", 1.0)
    assert main(["log", "--results", str(results), "--to", str(page)]) == 0
    assert "1 new result(s) appended to log.md" in capsys.readouterr().out
    assert "### startup, 2026-12-07T03:00:00+00:00" in page.read_text()
    assert main(["log", "--results", str(results), "--to", str(tmp_path / "none.md")]) == 2


def test_the_committed_log_ends_with_its_results_section() -> None:
    text = LOG.read_text(encoding="utf-8")
    results = text.index("\n## Results\n")
    assert "\n## " not in text[results + 1 :], "entries are appended: Results must stay last"


def test_a_report_records_the_commit_it_measured() -> None:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=LOG.parent, capture_output=True, text=True
    ).stdout.strip()
    commit = machine()["commit"]
    assert head and commit in (head, f"{head}+changes")


def test_the_log_is_the_same_whatever_order_the_files_are_found_in(tmp_path: Path) -> None:
    """Generation is deterministic: the same results give the same page, byte for byte,
    whichever order the files were written (and so listed) in."""
    recorded = [
        ("compiler", "2026-12-07T03:00:00+00:00"),
        ("durable", "2026-12-07T03:00:00+00:00"),
        ("cache", "2026-12-07T02:00:00+00:00"),
    ]
    pages = []
    for name, order in (("a", recorded), ("b", recorded[::-1])):
        (tmp_path / name).mkdir()
        results, page = tmp_path / name / "results", log_page(tmp_path / name)
        for benchmark, when in order:
            result(results, benchmark, when, 3.0)
        append_results(results, page)
        pages.append(page.read_text())
    assert pages[0] == pages[1]
    # oldest first; two recorded at the same moment by benchmark name
    assert pages[0].index("### cache") < pages[0].index("### compiler")
    assert pages[0].index("### compiler") < pages[0].index("### durable")


def test_the_log_lists_every_results_file_but_smoke_runs(tmp_path: Path) -> None:
    results, page = tmp_path / "results", log_page(tmp_path)
    names = ["archive", "cache", "compiler", "durable", "latency", "workers"]
    written = [
        result(results, name, f"2026-12-07T0{i}:00:00+00:00", 2.0) for i, name in enumerate(names)
    ]
    result(results, "startup", "2026-12-07T09:00:00+00:00", 2.0, quick=True)

    append_results(results, page)

    text = page.read_text()
    files = sorted(p.stem for p in results.glob("*.json"))
    assert files == sorted([*names, "startup"])
    for data in written:
        assert text.count(marker(data)) == 1
    assert "### startup" not in text
