"""startup: how long a command takes to start, in a fresh interpreter each time (CPU time of
the child process: user + system, so a loaded machine does not inflate it). Each command runs
once untimed first, which also writes its bytecode caches, so the figures are a warm start.

* ``python -c pass``: the interpreter alone, the baseline.
* ``openseal --help``: lists every command without importing any. Target ≤ 0.15 s.
* ``openseal validate FILE``: the compiler only (no SQLAlchemy, Alembic or FastAPI).
* ``openseal runs list``: opens a store already at the newest schema (one query, no
  Alembic; on SQLite no SQLAlchemy either). Target ≤ 0.3 s, with no runs and with 20 runs
  (whose workflow is named from its version).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from bench.harness import Options, Report, Target, compare, scaled, summarize

NAME = "startup"
ROOT = Path(__file__).resolve().parents[1]
#: the runs in the store the second ``runs list`` lists
RUNS = 20


def store_with_runs(workdir: Path, count: int) -> Path:
    """The home of a store holding ``count`` queued runs of one workflow."""
    from bench.runtime_support import TRANSFORM_WORKFLOW, compiled, loaded_store
    from openseal.runtime import service

    home = workdir / "busy"
    with loaded_store(home, compiled(workdir / "project", TRANSFORM_WORKFLOW)) as store:
        for n in range(count):
            start = service.StartObjective("three_steps", {"n": n})
            service.create_objective(store, start, service.CLI)
    return home


def cpu_seconds(args: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process running ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, check=True, capture_output=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(options: Options) -> Report:
    report = Report(NAME)
    repeat = options.pick(quick=2, default=options.repeat)
    home = options.workdir / "home"
    env = {**os.environ, "OPENSEAL_HOME": str(home), "OPENSEAL_CACHE": "off"}
    env.pop("OPENSEAL_DATABASE_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a warm start reads compiled bytecode
    openseal = [sys.executable, "-m", "openseal"]
    subprocess.run([*openseal, "db", "upgrade"], env=env, check=True, capture_output=True)
    busy = store_with_runs(options.workdir, RUNS)
    report.parameters.update(repeat=repeat, runs=RUNS)

    def timed(args: list[str]) -> list[float]:
        cpu_seconds(args, env)  # warm the file system cache
        return [cpu_seconds(args, env) for _ in range(repeat)]

    interpreter = report.add(
        compare("python -c pass", "s", summarize(timed([sys.executable, "-c", "pass"])))
    )
    cases = [
        ("openseal --help", ["--help"], Target(0.15, on="value")),
        ("openseal validate", ["validate", "definitions/procurement/hcl"], None),
        ("openseal runs list", ["runs", "list"], Target(0.3, on="value")),
        (f"openseal runs list, {RUNS} runs", ["runs", "list", "--home", str(busy)],
         Target(0.3, on="value")),
    ]  # fmt: skip
    for name, args, target in cases:
        stats = scaled(summarize(timed([*openseal, *args])), 1)
        report.add(compare(name, "s", stats, interpreter, target))
    return report
