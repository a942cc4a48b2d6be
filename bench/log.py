"""``python -m bench log``: append the results in ``bench/results/`` to the performance log.

``bench/results/*.json`` is rewritten by every run and ignored by git, so the history of the
figures lives in ``docs/performance-log.md``, a committed page. Each result becomes one entry
(the benchmark, when and at which commit it was recorded, the machine, one row per figure),
marked with its benchmark and recording time, so a result already in the log is never added
twice and nothing already written is changed: entries are only appended. Smoke runs
(``--quick``) measure nothing worth keeping and are left out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness import RESULTS_DIRECTORY, format_number

LOG = Path(__file__).resolve().parents[1] / "docs" / "performance-log.md"
COLUMNS = ("figure", "median", "min–max", "n", "ratio", "vs", "target", "status")


def marker(result: dict[str, Any]) -> str:
    """The comment that identifies a result's entry in the log."""
    return f"<!-- result: {result['benchmark']} {result['recorded']} -->"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def figure_row(figure: dict[str, Any]) -> tuple[str, ...]:
    status = {True: "met", False: "**missed**", None: ""}[figure.get("met")]
    target = figure.get("target") or ""
    if not figure.get("available"):
        return (figure["name"], "—", "", "", "", "", target, "n/a")
    unit = f" {figure['unit']}" if figure.get("unit") else ""
    ratio = figure.get("ratio")
    return (
        figure["name"],
        format_number(figure["median"]) + unit,
        f"{format_number(figure['minimum'])}–{format_number(figure['maximum'])}",
        str(figure["count"]),
        f"{ratio:.2f}×" if ratio is not None else "",
        figure.get("baseline") or "",
        target,
        status,
    )


def describe_machine(machine: dict[str, Any]) -> str:
    parts = [
        f"{machine.get('cpu_count', '?')} CPUs",
        str(machine.get("machine", "")),
        str(machine.get("platform", "")),
        f"{machine.get('implementation', 'Python')} {machine.get('python', '?')}",
        f"SQLite {machine.get('sqlite', '?')}",
    ]
    if machine.get("postgresql"):
        parts.append(f"PostgreSQL {machine['postgresql']}")
    if machine.get("load_average"):
        parts.append("load average " + " / ".join(str(x) for x in machine["load_average"]))
    return ", ".join(p for p in parts if p)


def entry(result: dict[str, Any]) -> str:
    """One result as Markdown: heading, where it was measured, its figures, its notes."""
    machine = result.get("machine", {})
    parameters = ", ".join(f"{k}={v}" for k, v in sorted(result.get("parameters", {}).items()))
    lines = [
        marker(result),
        f"### {result['benchmark']}, {result['recorded']}",
        "",
        f"Commit {machine.get('commit') or 'not recorded'}; {describe_machine(machine)}.",
        f"Parameters: {parameters or 'none'}.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(cell(c) for c in figure_row(f)) + " |" for f in result["figures"]]
    notes = [f"{f['name']}: {f['note']}" for f in result["figures"] if f.get("note")]
    notes += result.get("notes", [])
    if notes:
        lines.append("")
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def read_results(directory: Path) -> list[dict[str, Any]]:
    """Every result file in ``directory``, oldest recording first."""
    results = [json.loads(p.read_text(encoding="utf-8")) for p in directory.glob("*.json")]
    return sorted(results, key=lambda r: (r["recorded"], r["benchmark"]))


def append_results(directory: Path, log: Path) -> list[str]:
    """Append to ``log`` each result of ``directory`` it lacks (but smoke runs); return their
    markers."""
    text = log.read_text(encoding="utf-8")
    new = [
        r
        for r in read_results(directory)
        if marker(r) not in text and not r.get("parameters", {}).get("quick")
    ]
    if new:
        ending = "" if text.endswith("\n") else "\n"
        with log.open("a", encoding="utf-8") as out:
            out.write(ending + "".join("\n" + entry(r) for r in new))
    return [marker(r) for r in new]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench log", description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS_DIRECTORY, help="JSON directory")
    parser.add_argument("--to", type=Path, default=LOG, help="the log to append to")
    args = parser.parse_args(argv)
    if not args.to.is_file():
        print(f"error: no log at {args.to}")
        return 2
    added = append_results(args.results, args.to) if args.results.is_dir() else []
    print(f"{len(added)} new result(s) appended to {args.to.name}")
    return 0
