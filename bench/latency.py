"""latency: how long starting work takes, in process.

* ``objective start``: ``service.create_objective`` (inputs checked, objective and first run
  committed) on SQLite WAL ``synchronous=FULL``; p50 and p95 of M starts per repetition,
  median over repetitions. Target p95 ≤ 5 ms. Baseline: p50 of one floor transaction
  (insert an event, update a row) measured the same way in this run.
* ``start → first turn claimed``: from the create call until an in-process engine holds the
  run's lease (no polling delay: the claim is made right after the create).
* ``approval → dispatch`` and ``recovery after SIGKILL``: not available until approvals,
  actions and the crash harness exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.harness import Options, Report, Target, compare, percentile, summarize, unavailable
from bench.runtime_support import TRANSFORM_WORKFLOW, compiled, engine_problem, loaded_store
from bench.sqlite_floor import sqlite_store, store_transaction

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
    report.add(unavailable("approval → dispatch", "approvals and actions have no handler yet"))
    report.add(
        unavailable(
            "recovery after SIGKILL",
            "not measured yet: needs the crash-boundary harness (takeover waits for the lease)",
        )
    )
    return report


def measure_starts(report: Report, options: Options, count: int) -> None:
    from openseal.runtime.engine import Engine
    from openseal.runtime.service import create_objective

    documents = compiled(options.workdir / "project", TRANSFORM_WORKFLOW)
    with loaded_store(options.workdir / "home", documents) as store:
        counter = iter(range(10**9))

        def start() -> None:
            create_objective(store, "three_steps", {"n": next(counter)})

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
            claim = store.claim_run(engine.worker_id)
            if claim is None:
                raise RuntimeError("the run just created was not claimable")
            store.release(claim)

        p50, p95 = distribution(start_and_claim, count, options.repeat)
        report.add(compare("start → claimed p50", "ms", summarize(p50), baseline))
        report.add(compare("start → claimed p95", "ms", summarize(p95), baseline))
