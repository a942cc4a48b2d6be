"""capacity: what concurrency caps cost a claim when no cap binds.

The benchmark's transform workflow (pure states, so one claim runs a run to its end in one
commit) is run twice on fresh SQLite stores (and PostgreSQL, when a server is configured):
without a cap, and with ``concurrency = 100000`` on the workflow and an operator's cap as large
on the default scope — two caps every claim takes a slot of and none ever binds. N objectives
are queued, then one engine thread works them off (``run_until_idle``):

* runs/s without caps, and with caps (its ratio to the first: the target is at least 0.9, at
  most 10 % overhead);
* claim cost: the milliseconds one claim (with its run's whole work) takes, both ways;
* the statements (and on PostgreSQL the round trips) each claim sends, both ways, counted in
  a round of their own (up to 200 runs): on a loaded machine a round trip's wait, not the
  database's work, is most of a claim's time on PostgreSQL, and counts do not vary with load.

Fair claiming across scopes: a backlog of N runs of one scope, then N/20 runs of another
created after it (the worst case for the look past the busy scope: every run of the other
scope sits behind the whole backlog), worked off by one engine thread with fair claiming on
and off: the claim cost (milliseconds and statements per claim) and how many claims it took
until the last run of the other scope started.

Then the same for a rate limit (:mod:`bench.rate_limit`, which ``python -m bench rate_limit``
runs alone).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from bench import rate_limit
from bench.harness import Options, Report, Target, compare, summarize, unavailable
from bench.runtime_support import (
    TRANSFORM_WORKFLOW,
    CommitCounter,
    compiled,
    engine_problem,
    loaded_store,
)

NAME = "capacity"
CAP = 100_000


def capped_workflow() -> str:
    """The transform workflow with a cap no run reaches on it and on its owner."""
    text = TRANSFORM_WORKFLOW.replace(
        'workflow "three_steps" {', f'workflow "three_steps" {{\n  concurrency = {CAP}'
    )
    return text


@dataclasses.dataclass(frozen=True)
class Counted:
    statements: float  # per claim
    round_trips: float | None  # per claim (PostgreSQL)


def _work_off(
    workdir: Path, workflow: str, runs: int, url: str | None, counted: bool = False
) -> tuple[float, Counted | None]:
    """Seconds per run of ``runs`` objectives queued, then worked off; with ``counted``, the
    statements and round trips each claim sent too (counting costs time: a round of its own)."""
    from openseal.runtime import service
    from openseal.runtime.engine.engine import Engine

    documents = compiled(workdir / "project", workflow)
    with loaded_store(workdir / "home", documents, url) as store:
        if workflow is not TRANSFORM_WORKFLOW:
            # the scope gets a cap too: two keys per claim
            store.capacity.set("scope:default", by="bench", max_slots=CAP)
        for n in range(runs):
            request = service.StartObjective("three_steps", {"n": n})
            service.create_objective(store, request, service.CLI)
        engine = Engine(store, worker_id="bench", batch_size=1)
        engine.run_until_idle(max_steps=1)  # warm: the catalog and statements
        counter = CommitCounter()
        if counted:
            counter.attach(store.engine)
            if url is not None:
                counter.trace_round_trips(store.engine, workdir / "trace")
        started = time.perf_counter()
        done = engine.run_until_idle(max_steps=runs + 10)
        elapsed = time.perf_counter() - started
        claims = max(1, len(done))
        if not counted:
            return elapsed / claims, None
        counter.stop_tracing()
        trips = None if url is None else counter.round_trips() / claims
        return elapsed / claims, Counted(counter.statements / claims, trips)


def _rounds(
    options: Options, workdir: Path, workflow: str, runs: int, url: str | None
) -> list[float]:
    """Seconds per run of each round: ``runs`` objectives queued, then worked off."""
    return [
        _work_off(workdir / f"round{round_}", workflow, runs, url)[0]
        for round_ in range(options.repeat)
    ]


def _counts(report: Report, backend: str, workdir: Path, runs: int, url: str | None) -> None:
    """Statements (and on PostgreSQL round trips) per claim without caps and with them."""
    off = _work_off(workdir / "off", TRANSFORM_WORKFLOW, runs, url, counted=True)[1]
    on = _work_off(workdir / "on", capped_workflow(), runs, url, counted=True)[1]
    assert off is not None and on is not None
    counted = (
        ("statements", off.statements, on.statements),
        ("round trips", off.round_trips, on.round_trips),  # None on SQLite
    )
    for unit, without, with_caps in counted:
        if without is None or with_caps is None:
            continue
        name = f"{backend}: {unit} per claim"
        plain = report.add(compare(f"{name} without caps", unit, summarize([without])))
        report.add(compare(f"{name} with caps", unit, summarize([with_caps]), plain))


@dataclasses.dataclass(frozen=True)
class FairRound:
    seconds: float  # per claim
    statements: float  # per claim
    #: claims made until the last run of the second scope started
    last_calm: int


def _fair_round(workdir: Path, runs: int, url: str | None, *, fair: bool) -> FairRound:
    from openseal.runtime import service
    from openseal.runtime.engine.engine import Engine

    documents = compiled(workdir / "project", TRANSFORM_WORKFLOW)
    with loaded_store(workdir / "home", documents, url) as store:
        calm = set()
        for n in range(runs + runs // 20):
            scope = "flood" if n < runs else "calm"
            request = service.StartObjective("three_steps", {"n": n}, scope=scope)
            created = service.create_objective(store, request, service.CLI)
            if scope == "calm" and created.run is not None:
                calm.add(created.run.id)
        if not fair:  # the plain order: the look past a busy scope is never made
            store.leases._fair.looks = lambda: []  # type: ignore[method-assign]
        engine = Engine(store, worker_id="bench", batch_size=1)
        counter = CommitCounter()
        counter.attach(store.engine)
        started = time.perf_counter()
        done = engine.run_until_idle(max_steps=runs * 2 + 10)
        elapsed = time.perf_counter() - started
        order = [report.run_id for report in done]
        last = max(i for i, run_id in enumerate(order, 1) if run_id in calm)
        claims = max(1, len(done))
        return FairRound(elapsed / claims, counter.statements / claims, last)


def _fair(report: Report, options: Options, backend: str, url: str | None, runs: int) -> None:
    on: list[FairRound] = []
    off: list[FairRound] = []
    for round_ in range(options.repeat):  # interleaved, as above
        at = options.workdir / backend / f"fair{round_}"
        off.append(_fair_round(at / "off", runs, url, fair=False))
        on.append(_fair_round(at / "on", runs, url, fair=True))
    cost = report.add(
        compare(
            f"{backend}: claim cost with a busy scope, fair claiming off", "ms",
            summarize([r.seconds * 1e3 for r in off]),
        )
    )  # fmt: skip
    report.add(
        compare(
            f"{backend}: claim cost with a busy scope, fair claiming on", "ms",
            summarize([r.seconds * 1e3 for r in on]), cost,
        )
    )  # fmt: skip
    statements = report.add(
        compare(
            f"{backend}: statements per claim, fair claiming off", "statements",
            summarize([r.statements for r in off]),
        )
    )  # fmt: skip
    report.add(
        compare(
            f"{backend}: statements per claim, fair claiming on", "statements",
            summarize([r.statements for r in on]), statements,
        )
    )  # fmt: skip
    for name, rounds in (("off", off), ("on", on)):
        report.add(
            compare(
                f"{backend}: claims until the other scope's last run started, fair claiming "
                f"{name}", "claims", summarize([float(r.last_calm) for r in rounds]),
                note=f"{runs} runs of the busy scope ahead of {runs // 20} of another",
            )
        )  # fmt: skip


def run(options: Options) -> Report:
    report = Report(NAME)
    runs = options.pick(quick=50, default=1_000, full=5_000)
    report.parameters.update(runs=runs, cap=CAP, threads=1)
    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("runs/s without caps", problem, "runs/s"))
        return report
    backends: list[tuple[str, str | None]] = [("sqlite", None)]
    if options.postgres_url is not None:
        backends.append(("postgresql", options.postgres_url))
    for backend, url in backends:
        if options.backend is not None and backend != options.backend:
            continue
        _fair(report, options, backend, url, runs)
        workdir = options.workdir / backend
        _counts(report, backend, workdir / "counted", min(runs, 200), url)
        # interleaved, so that a change in the machine's load falls on both
        off: list[float] = []
        on: list[float] = []
        rounds = dataclasses.replace(options, repeat=1)
        for round_ in range(options.repeat):
            at = workdir / f"r{round_}"
            off += _rounds(rounds, at / "off", TRANSFORM_WORKFLOW, runs, url)
            on += _rounds(rounds, at / "on", capped_workflow(), runs, url)
        base = report.add(
            compare(f"{backend}: runs/s without caps", "runs/s", summarize([1 / s for s in off]))
        )
        report.add(
            compare(
                f"{backend}: runs/s with caps that do not bind", "runs/s",
                summarize([1 / s for s in on]), base, Target(0.9, upper=False),
                note="two caps per claim (workflow, scope), each far from full",
            )
        )  # fmt: skip
        cost = report.add(
            compare(f"{backend}: claim cost without caps", "ms", summarize([s * 1e3 for s in off]))
        )
        report.add(
            compare(
                f"{backend}: claim cost with caps", "ms", summarize([s * 1e3 for s in on]), cost
            )
        )
        rate_limit.measure(report, options, backend, url, runs)
    return report
