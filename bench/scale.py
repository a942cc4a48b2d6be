"""scale: many runs waiting — what they cost in bytes, worker memory and worker CPU.

An ``openseal worker`` process is started on a fresh SQLite store; N objectives of a workflow
whose first state waits for an event that never comes are created (10,000; 100,000 with
``--full``); the worker drives each run to ``waiting_for_event``. Then:

* database bytes per waiting run: growth of the used pages (after a WAL checkpoint) ÷ N.
  Target ≤ 2 KB. One measurement (it is a size, not a timing).
* worker RSS before (store empty) and after (all runs waiting), from ``/proc``.
* worker CPU while everything waits, as % of one core over 1-second windows (median of 5),
  against the same worker idle on the empty store. Waiting should cost nothing: the worker
  holds no lease and only polls.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import sqlalchemy as sa

from bench.compiler import openseal_command
from bench.harness import Options, Report, Target, compare, summarize, unavailable
from bench.runtime_support import WAIT_WORKFLOW, compiled, engine_problem, loaded_store
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema

NAME = "scale"
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def used_bytes(database: Path) -> int:
    """Bytes of pages in use, after folding the WAL into the database file."""
    conn = sqlite3.connect(database, isolation_level=None)  # a checkpoint needs no transaction
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size, pages, free = (
            int(conn.execute(f"PRAGMA {name}").fetchone()[0])
            for name in ("page_size", "page_count", "freelist_count")
        )
    finally:
        conn.close()
    return (pages - free) * page_size


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def cpu_percent(pid: int, windows: int, seconds: float) -> list[float]:
    """% of one core the process used in each of ``windows`` windows of ``seconds``."""
    out = []
    for _ in range(windows):
        cpu, wall = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)  # the measurement window itself
        out.append(100 * (cpu_seconds(pid) - cpu) / (time.monotonic() - wall))
    return out


def wait_until(check: object, timeout: float, what: str, worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if worker.poll() is not None:
            raise RuntimeError(f"the worker exited with {worker.returncode} while {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s while {what}")
        time.sleep(0.2)


def waiting_count(store: Store) -> int:
    with store.read() as conn:
        stmt = sa.select(sa.func.count()).where(schema.runs.c.status == "waiting_for_event")
        return int(conn.execute(stmt).scalar() or 0)


def count_rows(store: Store, table: sa.Table) -> int:
    with store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0)


def run(options: Options) -> Report:
    report = Report(NAME)
    runs = options.pick(quick=30, default=10_000, full=100_000)
    windows, window = (2, 0.5) if options.quick else (5, 1.0)
    report.parameters.update(waiting_runs=runs, cpu_windows=windows, window_seconds=window)
    problem = engine_problem()
    if problem is not None:
        for name, unit in (("bytes per waiting run", "B"), ("worker RSS after", "MiB")):
            report.add(unavailable(name, problem, unit))
        return report
    from openseal.runtime import service

    home = options.workdir / "home"
    documents = compiled(options.workdir / "project", WAIT_WORKFLOW)
    with loaded_store(home, documents) as store:
        before = used_bytes(home / "openseal.db")
        log = (options.workdir / "worker.log").open("wb")
        command = [*openseal_command(), "worker", "--home", str(home), "--poll-interval", "1"]
        worker = subprocess.Popen(command, stdout=log, stderr=log, cwd=options.workdir)
        try:
            logged = options.workdir / "worker.log"
            wait_until(lambda: b"started" in logged.read_bytes(), 60, "starting", worker)
            rss_before = rss_mib(worker.pid)
            idle = summarize(cpu_percent(worker.pid, windows, window))
            started = time.perf_counter()
            for i in range(runs):
                service.create_objective(
                    store, service.StartObjective("waits", {"n": i}), service.CLI
                )
            wait_until(
                lambda: waiting_count(store) >= runs,
                120 + runs * 0.05,
                f"driving {runs} runs to waiting",
                worker,
            )
            report.parameters["seconds_to_all_waiting"] = round(time.perf_counter() - started, 1)
            report.parameters["events_per_waiting_run"] = count_rows(store, schema.events) / runs
            report.parameters["turns_per_waiting_run"] = count_rows(store, schema.turns) / runs
            rss_after = rss_mib(worker.pid)
            busy = summarize(cpu_percent(worker.pid, windows, window))
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            log.close()
        after = used_bytes(home / "openseal.db")
    per_run = (after - before) / runs
    figure = report.add(
        compare(
            "bytes per waiting run",
            "B",
            summarize([per_run]),
            target=Target(2048, on="value"),
            note=f"{runs} runs; used pages after a WAL checkpoint, one measurement",
        )
    )
    if figure.met is False and not options.quick:
        report.profiles[figure.name] = table_sizes(home / "openseal.db", runs)
    base_rss = report.add(compare("worker RSS before", "MiB", summarize([rss_before])))
    report.add(compare("worker RSS after", "MiB", summarize([rss_after]), base_rss))
    base_cpu = report.add(compare("worker CPU, store empty", "%", idle))
    report.add(compare(f"worker CPU, {runs} runs waiting", "%", busy, base_cpu))
    return report


def table_sizes(database: Path, runs: int) -> str:
    """Bytes per waiting run by table and index (SQLite's ``dbstat``), largest first."""
    conn = sqlite3.connect(database)
    try:
        rows = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    except sqlite3.Error as exc:
        return f"no per-table sizes: {exc}"
    finally:
        conn.close()
    # tables the waiting runs do not touch hold one page each: leave them out
    return "\n".join(
        f"{name:40} {size / runs:10.1f} B/run" for name, size in rows if size / runs >= 1
    )
