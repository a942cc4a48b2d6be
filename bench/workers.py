"""workers: PostgreSQL throughput with 1, 2, 4 and 8 worker processes, and no double execution.

The way to scale past one machine is many ``openseal worker`` processes sharing one
PostgreSQL (claims with ``FOR UPDATE SKIP LOCKED``, wake-ups by ``LISTEN/NOTIFY``). Each
configuration gets a fresh scratch schema and K worker processes (``--concurrency 1``), started
and idle before N objectives of an I/O-bound workflow are created: transform → action calling
``bench.skills:slow`` (a ``write`` skill that waits 20 ms, as a remote call would) → end. The
time runs from the first objective created to the last run completed.

* runs/s for each K, and the ratio of each K to one worker. Target at 4: ≥ 3.5×. Where the
  runs/s stop growing — the first K whose runs/s are less than :data:`GROWTH` times the K
  before it — is noted with the load average while the batches ran.
* claim p95 for each K: the wall time of each claim that took a run (its transaction, with the
  first turn it saves), timed in the worker processes (:mod:`bench.counted_worker`).
* worker CPU per run: user + system time of the worker processes during the batch ÷ N; on
  a machine with fewer cores than workers (plus the database server) this is what caps K = 4.
* statements per run: the SQL statements all worker processes sent during the batch ÷ N (on
  PostgreSQL each is a round trip), counted by running the workers through
  :mod:`bench.counted_worker`.
* idle threads woken per run: the waits for work that ended with a run to claim, in all
  worker processes, ÷ N. Every one but the claimer's finds the run taken.
* idle workers: 2 processes of 4 threads each, and 50 objectives created one at a time, each
  once the previous run completed: every run arrives while 8 threads wait (polling once a
  minute, so that only wake-ups move them). Statements and worker CPU per run show what
  waking them costs.
* double executions: the skill appends its argument (unique per run) to a file with one
  ``O_APPEND`` write per call; any argument seen twice was executed twice. Target: 0.

``OPENSEAL_BENCH_BASELINE=<git revision>`` also runs the workers of that revision (its
``openseal`` package taken with ``git archive``), interleaved with the current ones in the same
run, and reports the current figures against its: runs/s with 1 worker, and how the CPU per run
grows from 1 to 4 workers. The revision must share the current schema.
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa

from bench.baseline import BASELINE_ENV, REPOSITORY, checkout
from bench.counted_worker import CLAIMS_ENV, STATEMENTS_ENV, WAKES_ENV
from bench.harness import (
    Figure,
    Options,
    Report,
    Target,
    compare,
    percentile,
    summarize,
    unavailable,
)
from bench.postgres import scratch_schema
from bench.runtime_support import action_workflow, compiled, engine_problem
from bench.scale import cpu_seconds
from bench.skills import EXECUTIONS_ENV
from openseal.runtime.store import Store, open_store
from openseal.runtime.store.tables import schema

NAME = "workers"
WORKFLOW = "slow_steps"
WORKER_COUNTS = (1, 2, 4, 8)
#: how long a worker process may take to start (a hang guard, not a figure)
STARTUP_SECONDS = 600
#: doubling the worker processes must add at least this factor for the runs/s to be "growing"
GROWTH = 1.2
#: idle workers: processes and threads each, woken for runs that arrive one at a time
IDLE = (2, 4)
#: each worker process's log, by pid (quoted when a worker exits early)
LOGS: dict[int, Path] = {}


class Batch:
    """What one batch measured."""

    def __init__(
        self,
        seconds: float,
        doubled: int,
        cpu_ms: float,
        statements: float,
        claims: list[float] | None = None,
        load: float | None = None,
        wakes: float = 0.0,
    ) -> None:
        self.seconds, self.doubled = seconds, doubled
        self.cpu_ms, self.statements = cpu_ms, statements
        #: seconds of each claim that took a run; the 1-minute load average when it ended
        self.claims, self.load = claims or [], load
        #: idle threads woken to claim a run, per run
        self.wakes = wakes


def stops_growing(rates: dict[int, float]) -> int | None:
    """The first worker count whose runs/s are less than :data:`GROWTH` times those of the
    count before it (None: they grew all the way)."""
    counts = sorted(rates)
    for before, count in itertools.pairwise(counts):
        if rates[count] < GROWTH * rates[before]:
            return count
    return None


def run(options: Options) -> Report:
    report = Report(NAME)
    problem = engine_problem() or (
        None if options.postgres_url else "no PostgreSQL server reachable"
    )
    if problem is not None:
        for count in WORKER_COUNTS:
            report.add(unavailable(f"{count} worker(s): runs/s", problem, "runs/s"))
        return report
    assert options.postgres_url is not None
    runs = options.pick(quick=20, default=200)
    repeat = 2 if options.quick else 3
    baseline = os.environ.get(BASELINE_ENV)
    report.parameters.update(runs=runs, repeat=repeat, skill_sleep_ms=20, concurrency=1)
    documents = compiled(options.workdir / "project", action_workflow("slow_record", WORKFLOW))
    versions: dict[str, Path | None] = {"": None}
    if baseline:
        versions[baseline] = checkout(baseline, options.workdir / "baseline")
        report.parameters["baseline"] = baseline
    batches: dict[tuple[str, int], list[Batch]] = {}
    for repetition in range(repeat):
        for count in WORKER_COUNTS:
            for version, source in versions.items():  # interleaved: the same load for both
                work = options.workdir / f"k{count}-{repetition}-{version or 'current'}"
                batch = measure(options.postgres_url, documents, work, count, runs, source)
                batches.setdefault((version, count), []).append(batch)
    idle = options.pick(quick=10, default=50)
    for repetition in range(repeat):
        for version, source in versions.items():
            work = options.workdir / f"idle-{repetition}-{version or 'current'}"
            batch = measure(
                options.postgres_url, documents, work, IDLE[0], idle, source,
                threads=IDLE[1], one_at_a_time=True,
            )  # fmt: skip
            batches.setdefault((version, 0), []).append(batch)
    duplicates = sum(b.doubled for found in batches.values() for b in found)
    single: dict[str, Figure] = {}
    for version in versions:
        label = f" ({version})" if version else ""
        one: Figure | None = None
        for count in WORKER_COUNTS:
            name = f"{count} worker process{'es' if count > 1 else ''}{label}: runs/s"
            target = Target(3.5, upper=False) if count == 4 and not version else None
            rates = [runs / b.seconds for b in batches[(version, count)]]
            figure = report.add(compare(name, "runs/s", summarize(rates), one, target))
            one = one or figure
        assert one is not None  # WORKER_COUNTS is not empty
        single[version] = one
        one = None
        for count in WORKER_COUNTS:
            cpu = [b.cpu_ms for b in batches[(version, count)]]
            target = Target(1.3) if count == 4 and not version else None
            figure = report.add(
                compare(
                    f"{count} worker(s){label}: worker CPU per run", "ms", summarize(cpu), one,
                    target, note="user + system time of the worker processes while the batch ran",
                )
            )  # fmt: skip
            one = one or figure
        for count in WORKER_COUNTS:
            sent = [b.statements for b in batches[(version, count)]]
            report.add(
                compare(f"{count} worker(s){label}: statements per run", "", summarize(sent))
            )
        for count in WORKER_COUNTS:
            woken = [b.wakes for b in batches[(version, count)]]
            name = f"{count} worker(s){label}: idle threads woken per run"
            report.add(compare(name, "", summarize(woken)))
        for count in WORKER_COUNTS:
            found = batches[(version, count)]
            p95 = [1000 * percentile(b.claims, 0.95) for b in found if b.claims]
            name = f"{count} worker(s){label}: claim p95"
            if not p95:
                report.add(unavailable(name, "no claim timed (an earlier revision)", "ms"))
                continue
            note = "wall time of each claim that took a run, with the first turn it saves"
            report.add(compare(name, "ms", summarize(p95), note=note))
        if not version:
            growth(report, {c: [runs / b.seconds for b in batches[("", c)]] for c in WORKER_COUNTS},
                   {c: [b.load for b in batches[("", c)]] for c in WORKER_COUNTS})  # fmt: skip
    idle_name = f"{IDLE[0]} processes of {IDLE[1]} threads, runs one at a time"
    for version in versions:
        label = f" ({version})" if version else ""
        for unit, name, pick in (
            ("", "statements", "statements"),
            ("ms", "worker CPU", "cpu_ms"),
            ("", "idle threads woken", "wakes"),
        ):
            values = [getattr(b, pick) for b in batches[(version, 0)]]
            report.add(compare(f"{idle_name}{label}: {name} per run", unit, summarize(values)))
    if baseline:
        old = single[baseline]
        report.add(
            compare(
                "1 worker process: runs/s, current", "runs/s",
                summarize([runs / b.seconds for b in batches[("", 1)]]), old,
                Target(2, upper=False),
            )
        )  # fmt: skip
    report.parameters["cpu_count"] = os.cpu_count()
    executed = sum(len(found) * (runs if count else idle) for (_, count), found in batches.items())
    report.add(
        compare(
            "double executions", "calls", summarize([float(duplicates)]),
            target=Target(0, on="value"),
            note=f"over {sum(len(found) for found in batches.values())} batches, {executed} runs",
        )
    )  # fmt: skip
    return report


def growth(
    report: Report, rates: dict[int, list[float]], loads: dict[int, list[float | None]]
) -> None:
    """Note where the median runs/s stop growing with the worker count, and the load average
    each count ran under (the machine's cores are shared with the server and other work)."""
    medians = {count: summarize(found).median for count, found in rates.items()}
    stopped = stops_growing(medians)
    load = "; ".join(
        f"{count}: {', '.join(f'{x:.1f}' for x in found if x is not None)}"
        for count, found in loads.items()
    )
    report.parameters["load_average_by_workers"] = loads
    report.parameters["stops_growing_at"] = stopped
    ratios = ", ".join(f"{count}: {medians[count]:.1f}" for count in medians)
    where = (
        f"the runs/s stop growing at {stopped} worker processes (less than {GROWTH:g}× the "
        f"count before)" if stopped else "the runs/s grew at every count"
    )  # fmt: skip
    report.notes.append(
        f"{where}: runs/s by worker processes {ratios}, on {os.cpu_count()} CPUs shared with "
        f"the PostgreSQL server; 1-minute load average after each batch, by count: {load}"
    )


def measure(
    url: str,
    documents: list[object],
    work: Path,
    count: int,
    runs: int,
    source: Path | None,
    *,
    threads: int = 1,
    one_at_a_time: bool = False,
) -> Batch:
    """``runs`` runs with ``count`` workers of ``threads`` threads (of the ``openseal`` package
    in ``source``, else this one): seconds, calls repeated, worker CPU and statements per run.
    ``one_at_a_time``: each objective is created once the previous run completed, so the
    workers are idle whenever a run arrives."""
    from openseal.runtime import service
    from openseal.runtime.service import register_documents

    work.mkdir(parents=True)
    executions = work / "executions.txt"
    with scratch_schema(url) as connect_args:
        store = open_store(url, home=work, auto_migrate=True, connect_args=connect_args)
        workers: list[subprocess.Popen[bytes]] = []
        try:
            register_documents(store, documents)  # type: ignore[arg-type]
            scoped = (
                sa.make_url(url)
                .update_query_dict({"options": connect_args["options"]})
                .render_as_string(hide_password=False)
            )
            workers = [
                start_worker(
                    work / f"worker-{i}.log",
                    scoped,
                    executions,
                    source,
                    threads,
                    # idle workers: a poll a minute, so what they cost is their wake-ups
                    poll=60 if one_at_a_time else 1,
                )
                for i in range(count)
            ]
            for i, process in enumerate(workers):
                # 8 processes importing at once on a busy 2-core machine take minutes
                wait_for(lambda i=i: b"started" in (work / f"worker-{i}.log").read_bytes(),
                         STARTUP_SECONDS, process)  # fmt: skip
            cpu = sum(cpu_seconds(p.pid) for p in workers)
            started = time.perf_counter()
            for i in range(runs):
                service.create_objective(
                    store, service.StartObjective(WORKFLOW, {"n": i}), service.CLI
                )
                if one_at_a_time:
                    wait_for(lambda i=i: completed(store) > i, 120, *workers)
            wait_for(lambda: completed(store) >= runs, 120 + runs, *workers)
            seconds = time.perf_counter() - started
            cpu_ms = (sum(cpu_seconds(p.pid) for p in workers) - cpu) / runs * 1000
            # Statements are counted until each worker exits: its start-up and drain too, a
            # few dozen against thousands for the batch.
        finally:
            for process in workers:
                process.send_signal(signal.SIGTERM)
            for process in workers:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            store.close()
    sent = sum(int(statements_file(p).read_text() or 0) for p in workers)
    wakes = sum(int(LOGS[p.pid].with_suffix(".wakes").read_text() or 0) for p in workers)
    claims = [
        float(line)
        for p in workers
        if (timed := LOGS[p.pid].with_suffix(".claims")).exists()
        for line in timed.read_text().split()
    ]
    calls = collections.Counter(executions.read_text().split())
    if len(calls) != runs:
        raise RuntimeError(f"{len(calls)} distinct runs executed their action, not {runs}")
    doubled = sum(n - 1 for n in calls.values())
    return Batch(seconds, doubled, cpu_ms, sent / runs, claims, os.getloadavg()[0], wakes / runs)


def statements_file(process: subprocess.Popen[bytes]) -> Path:
    return LOGS[process.pid].with_suffix(".statements")


def start_worker(
    log: Path, url: str, executions: Path, source: Path | None, threads: int = 1, poll: float = 1
) -> subprocess.Popen[bytes]:
    path = str(REPOSITORY) if source is None else f"{source}{os.pathsep}{REPOSITORY}"
    environment = {
        **os.environ,
        "OPENSEAL_DATABASE_URL": url,
        EXECUTIONS_ENV: str(executions),
        STATEMENTS_ENV: str(log.with_suffix(".statements")),
        WAKES_ENV: str(log.with_suffix(".wakes")),
        CLAIMS_ENV: str(log.with_suffix(".claims")),
        "PYTHONPATH": path,
    }
    command = [
        sys.executable, "-m", "bench.counted_worker", "worker", "--home", str(log.parent),
        "--concurrency", str(threads), "--poll-interval", str(poll),
    ]  # fmt: skip
    with log.open("wb") as out:
        # Started in its own directory: ``-m`` puts the working directory first on the path,
        # where this checkout's ``openseal`` would shadow the baseline's.
        process = subprocess.Popen(command, stdout=out, stderr=out, env=environment, cwd=log.parent)
    LOGS[process.pid] = log
    return process


def completed(store: Store) -> int:
    runs = schema.runs
    with store.read() as conn:
        stmt = sa.select(sa.func.count()).where(runs.c.status == "completed")
        return int(conn.execute(stmt).scalar() or 0)


def wait_for(check: object, timeout: float, *processes: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        for process in processes:
            if process.poll() is not None:
                log = LOGS.get(process.pid)
                tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log else []
                raise RuntimeError(f"a worker exited with {process.returncode}: {tail}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s")
        time.sleep(0.02)
