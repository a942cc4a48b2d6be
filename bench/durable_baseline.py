"""One ``durable`` batch of a baseline revision, run by that revision's own code.

:mod:`bench.durable` runs this file's text with ``python -c`` in a subprocess whose working
directory and ``PYTHONPATH`` are the revision's extracted tree, so the ``bench`` and
``openseal`` imported below are the revision's: its ``Batch`` creates its own store with its
own migrations (a SQLite home, or a PostgreSQL scratch schema). The argument is a JSON object
(workdir, runs, postgres_url, concurrency); the last line printed is the batch's seconds, CPU
seconds (None when the revision's ``Batch`` does not measure them), write commits and the
concurrency it ran at, as JSON.

Older revisions' ``Batch`` takes no ``concurrency`` (it runs one thread alone, at concurrency
1) and returns ``(seconds, turns, commits)`` rather than a sample; both shapes are read.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

from bench.durable import Batch
from bench.harness import Options
from bench.runtime_support import ACTION_WORKFLOW, compiled

#: runs of the untimed batch before the timed one: imports, caches, first connections
WARMUP_RUNS = 20


def main(spec: dict[str, Any]) -> dict[str, Any]:
    workdir = Path(spec["workdir"])
    documents = compiled(workdir / "project", ACTION_WORKFLOW)
    concurrency = {}
    if "concurrency" in inspect.signature(Batch).parameters:
        concurrency = {"concurrency": spec["concurrency"]}
    runs, url = spec["runs"], spec["postgres_url"]
    Batch(Options(workdir / "warm-up"), documents, min(runs, WARMUP_RUNS), url, **concurrency)()
    sample = Batch(Options(workdir / "timed"), documents, runs, url, **concurrency)()
    if isinstance(sample, tuple):
        seconds, _turns, commits = sample
        cpu = None
    else:
        seconds, commits, cpu = sample.seconds, sample.commits, sample.cpu
    return {
        "seconds": seconds,
        "cpu": cpu,
        "write_commits": commits.writes,
        "concurrency": concurrency.get("concurrency", 1),
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
