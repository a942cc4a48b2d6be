"""The benchmark harness: repeated timing, statistics, figures, reports and tables.

Every figure is a median over several repetitions after a warm-up, kept with its minimum
and maximum, and compared as a ratio against a baseline measured in the same run on the
same machine — absolute numbers on a shared two-core machine mean little on their own.

A figure that cannot be measured (a feature not built yet, a peer that did not install)
carries a reason instead of a number; nothing here ever invents a value.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO

RESULTS_DIRECTORY = Path(__file__).parent / "results"


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """Median, minimum and maximum of repeated measurements (in the figure's unit)."""

    median: float
    minimum: float
    maximum: float
    samples: tuple[float, ...]

    @property
    def count(self) -> int:
        return len(self.samples)


def summarize(samples: Sequence[float]) -> Stats:
    if not samples:
        raise ValueError("no samples to summarise")
    return Stats(statistics.median(samples), min(samples), max(samples), tuple(samples))


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile (0 < fraction < 1), interpolated between neighbours."""
    if not samples:
        raise ValueError("no samples")
    if len(samples) == 1:
        return samples[0]
    cuts = statistics.quantiles(samples, n=1000, method="inclusive")
    index = min(len(cuts) - 1, max(0, round(fraction * 1000) - 1))
    return cuts[index]


def repeat_timed(fn: Callable[[], object], *, repeat: int, warmup: int = 1) -> Stats:
    """Seconds per call of ``fn``: ``warmup`` untimed calls, then ``repeat`` timed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return summarize(times)


def rates(count: int, seconds: Stats) -> Stats:
    """Turn seconds per batch of ``count`` operations into operations per second."""
    return summarize([count / s for s in seconds.samples])


def scaled(stats: Stats, factor: float) -> Stats:
    return summarize([s * factor for s in stats.samples])


# --------------------------------------------------------------------------
# Figures and targets
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A bound on a figure's value or on its ratio to its baseline.

    ``upper`` True means "at most ``bound``" (times, sizes); False "at least" (rates).
    """

    bound: float
    on: Literal["value", "ratio"] = "ratio"
    upper: bool = True

    def met(self, value: float | None, ratio: float | None) -> bool | None:
        subject = value if self.on == "value" else ratio
        if subject is None:
            return None
        return subject <= self.bound if self.upper else subject >= self.bound

    def describe(self, unit: str) -> str:
        sign = "≤" if self.upper else "≥"
        return f"{sign} {self.bound:g}×" if self.on == "ratio" else f"{sign} {self.bound:g} {unit}"


@dataclass(frozen=True)
class Figure:
    """One measured (or honestly unavailable) number, optionally against a baseline."""

    name: str
    unit: str
    stats: Stats | None = None
    baseline: str | None = None
    ratio: float | None = None
    target: Target | None = None
    note: str = ""

    @property
    def available(self) -> bool:
        return self.stats is not None

    @property
    def met(self) -> bool | None:
        if self.target is None or self.stats is None:
            return None
        return self.target.met(self.stats.median, self.ratio)


def unavailable(name: str, reason: str, unit: str = "", target: Target | None = None) -> Figure:
    return Figure(name, unit, None, target=target, note=f"not available: {reason}")


def compare(
    name: str,
    unit: str,
    stats: Stats,
    baseline: Figure | None = None,
    target: Target | None = None,
    note: str = "",
) -> Figure:
    """A figure with its ratio (median ÷ median) to ``baseline`` when one is given."""
    ratio = None
    if baseline is not None and baseline.stats is not None and baseline.stats.median:
        ratio = stats.median / baseline.stats.median
    return Figure(name, unit, stats, baseline.name if baseline else None, ratio, target, note)


@dataclass
class Report:
    """What one benchmark module measured, ready to print and to write as JSON."""

    benchmark: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: figure name → cProfile top entries, for figures that missed their target
    profiles: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def to_json(self, machine: dict[str, Any]) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine,
            "parameters": self.parameters,
            "figures": [figure_json(f) for f in self.figures],
            "notes": self.notes,
            "profiles": self.profiles,
        }


def figure_json(figure: Figure) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": figure.name,
        "unit": figure.unit,
        "available": figure.available,
        "baseline": figure.baseline,
        "ratio": figure.ratio,
        "target": None,
        "met": figure.met,
        "note": figure.note,
    }
    if figure.stats is not None:
        data.update(asdict(figure.stats))
        data["samples"] = list(figure.stats.samples)
        data["count"] = figure.stats.count
    if figure.target is not None:
        data["target"] = figure.target.describe(figure.unit)
    return data


def write_report(report: Report, machine: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report.benchmark}.json"
    path.write_text(json.dumps(report.to_json(machine), indent=2) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------

COLUMNS = ("figure", "median", "min", "max", "n", "ratio", "vs", "target", "status")


def format_number(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def row(figure: Figure) -> tuple[str, ...]:
    status = {True: "met", False: "MISSED", None: ""}[figure.met]
    if figure.stats is None:
        target = figure.target.describe(figure.unit) if figure.target else ""
        return (figure.name, "—", "", "", "", "", "", target, "n/a")
    unit = f" {figure.unit}" if figure.unit else ""
    stats = figure.stats
    return (
        figure.name,
        format_number(stats.median) + unit,
        format_number(stats.minimum),
        format_number(stats.maximum),
        str(stats.count),
        f"{figure.ratio:.2f}×" if figure.ratio is not None else "",
        figure.baseline or "",
        figure.target.describe(figure.unit) if figure.target else "",
        status or (figure.note and "note") or "",
    )


def render_plain(report: Report, out: TextIO) -> None:
    rows = [COLUMNS, *(row(f) for f in report.figures)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    out.write(f"== {report.benchmark} ==\n")
    for r in rows:
        out.write("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() + "\n")
    for figure in report.figures:
        if figure.note:
            out.write(f"  * {figure.name}: {figure.note}\n")
    for note in report.notes:
        out.write(f"  - {note}\n")


def render_rich(report: Report, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=report.benchmark, title_justify="left")
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in ("median", "min", "max") else "left")
    styles = {"met": "green", "MISSED": "bold red", "n/a": "yellow"}
    for figure in report.figures:
        cells = row(figure)
        table.add_row(*cells, style=styles.get(cells[-1], ""))
    console = Console(file=out)
    console.print(table)
    for figure in report.figures:
        if figure.note:
            console.print(f"  * {figure.name}: {figure.note}", markup=False)
    for note in report.notes:
        console.print(f"  - {note}", markup=False)


def render(report: Report, out: TextIO | None = None) -> None:
    """A rich table on a colour-capable terminal, plain aligned text otherwise."""
    stream = out or sys.stdout
    fancy = stream.isatty() and not os.environ.get("NO_COLOR")
    (render_rich if fancy else render_plain)(report, stream)


# --------------------------------------------------------------------------
# Profiles, machine, environment
# --------------------------------------------------------------------------


def profile_text(fn: Callable[[], object], top: int = 15) -> str:
    """cProfile's top ``top`` entries by cumulative time for one call of ``fn``."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        fn()
    finally:
        profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats("cumulative")
    stats.print_stats(top)
    return buffer.getvalue().strip()


def machine(postgres_version: str | None = None) -> dict[str, Any]:
    """A description of where the figures were measured."""
    description: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "sqlite": sqlite3.sqlite_version,
        "postgresql": postgres_version,
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    with contextlib.suppress(OSError):
        description["load_average"] = [round(x, 2) for x in os.getloadavg()]
    description["commit"] = revision()
    return description


def revision() -> str | None:
    """The checkout's short commit, ``+changes`` when openseal/ or bench/ differ from it.

    ``None`` outside a git checkout (an installed package, no git).
    """

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", ":/openseal", ":/bench")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{commit}+changes" if changed else commit


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set (or with ``None`` remove) environment variables for the block, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --------------------------------------------------------------------------
# What a benchmark is given
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """How big and how often: ``quick`` is a smoke run, ``full`` the largest sizes."""

    workdir: Path
    quick: bool = False
    full: bool = False
    repeat: int = 5
    #: PostgreSQL to measure against, or ``None`` when not reachable
    postgres_url: str | None = None
    #: measure on this backend only (``sqlite``, ``postgresql``; benchmarks that measure
    #: both read it), or on every one available when ``None``
    backend: str | None = None

    def pick(self, quick: int, default: int, full: int | None = None) -> int:
        """A size: ``quick`` in a smoke run, ``full`` with ``--full``, else ``default``."""
        if self.quick:
            return quick
        if self.full and full is not None:
            return full
        return default
