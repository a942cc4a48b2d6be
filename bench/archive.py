"""archive: moving ended runs out of the live store while workers work.

A fresh SQLite store gets N ended runs (a three-state workflow driven to ``completed`` by an
``openseal worker --until-idle``; 2,000, 20,000 with ``--full``). Then M more objectives are
queued and worked off twice by a fresh worker process, once alone and once while this process
archives the N ended runs (``openseal db archive``'s code, batches of 100, ended before the
second round began):

* archive throughput: runs archived ÷ the archive's wall time (write, verify, delete);
* live store size (used pages after a WAL checkpoint) before and after the archive;
* the worker's runs/s working off the M runs alone, and while the archive ran (its ratio to
  the first is what archiving costs the workers on a two-core machine shared with it).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.compiler import openseal_command
from bench.harness import Options, Report, compare, summarize, unavailable
from bench.runtime_support import TRANSFORM_WORKFLOW, compiled, engine_problem, loaded_store
from bench.scale import used_bytes
from openseal.runtime.store import Store

NAME = "archive"
MIB = 1024 * 1024


def create(store: Store, count: int, start: int) -> None:
    from openseal.runtime import service

    for i in range(start, start + count):
        service.create_objective(
            store, service.StartObjective("three_steps", {"n": i}), service.CLI
        )


def work_off(home: Path, workdir: Path, name: str) -> float:
    """Seconds an ``openseal worker --until-idle`` takes to finish every queued run."""
    started = time.perf_counter()
    with (workdir / f"{name}.log").open("wb") as log:
        command = [*openseal_command(), "worker", "--home", str(home), "--until-idle",
                   "--concurrency", "2", "--poll-interval", "0.05"]  # fmt: skip
        subprocess.run(command, stdout=log, stderr=log, check=True, timeout=3600)
    return time.perf_counter() - started


def run(options: Options) -> Report:
    report = Report(NAME)
    ended = options.pick(quick=40, default=2_000, full=20_000)
    queued = options.pick(quick=20, default=500, full=2_000)
    report.parameters.update(ended_runs=ended, queued_runs=queued, batch_size=100)
    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("archive throughput", problem, "runs/s"))
        return report
    from openseal.runtime import service

    home = options.workdir / "archive_home"
    documents = compiled(options.workdir / "archive_project", TRANSFORM_WORKFLOW)
    with loaded_store(home, documents) as store:
        create(store, ended, 0)
        work_off(home, options.workdir, "ended")
        before = used_bytes(home / "openseal.db")
        create(store, queued, ended)
        alone = work_off(home, options.workdir, "alone")
        cut = store.now()
        create(store, queued, ended + queued)
        request = service.ArchiveRequest(
            to=options.workdir / "archive", ended_before=cut,
            retention=service.Retention(keep_ended_runs=0.0, action_window=0.0),
        )  # fmt: skip
        timing: dict[str, Any] = {}
        archiver = threading.Thread(target=_archive, args=(store, request, timing))
        archiver.start()
        during = work_off(home, options.workdir, "during")
        archiver.join()
        after = used_bytes(home / "openseal.db")
    archived = timing["report"].runs
    report.parameters.update(archived_runs=archived, archive_seconds=round(timing["seconds"], 2))
    report.add(compare("archive throughput", "runs/s", summarize([archived / timing["seconds"]])))
    size_before = report.add(compare("live store before", "MiB", summarize([before / MIB])))
    report.add(compare("live store after", "MiB", summarize([after / MIB]), size_before))
    base = report.add(compare("worker runs/s, alone", "runs/s", summarize([queued / alone])))
    report.add(
        compare(
            "worker runs/s, while archiving", "runs/s", summarize([queued / during]), base,
            note=f"the archive ran {timing['seconds']:.1f} s of the worker's {during:.1f} s",
        )
    )  # fmt: skip
    return report


def _archive(store: Store, request: Any, timing: dict[str, Any]) -> None:
    from openseal.runtime import service

    started = time.perf_counter()
    timing["report"] = service.archive(store, request)
    timing["seconds"] = time.perf_counter() - started
