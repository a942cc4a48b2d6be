"""rate_limit: what a model profile's rate limit costs a call when it never binds.

A workflow of one model turn (the scripted provider, so the call itself costs nothing) is
worked off by one engine thread on fresh stores, SQLite and PostgreSQL when a server is
configured: without a declared limit, and with a ``rate_limit`` of requests and tokens no run
comes near on its model profile — every call takes its request and tokens from the shared
buckets and corrects its tokens after. Rounds of both are interleaved, so a change in the
machine's load falls on both:

* runs/s without and with the limit (the target: at least 0.9, at most 10 % overhead);
* write commits (each an fsync), all commits and statements per call both ways, and on
  PostgreSQL round trips, counted on a separate, untimed batch (the counters' listeners and
  the trace cost time of their own).

``python -m bench capacity`` reports the same figures after the caps' (1,000 runs a round);
``python -m bench rate_limit`` runs them alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench.generate import PREAMBLE_HCL
from bench.harness import Options, Report, Target, compare, summarize, unavailable
from bench.runtime_support import CommitCounter, compiled, engine_problem, loaded_store

NAME = "rate_limit"
#: runs counted for commits and statements per call (the counts do not vary by run)
COUNTED_RUNS = 20

#: one model turn, then the end
TURN_WORKFLOW = """workflow "asks" {
  owner = agent.helper
  start = state.ask
  state "ask" {
    turn {
      agent  = agent.helper
      goal   = "answer"
      output = object({ done = bool })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
"""
#: the model profile with a limit of requests and tokens that never binds
LIMITED_MODEL = PREAMBLE_HCL.replace(
    '  model    = "scripted-small"\n',
    '  model    = "scripted-small"\n'
    "  rate_limit {\n    requests = 1000000\n    tokens   = 1000000000\n"
    '    per      = "1s"\n  }\n',
)


@dataclass(frozen=True)
class Round:
    seconds: float  # per run, timed
    #: per call, counted: commits that wrote (each an fsync), all commits (reads' too),
    #: statements (``BEGIN`` included)
    writes: float
    commits: float
    statements: float
    #: per call, counted on PostgreSQL (None on SQLite): each waits for the server
    round_trips: float | None = None


def _round(workdir: Path, preamble: str, runs: int, url: str | None, *, counted: bool) -> Round:
    """``runs`` objectives of the one-turn workflow queued, then worked off by one thread."""
    from openseal.runtime import service
    from openseal.runtime.engine.engine import Engine
    from openseal.runtime.providers import ScriptedProvider, fixed

    provider = ScriptedProvider({"ask": [{"output": {"done": True}}]})
    documents = compiled(workdir / "project", TURN_WORKFLOW, preamble)
    with loaded_store(workdir / "home", documents, url) as store:
        for _ in range(runs):
            service.create_objective(store, service.StartObjective("asks", {}), service.CLI)
        engine = Engine(store, fixed(provider), worker_id="bench", batch_size=1)
        engine.run_until_idle(max_steps=1)  # warm: the catalog, the statements, the buckets
        counter = CommitCounter()
        traced = counted and url is not None
        if counted:
            counter.attach(store.engine)
        if traced:
            counter.trace_round_trips(store.engine, workdir / "trace")
        started = time.perf_counter()
        done = max(1, len(engine.run_until_idle(max_steps=runs + 10)))
        elapsed = time.perf_counter() - started
        if traced:
            counter.stop_tracing()
    return Round(
        elapsed / done,
        counter.writes / done,
        counter.commits / done,
        counter.statements / done,
        counter.round_trips() / done if traced else None,
    )


def measure(report: Report, options: Options, backend: str, url: str | None, runs: int) -> None:
    """The figures of one backend, added to ``report``."""
    free: list[Round] = []
    limited: list[Round] = []
    workdir = options.workdir / backend / "rate_limit"
    for round_ in range(options.repeat):  # interleaved
        at = workdir / f"r{round_}"
        free.append(_round(at / "free", PREAMBLE_HCL, runs, url, counted=False))
        limited.append(_round(at / "limited", LIMITED_MODEL, runs, url, counted=False))
    free_counted = _round(workdir / "counted-free", PREAMBLE_HCL, COUNTED_RUNS, url, counted=True)
    limited_counted = _round(
        workdir / "counted-limited", LIMITED_MODEL, COUNTED_RUNS, url, counted=True
    )
    plain = report.add(
        compare(
            f"{backend}: runs/s of a model turn without a rate limit", "runs/s",
            summarize([1 / r.seconds for r in free]),
        )
    )  # fmt: skip
    report.add(
        compare(
            f"{backend}: runs/s of a model turn with a rate limit that does not bind",
            "runs/s", summarize([1 / r.seconds for r in limited]), plain,
            Target(0.9, upper=False),
            note="requests and tokens taken and corrected on every call",
        )
    )  # fmt: skip
    for what, unit in (("writes", "write commits"), ("commits", "commits"),
                       ("statements", "statements"), ("round_trips", "round trips")):  # fmt: skip
        without, with_limit = getattr(free_counted, what), getattr(limited_counted, what)
        if without is None or with_limit is None:
            continue  # round trips: PostgreSQL only
        base = report.add(
            compare(
                f"{backend}: {unit} per model call without a rate limit", unit,
                summarize([without]),
                note=f"counted on {COUNTED_RUNS} runs of one call each",
            )
        )  # fmt: skip
        report.add(
            compare(
                f"{backend}: {unit} per model call with a rate limit that does not bind", unit,
                summarize([with_limit]), base,
            )
        )  # fmt: skip


def run(options: Options) -> Report:
    report = Report(NAME)
    runs = options.pick(quick=50, default=1_000, full=5_000)
    report.parameters.update(runs=runs, threads=1)
    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("runs/s of a model turn without a rate limit", problem, "runs/s"))
        return report
    backends: list[tuple[str, str | None]] = [("sqlite", None)]
    if options.postgres_url is not None:
        backends.append(("postgresql", options.postgres_url))
    for backend, url in backends:
        if options.backend is None or backend == options.backend:
            measure(report, options, backend, url, runs)
    return report
