"""workers: PostgreSQL throughput with 1, 2 and 4 worker processes, and no double execution.

The way to scale past one machine is many ``openseal worker`` processes sharing one
PostgreSQL (claims with ``FOR UPDATE SKIP LOCKED``, wake-ups by ``LISTEN/NOTIFY``). Each
configuration gets a fresh scratch schema and K worker processes (``--concurrency 1``), started
and idle before N objectives of an I/O-bound workflow are created: transform → action calling
``bench.skills:slow`` (a ``write`` skill that waits 20 ms, as a remote call would) → end. The
time runs from the first objective created to the last run completed.

* runs/s for each K, and the ratio of K = 2 and K = 4 to one worker. Target at 4: ≥ 3.5×.
* worker CPU per run: user + system time of the worker processes during the batch ÷ N; on
  a machine with fewer cores than workers (plus the database server) this is what caps K = 4.
* double executions: the skill appends its argument (unique per run) to a file with one
  ``O_APPEND`` write per call; any argument seen twice was executed twice. Target: 0.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import time
from pathlib import Path

import sqlalchemy as sa

from bench.compiler import openseal_command
from bench.harness import Figure, Options, Report, Target, compare, summarize, unavailable
from bench.postgres import scratch_schema
from bench.runtime_support import action_workflow, compiled, engine_problem
from bench.scale import cpu_seconds
from bench.skills import EXECUTIONS_ENV
from openseal.runtime.store import Store, open_store, schema

NAME = "workers"
WORKFLOW = "slow_steps"
REPOSITORY = Path(__file__).resolve().parents[1]
WORKER_COUNTS = (1, 2, 4)
#: each worker process's log, by pid (quoted when a worker exits early)
LOGS: dict[int, Path] = {}
#: worker CPU milliseconds per run, by worker count, one sample per batch
CPU_PER_RUN: dict[int, list[float]] = {}


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
    report.parameters.update(runs=runs, repeat=repeat, skill_sleep_ms=20, concurrency=1)
    documents = compiled(options.workdir / "project", action_workflow("slow_record", WORKFLOW))
    rates: dict[int, list[float]] = {}
    duplicates = 0
    for count in WORKER_COUNTS:
        rates[count] = []
        for repetition in range(repeat):
            work = options.workdir / f"k{count}-{repetition}"
            seconds, doubled = measure(options.postgres_url, documents, work, count, runs)
            rates[count].append(runs / seconds)
            duplicates += doubled
    one: Figure | None = None
    for count in WORKER_COUNTS:
        name = f"{count} worker process{'es' if count > 1 else ''}: runs/s"
        target = Target(3.5, upper=False) if count == 4 else None
        figure = report.add(compare(name, "runs/s", summarize(rates[count]), one, target))
        one = one or figure
    for count in WORKER_COUNTS:
        report.add(
            compare(
                f"{count} worker(s): worker CPU per run", "ms", summarize(CPU_PER_RUN[count]),
                note="user + system time of the worker processes while the batch ran",
            )
        )  # fmt: skip
    report.parameters["cpu_count"] = os.cpu_count()
    report.add(
        compare(
            "double executions", "calls", summarize([float(duplicates)]),
            target=Target(0, on="value"),
            note=f"over {len(WORKER_COUNTS) * repeat} batches of {runs} runs",
        )
    )  # fmt: skip
    return report


def measure(
    url: str, documents: list[object], work: Path, count: int, runs: int
) -> tuple[float, int]:
    """Seconds for ``runs`` runs with ``count`` workers, and how many calls were repeated."""
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
                start_worker(work / f"worker-{i}.log", scoped, executions) for i in range(count)
            ]
            for i, process in enumerate(workers):
                wait_for(lambda i=i: b"started" in (work / f"worker-{i}.log").read_bytes(),
                         60, process)  # fmt: skip
            cpu = sum(cpu_seconds(p.pid) for p in workers)
            started = time.perf_counter()
            for i in range(runs):
                service.create_objective(
                    store, service.StartObjective(WORKFLOW, {"n": i}), service.CLI
                )
            wait_for(lambda: completed(store) >= runs, 120 + runs, *workers)
            seconds = time.perf_counter() - started
            CPU_PER_RUN.setdefault(count, []).append(
                (sum(cpu_seconds(p.pid) for p in workers) - cpu) / runs * 1000
            )
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
    calls = collections.Counter(executions.read_text().split())
    if len(calls) != runs:
        raise RuntimeError(f"{len(calls)} distinct runs executed their action, not {runs}")
    return seconds, sum(n - 1 for n in calls.values())


def start_worker(log: Path, url: str, executions: Path) -> subprocess.Popen[bytes]:
    environment = {
        **os.environ,
        "OPENSEAL_DATABASE_URL": url,
        EXECUTIONS_ENV: str(executions),
        "PYTHONPATH": str(REPOSITORY),
    }
    command = [*openseal_command(), "worker", "--home", str(log.parent), "--concurrency", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, env=environment)
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
