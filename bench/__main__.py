"""``python -m bench [NAME ...] [--quick] [--full]``: run benchmarks, print tables, write JSON.

``python -m bench log`` then appends the results written to docs/performance-log.md.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
from pathlib import Path

from bench import BENCHMARKS, log
from bench.harness import RESULTS_DIRECTORY, Options, Report, machine, render, write_report
from bench.postgres import probe


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHMARKS))
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, 2 repetitions")
    size.add_argument("--full", action="store_true", help="the largest sizes (scale: 100,000 runs)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument(
        "--backend", choices=("sqlite", "postgresql"),
        help="measure on this store backend only (capacity, rate_limit); default: both",
    )  # fmt: skip
    parser.add_argument("--results", type=Path, default=RESULTS_DIRECTORY, help="JSON directory")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return parser.parse_args(argv)


def run_one(name: str, options: Options) -> Report:
    module = importlib.import_module(BENCHMARKS[name])
    report: Report = module.run(options)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["log"]:
        return log.main(argv[1:])
    args = parse(argv)
    if args.list:
        print("\n".join(BENCHMARKS))
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 2
    postgres_url, postgres_version = probe()
    described = machine(postgres_version)
    failures = 0
    for name in args.names or list(BENCHMARKS):
        with tempfile.TemporaryDirectory(prefix=f"openseal-bench-{name}-") as work:
            options = Options(
                workdir=Path(work),
                quick=args.quick,
                full=args.full,
                repeat=2 if args.quick else max(args.repeat, 5),
                postgres_url=postgres_url,
                backend=args.backend,
            )
            try:
                report = run_one(name, options)
            except Exception as exc:  # a broken benchmark is reported, never half-printed
                failures += 1
                print(f"{name}: failed: {exc.__class__.__name__}: {exc}", file=sys.stderr)
                continue
        report.parameters.setdefault("quick", args.quick)
        report.parameters.setdefault("full", args.full)
        render(report)
        path = write_report(report, described, args.results)
        print(f"  → {os.path.relpath(path)}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
