"""The benchmark harness: statistics, targets, figures, reports and the command line.

No timing assertions: only the arithmetic and the report format are checked, plus one slow
smoke run of every benchmark on tiny sizes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import BENCHMARKS
from bench.__main__ import main
from bench.harness import (
    Options,
    Report,
    Target,
    compare,
    environment,
    percentile,
    rates,
    render_plain,
    scaled,
    summarize,
    unavailable,
    write_report,
)

REPO = Path(__file__).resolve().parents[2]


def test_summarize_keeps_median_min_max_and_samples() -> None:
    stats = summarize([3.0, 1.0, 2.0, 10.0])
    assert (stats.median, stats.minimum, stats.maximum) == (2.5, 1.0, 10.0)
    assert stats.samples == (3.0, 1.0, 2.0, 10.0)
    assert stats.count == 4


def test_summarize_refuses_no_samples() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_percentile_interpolates_and_handles_one_sample() -> None:
    samples = [float(i) for i in range(1, 101)]
    assert percentile(samples, 0.5) == pytest.approx(50.5, abs=0.1)
    assert percentile(samples, 0.95) == pytest.approx(95.05, abs=0.1)
    assert percentile([7.0], 0.95) == 7.0


def test_rates_turn_seconds_per_batch_into_operations_per_second() -> None:
    stats = rates(100, summarize([0.5, 1.0, 2.0]))
    assert (stats.median, stats.minimum, stats.maximum) == (100.0, 50.0, 200.0)
    assert scaled(summarize([0.001, 0.003]), 1000).samples == pytest.approx((1.0, 3.0))


def test_compare_takes_the_ratio_of_medians() -> None:
    baseline = compare("hcl2", "ms", summarize([10.0, 20.0, 30.0]))
    ours = compare("ours", "ms", summarize([5.0, 10.0, 15.0]), baseline, Target(1.0))
    assert ours.ratio == pytest.approx(0.5)
    assert ours.baseline == "hcl2"
    assert ours.met is True


@pytest.mark.parametrize(
    ("target", "value", "ratio", "met"),
    [
        (Target(1.0), 5.0, 1.2, False),
        (Target(1.0), 5.0, 1.0, True),
        (Target(3, upper=False), 5.0, 2.9, False),
        (Target(3, upper=False), 5.0, 3.1, True),
        (Target(200, on="value"), 201.0, 0.1, False),
        (Target(200, on="value"), 199.0, 9.0, True),
        (Target(1.0), 5.0, None, None),
    ],
)
def test_targets_bound_the_value_or_the_ratio(
    target: Target, value: float, ratio: float | None, met: bool | None
) -> None:
    assert target.met(value, ratio) is met


def test_target_descriptions() -> None:
    assert Target(1.0).describe("ms") == "≤ 1×"
    assert Target(3, upper=False).describe("runs/s") == "≥ 3×"
    assert Target(200, on="value").describe("ms") == "≤ 200 ms"


def test_a_baseline_without_a_number_gives_no_ratio() -> None:
    missing = unavailable("peer", "did not install")
    ours = compare("ours", "runs/s", summarize([1.0]), missing, Target(3, upper=False))
    assert ours.ratio is None
    assert ours.met is None


def test_unavailable_figures_carry_the_reason_and_no_number() -> None:
    figure = unavailable("engine", "not built", "runs/s", Target(3, upper=False))
    assert not figure.available
    assert figure.met is None
    assert figure.note == "not available: not built"


def sample_report() -> Report:
    report = Report("demo", parameters={"n": 3})
    base = report.add(compare("baseline", "ms", summarize([2.0, 2.0, 2.0])))
    report.add(compare("ours", "ms", summarize([3.0, 4.0, 5.0]), base, Target(1.0)))
    report.add(unavailable("later", "the engine does not exist yet", "runs/s"))
    report.notes.append("a note")
    report.profiles["ours"] = "top entries"
    return report


def test_write_report_records_machine_figures_and_unavailable_reasons(tmp_path: Path) -> None:
    path = write_report(sample_report(), {"cpu_count": 2}, tmp_path / "results")
    assert path == tmp_path / "results" / "demo.json"
    data = json.loads(path.read_text())
    assert data["machine"] == {"cpu_count": 2}
    assert data["parameters"] == {"n": 3}
    ours = data["figures"][1]
    assert (ours["median"], ours["minimum"], ours["maximum"]) == (4.0, 3.0, 5.0)
    assert ours["samples"] == [3.0, 4.0, 5.0]
    assert ours["ratio"] == pytest.approx(2.0)
    assert ours["target"] == "≤ 1×"
    assert ours["met"] is False
    later = data["figures"][2]
    assert later["available"] is False
    assert "median" not in later
    assert later["note"] == "not available: the engine does not exist yet"
    assert data["profiles"] == {"ours": "top entries"}


def test_plain_table_shows_ratios_status_and_reasons() -> None:
    out = io.StringIO()
    render_plain(sample_report(), out)
    text = out.getvalue()
    assert text.startswith("== demo ==")
    ours = next(line for line in text.splitlines() if line.startswith("ours"))
    assert "2.00×" in ours and "MISSED" in ours and "baseline" in ours
    later = next(line for line in text.splitlines() if line.startswith("later"))
    assert later.rstrip().endswith("n/a")
    assert "* later: not available: the engine does not exist yet" in text
    assert "- a note" in text


def test_environment_sets_and_restores_variables() -> None:
    os.environ["BENCH_TEST_KEEP"] = "kept"
    os.environ.pop("BENCH_TEST_NEW", None)
    with environment(BENCH_TEST_KEEP=None, BENCH_TEST_NEW="set"):
        assert "BENCH_TEST_KEEP" not in os.environ
        assert os.environ["BENCH_TEST_NEW"] == "set"
    assert os.environ.pop("BENCH_TEST_KEEP") == "kept"
    assert "BENCH_TEST_NEW" not in os.environ


def test_options_pick_sizes() -> None:
    assert Options(Path("."), quick=True).pick(1, 2, 3) == 1
    assert Options(Path(".")).pick(1, 2, 3) == 2
    assert Options(Path("."), full=True).pick(1, 2, 3) == 3
    assert Options(Path("."), full=True).pick(1, 2) == 2


def test_command_line_lists_and_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    assert capsys.readouterr().out.split() == list(BENCHMARKS)
    assert main(["no_such_benchmark"]) == 2
    assert "unknown benchmark no_such_benchmark" in capsys.readouterr().out


@pytest.mark.slow
def test_every_benchmark_runs_end_to_end_on_tiny_sizes(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--results", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        # a hang guard only: about a minute on a quiet machine, several on a loaded one
        timeout=1200,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr
    for name in BENCHMARKS:
        data = json.loads((tmp_path / f"{name}.json").read_text())
        assert data["benchmark"] == name
        assert data["figures"], name
        assert data["machine"]["cpu_count"]
        for figure in data["figures"]:
            # a number, or an honest reason — never neither
            assert figure["available"] or figure["note"].startswith("not available: ")
