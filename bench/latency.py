"""latency: how long starting work takes, in process.

* ``objective start``: ``service.create_objective`` (inputs checked, objective and first run
  committed) on SQLite WAL ``synchronous=FULL``; p50 and p95 of M starts per repetition,
  median over repetitions. Target p95 ≤ 5 ms. Baseline: p50 of one floor transaction
  (insert an event, update a row) measured the same way in this run.
* ``start → first turn claimed``: from the create call until an in-process engine holds the
  run's lease (no polling delay: the claim is made right after the create).
* ``approval → dispatch``: runs wait at an approval; each is approved with
  ``service.decide_approval`` and the time from that call returning to the action's
  ``dispatched_at`` is taken. Decisions are made one at a time, each after the previous
  action settled. Measured with the engine in a worker thread of this process (SQLite), and
  with an ``openseal worker`` in another process (default 1 s poll) on SQLite, woken by a
  datagram, and on PostgreSQL, woken by ``NOTIFY``. Target p95 ≤ 100 ms.
* ``recovery after SIGKILL``: an ``openseal worker`` process stops at the named point
  ``turn.started`` (the turn is saved, nothing executed) and is killed with SIGKILL; a second
  worker process, already running, takes the run over when the lease expires and completes
  the turn. Measured from the kill, and from the lease's expiry, to that turn's completion,
  on SQLite and on PostgreSQL. Target: the lease (2 s here) + ≤ 1 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa

from bench.compiler import openseal_command
from bench.harness import Options, Report, Target, compare, percentile, summarize, unavailable
from bench.runtime_support import (
    ACTION_WORKFLOW,
    APPROVAL_WORKFLOW,
    TRANSFORM_WORKFLOW,
    compiled,
    engine_problem,
    loaded_store,
    start_run,
)
from bench.sqlite_floor import sqlite_store, store_transaction
from openseal.runtime.statuses import TERMINAL_RUN_STATUSES, RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema

T = TypeVar("T")
REPOSITORY = Path(__file__).resolve().parents[1]

NAME = "latency"


def timings(fn: Callable[[], object], count: int) -> list[float]:
    """Milliseconds of each of ``count`` calls."""
    out = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def distribution(fn: Callable[[], object], count: int, repeat: int) -> tuple[list[float], ...]:
    """Per repetition: (p50, p95) of ``count`` calls, after one untimed warm-up batch."""
    timings(fn, max(5, count // 10))
    p50s, p95s = [], []
    for _ in range(repeat):
        samples = timings(fn, count)
        p50s.append(percentile(samples, 0.50))
        p95s.append(percentile(samples, 0.95))
    return p50s, p95s


def run(options: Options) -> Report:
    report = Report(NAME)
    count = options.pick(quick=20, default=200)
    report.parameters.update(starts_per_repetition=count, repeat=options.repeat)

    from bench.sqlite_floor import floor_states, metadata

    with sqlite_store(options.workdir / "floor") as store:
        metadata.create_all(store.engine)
        with store.write() as conn:
            conn.execute(floor_states.insert().values(id="r", seq=0))
        floor_p50, _ = distribution(store_transaction(store, "r"), count, options.repeat)
    report.add(compare("floor transaction p50", "ms", summarize(floor_p50)))

    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("objective start p50", problem, "ms"))
        report.add(unavailable("objective start p95", problem, "ms", Target(5, on="value")))
    else:
        measure_starts(report, options, count)
    if problem is None:
        measure_approval_dispatch(report, options, None, in_process=True)
        measure_approval_dispatch(report, options, None, in_process=False)
        if options.postgres_url is None:
            for name in ("p50", "p95"):
                report.add(
                    unavailable(
                        f"approval → dispatched {name}, PostgreSQL, worker process",
                        "no PostgreSQL server reachable", "ms",
                    )
                )  # fmt: skip
        else:
            measure_approval_dispatch(report, options, options.postgres_url, in_process=False)
        measure_recovery(report, options, None)
        if options.postgres_url is None:
            report.add(unavailable("recovery, PostgreSQL", "no PostgreSQL server reachable", "s"))
        else:
            measure_recovery(report, options, options.postgres_url)
    return report


def measure_starts(report: Report, options: Options, count: int) -> None:
    from openseal.runtime import service
    from openseal.runtime.engine.engine import Engine

    documents = compiled(options.workdir / "project", TRANSFORM_WORKFLOW)
    with loaded_store(options.workdir / "home", documents) as store:
        counter = iter(range(10**9))

        def start() -> None:
            service.create_objective(
                store, service.StartObjective("three_steps", {"n": next(counter)}), service.CLI
            )

        p50, p95 = distribution(start, count, options.repeat)
        baseline = report.figures[0]
        report.add(compare("objective start p50", "ms", summarize(p50), baseline))
        report.add(
            compare("objective start p95", "ms", summarize(p95), baseline, Target(5, on="value"))
        )
        engine = Engine(store)
        while engine.run_until_idle():  # drain, so every claim below takes the new run
            pass

        def start_and_claim() -> None:
            start()
            claim = store.leases.claim(engine.worker_id)
            if claim is None:
                raise RuntimeError("the run just created was not claimable")
            store.leases.release(claim)

        p50, p95 = distribution(start_and_claim, count, options.repeat)
        report.add(compare("start → claimed p50", "ms", summarize(p50), baseline))
        report.add(compare("start → claimed p95", "ms", summarize(p95), baseline))


def measure_approval_dispatch(
    report: Report, options: Options, postgres_url: str | None, *, in_process: bool
) -> None:
    """Decision returned → action ``dispatched``, with a worker thread in this process or an
    ``openseal worker`` process."""
    from openseal.runtime import service
    from openseal.runtime.actions.approvals import ApprovalAuthority
    from openseal.runtime.engine.engine import Engine

    count = options.pick(quick=10, default=50)
    report.parameters["approvals_per_repetition"] = count
    authority = ApprovalAuthority(local_operator=True)
    backend = "SQLite" if postgres_url is None else "PostgreSQL"
    where = "in-process worker thread" if in_process else "worker process"
    work = options.workdir / f"approvals-{backend}-{'thread' if in_process else 'process'}"
    documents = compiled(work / "project", APPROVAL_WORKFLOW)
    with loaded_store(work / "home", documents, postgres_url) as store:
        engine = Engine(store, worker_id="bench-approvals")
        worker: threading.Thread | subprocess.Popen[bytes]
        if in_process:
            worker = threading.Thread(target=engine.run_forever, kwargs={"poll_interval": 1.0})
            worker.start()
        else:
            log = work / "worker.log"
            worker = worker_process(work / "home", log, store_environment(store), lease=30)
            until(lambda: b"started" in log.read_bytes(), 60)
        try:
            p50s, p95s = [], []
            for repetition in range(options.repeat + 1):  # the first is a warm-up
                runs = [
                    start_run(store, "approve_then_act", {"n": repetition * count + i})
                    for i in range(count)
                ]
                until(partial(all_wait_for_approval, store, [r.id for r in runs]), 120)
                samples = []
                for run in runs:
                    [approval] = service.list_approvals(store, run_id=run.id)
                    service.decide_approval(
                        store,
                        authority,
                        service.ApprovalDecision(approval.id, "approve", approval.proposal_hash),
                        service.CLI,
                    )
                    decided = time.time()
                    dispatched = until(partial(dispatched_at, store, run.id), 30)
                    samples.append((dispatched - decided) * 1000)
                    until(partial(finished, store, run.id), 30)
                if repetition:
                    p50s.append(percentile(samples, 0.50))
                    p95s.append(percentile(samples, 0.95))
        finally:
            if isinstance(worker, threading.Thread):
                engine.stop()
                worker.join(timeout=30)
            else:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=30)
    name = "approval → dispatched" if in_process else f"approval → dispatched, {backend}, {where}"
    note = f"{where}, {backend}, 1 s poll"
    report.add(compare(f"{name} p50", "ms", summarize(p50s), note=note))
    report.add(compare(f"{name} p95", "ms", summarize(p95s), target=Target(100, on="value")))


def until(check: Callable[[], T | None], timeout: float) -> T:
    """Poll ``check`` every millisecond until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s")
        time.sleep(0.001)


def all_wait_for_approval(store: Store, run_ids: list[str]) -> bool:
    return all(store.runs.get(i).status == RunStatus.WAITING_FOR_APPROVAL for i in run_ids)


def dispatched_at(store: Store, run_id: str) -> float | None:
    """When the run's action was marked dispatched (epoch seconds), once it was."""
    with store.read() as conn:
        found = conn.execute(
            sa.select(schema.actions.c.dispatched_at).where(schema.actions.c.run_id == run_id)
        ).scalar()
    return None if found is None else float(found.timestamp())


def finished(store: Store, run_id: str) -> bool:
    return store.runs.get(run_id).status in TERMINAL_RUN_STATUSES


# -- recovery after SIGKILL -------------------------------------------------------------

LEASE_SECONDS = 2.0


def measure_recovery(report: Report, options: Options, postgres_url: str | None) -> None:
    """SIGKILL a worker process mid-turn; time until another worker process completes it."""
    repeats = options.repeat
    since_kill, since_expiry = [], []
    backend = "SQLite" if postgres_url is None else "PostgreSQL"
    for repetition in range(repeats):
        work = options.workdir / f"recovery-{backend}-{repetition}"
        took, after_expiry = recover_once(work, postgres_url)
        since_kill.append(took)
        since_expiry.append(after_expiry)
    note = f"lease {LEASE_SECONDS:g} s, heartbeat every {LEASE_SECONDS / 3:.2f} s, {backend}"
    report.parameters["recovery_lease_seconds"] = LEASE_SECONDS
    suffix = "" if postgres_url is None else ", PostgreSQL"
    report.add(
        compare(
            f"recovery: kill → turn completed{suffix}", "s", summarize(since_kill),
            target=Target(LEASE_SECONDS + 1, on="value"), note=note,
        )
    )  # fmt: skip
    report.add(
        compare(
            f"recovery: lease expiry → turn completed{suffix}", "s", summarize(since_expiry),
            target=Target(1, on="value"),
        )
    )  # fmt: skip


def worker_process(
    home: Path, log: Path, env: Mapping[str, str], lease: float = LEASE_SECONDS
) -> subprocess.Popen[bytes]:
    command = [
        *openseal_command(), "worker", "--home", str(home), "--lease-seconds", str(lease),
    ]  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY), **env}
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=out, env=environment)


def store_environment(store: Store) -> dict[str, str]:
    """What a worker process needs to open ``store``: nothing for SQLite (its home), the URL
    with the store's scratch schema for PostgreSQL."""
    if store.dialect != "postgresql":
        return {}
    with store.read() as conn:
        search_path = str(conn.exec_driver_sql("SHOW search_path").scalar())
    url = store.engine.url.update_query_dict({"options": f"-csearch_path={search_path}"})
    return {"OPENSEAL_DATABASE_URL": url.render_as_string(hide_password=False)}


def recover_once(work: Path, postgres_url: str | None) -> tuple[float, float]:
    """(seconds from the kill, seconds from the lease's expiry) to the turn's completion."""

    documents = compiled(work / "project", ACTION_WORKFLOW)
    home, faults = work / "home", work / "faults"
    faults.mkdir(parents=True)
    with loaded_store(home, documents, postgres_url) as store:
        environment = store_environment(store)
        doomed = worker_process(
            home, work / "doomed.log",
            {**environment, "OPENSEAL_FAULT_POINT": "turn.started",
             "OPENSEAL_FAULT_DIR": str(faults)},
        )  # fmt: skip
        rescuer: subprocess.Popen[bytes] | None = None
        try:
            run = start_run(store, "three_steps", {"n": 1})
            until(lambda: (faults / "turn.started.reached").exists(), 60)
            rescuer = worker_process(home, work / "rescuer.log", environment)
            until(lambda: b"started" in (work / "rescuer.log").read_bytes(), 60)
            doomed.send_signal(signal.SIGKILL)
            killed = time.time()
            doomed.wait(timeout=30)
            held = store.runs.get(run.id)
            expires, state = held.lease_expires_at, held.current_state
            assert expires is not None and state is not None, "the killed worker held no lease"
            completed = until(lambda: turn_completed(store, run.id, state), 60)
        finally:
            for process in (doomed, rescuer):
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    process.wait(timeout=30)
    return completed - killed, completed - expires.timestamp()


def turn_completed(store: Store, run_id: str, state: str) -> float | None:
    """When a turn of ``state`` completed: the replacement of the killed one (the pure states
    before it completed in the claim's commit, before the kill)."""
    turns = schema.turns
    with store.read() as conn:
        found = conn.execute(
            sa.select(turns.c.finished_at).where(
                turns.c.run_id == run_id, turns.c.state == state, turns.c.status == "completed"
            )
        ).scalar()
    return None if found is None else float(found.timestamp())
