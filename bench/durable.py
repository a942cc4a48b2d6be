"""durable: runs/s and turns/s of the engine against the SQLite floor and two peers.

N runs of a 3-step workflow — transform → action (a no-op ``python`` skill of effect
``write`` with same-key retry declared, dispatched as a governed action: drafted, admitted,
marked dispatched, called, recorded) → end — on SQLite WAL ``synchronous=FULL``, one
in-process worker (``Engine.run_until_idle``). The timed part is creating the N objectives
and executing them, as the peers' timed part is starting and finishing N workflows. Each
repetition starts from a fresh database.

Ceiling: the floor (committed transactions/s, measured in this run) ÷ the write commits one
turn costs. Each turn needs one commit of its own: its outcome is applied with its event, and
the next turn is saved (persist before acting, invariant 2) in that same commit; the claim
saves the run's first turn. An action adds one: its admission and ``dispatched`` mark, saved
before the skill is called (invariant 7); a settled outcome is recorded in the commit that
advances the run (invariant 8 holds: if that commit is refused, the outcome is recorded on its
own). Creating the objective is one more. So 3 + 1 + 1 (create) + 1 (claim) = 6 per run. The
benchmark counts the commits it observes rather than trusting that arithmetic.

Peers (in ``bench/.venv-peers``, installed by ``bench/peers/install.sh``): DBOS Transact 3.x
on SQLite (one workflow of three steps) and LangGraph with ``SqliteSaver`` (three nodes,
``durability="sync"``). Target: openseal runs/s ≥ 3× each. The same batch also runs on
PostgreSQL when a server is reachable (reported, no target).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import (
    Figure,
    Options,
    Report,
    Stats,
    Target,
    compare,
    profile_text,
    rates,
    scaled,
    summarize,
    unavailable,
)
from bench.postgres import scratch_schema
from bench.runtime_support import (
    ACTION_WORKFLOW,
    TRANSFORM_WORKFLOW,
    CommitCounter,
    action_supported,
    compiled,
    engine_problem,
    loaded_store,
)
from bench.sqlite_floor import measure_floor, measure_store
from openseal.runtime.store import open_store

NAME = "durable"
PEERS_DIRECTORY = Path(__file__).parent / "peers"
PEERS_VENV = Path(__file__).parent / ".venv-peers"
STEPS = 3
#: one per turn, one more for the action, one for creating the objective, one for the claim
DESIGN_COMMITS_PER_RUN = STEPS + 1 + 1 + 1


class Batch:
    """One repetition: a fresh store, N objectives created and run to the end."""

    def __init__(
        self,
        options: Options,
        documents: list[Any],
        runs: int,
        postgres_url: str | None = None,
    ) -> None:
        self.options = options
        self.documents = documents
        self.runs = runs
        self.postgres_url = postgres_url
        self.counter = 0

    def __call__(self) -> tuple[float, int, CommitCounter]:
        import time

        from openseal.runtime import service
        from openseal.runtime.engine import Engine

        self.counter += 1
        home = self.options.workdir / f"durable-{self.counter}"
        with loaded_store(home, self.documents, self.postgres_url) as store:
            commits = CommitCounter()
            commits.attach(store.engine)
            engine = Engine(store)
            started = time.perf_counter()
            for i in range(self.runs):
                service.create_objective(
                    store, service.StartObjective("three_steps", {"n": i}), service.CLI
                )
            reports = engine.run_until_idle(max_steps=self.runs * 2)
            elapsed = time.perf_counter() - started
            turns = sum(len(r.turns) for r in reports)
            unfinished = [r for r in reports if str(r.status) != "completed"]
            if unfinished:
                last = unfinished[0].turns[-1] if unfinished[0].turns else None
                detail = last.detail if last else unfinished[0].ending
                raise RuntimeError(f"{len(unfinished)} runs did not complete: {detail}")
        return elapsed, turns, commits


def measure_openseal(report: Report, options: Options, floor: Figure) -> Figure | None:
    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("openseal runs/s", problem, "runs/s"))
        report.add(unavailable("openseal turns/s", problem, "turns/s"))
        return None
    with_action = action_supported()
    workflow = ACTION_WORKFLOW if with_action else TRANSFORM_WORKFLOW
    shape = "transform → action(noop python skill) → end" if with_action else (
        "transform → transform → end (the engine has no `action` handler yet)"
    )  # fmt: skip
    report.parameters["workflow"] = shape
    documents = compiled(options.workdir / "project", workflow)
    runs = options.pick(quick=20, default=1000)
    report.parameters["runs"] = runs
    batch = Batch(options, documents, runs)
    batch()  # warm-up: imports, compiled-workflow cache, first connections
    samples = [batch() for _ in range(options.repeat)]
    run_rates = rates(runs, summarize([s for s, _, _ in samples]))
    turns = samples[-1][1]
    turn_rates = summarize([t / s for s, t, _ in samples])
    writes = samples[-1][2].writes
    per_turn = writes / turns
    report.parameters.update(
        turns_per_run=turns / runs,
        write_commits_per_run=writes / runs,
        design_write_commits_per_run=DESIGN_COMMITS_PER_RUN,
        read_transactions_per_run=(samples[-1][2].commits - writes) / runs,
    )
    ours = report.add(compare("openseal runs/s", "runs/s", run_rates, note=shape))
    assert floor.stats is not None
    ceiling = report.add(
        compare(
            "ceiling: floor ÷ commits per turn",
            "turns/s",
            scaled(floor.stats, 1 / per_turn),
            note=f"{per_turn:.2f} write commits per turn observed "
            f"(design: {DESIGN_COMMITS_PER_RUN}/{STEPS} = {DESIGN_COMMITS_PER_RUN / STEPS:.2f})",
        )
    )
    report.add(compare("openseal turns/s", "turns/s", turn_rates, ceiling))
    if not options.quick:
        small = Batch(options, documents, max(50, runs // 10))
        report.profiles["openseal runs/s"] = profile_text(small, top=25)
    return ours


def peer_command(script: str, options: Options, runs: int) -> list[str]:
    return [
        str(PEERS_VENV / "bin" / "python"),
        str(PEERS_DIRECTORY / script),
        "--runs", str(runs),
        "--repeat", str(options.repeat),
        "--dir", str(options.workdir),
    ]  # fmt: skip


def ensure_peers(options: Options) -> str | None:
    """Why the peers cannot run, or None; installs them on a full-size run when missing."""
    if (PEERS_VENV / "bin" / "python").exists():
        return None
    if options.quick:
        return "peers not installed (run `bash bench/peers/install.sh`)"
    install = subprocess.run(
        ["bash", str(PEERS_DIRECTORY / "install.sh"), sys.executable],
        capture_output=True,
        check=False,
    )
    if install.returncode != 0 or not (PEERS_VENV / "bin" / "python").exists():
        log = PEERS_VENV / "install.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        return f"peer installation failed: {' '.join(tail) or install.returncode}"
    return None


def measure_peer(name: str, script: str, options: Options) -> tuple[Figure, dict[str, Any]]:
    runs = options.pick(quick=20, default=1000)
    problem = ensure_peers(options)
    if problem is not None:
        return unavailable(f"{name} runs/s", problem, "runs/s"), {}
    completed = subprocess.run(
        peer_command(script, options, runs), capture_output=True, check=False, timeout=1800
    )
    if completed.returncode != 0:
        lines = completed.stderr.decode(errors="replace").strip().splitlines()
        reason = lines[-1] if lines else f"exit status {completed.returncode}"
        return unavailable(f"{name} runs/s", f"peer failed: {reason}", "runs/s"), {}
    data: dict[str, Any] = json.loads(completed.stdout.decode().strip().splitlines()[-1])
    seconds: Stats = summarize(data["seconds"])
    described = f"{name} {data.get('version')}, SQLite {data.get('sqlite')}"
    return compare(f"{name} runs/s", "runs/s", rates(runs, seconds), note=described), data


def measure_postgres(report: Report, options: Options) -> None:
    """The same batch on PostgreSQL (a scratch schema per repetition); reported, no target."""
    name = "PostgreSQL: openseal runs/s"
    if options.postgres_url is None:
        report.add(unavailable(name, "no PostgreSQL server reachable", "runs/s"))
        return
    with scratch_schema(options.postgres_url) as connect_args:
        store = open_store(
            options.postgres_url, home=options.workdir / "pg-floor", auto_migrate=True,
            connect_args=connect_args,
        )  # fmt: skip
        try:
            floor = report.add(measure_store("PostgreSQL floor (SQLAlchemy)", store, options))
        finally:
            store.close()
    documents = compiled(options.workdir / "project", ACTION_WORKFLOW)
    runs = options.pick(quick=20, default=500)
    batch = Batch(options, documents, runs, options.postgres_url)
    batch()  # warm-up
    samples = [batch() for _ in range(options.repeat)]
    per_run = samples[-1][2].writes / runs
    report.parameters["postgres_runs"] = runs
    report.parameters["postgres_write_commits_per_run"] = per_run
    report.add(
        compare(
            name, "runs/s", rates(runs, summarize([s for s, _, _ in samples])),
            note=f"{runs} runs, one in-process worker, {per_run:.2f} write commits per run",
        )
    )  # fmt: skip
    assert floor.stats is not None
    report.add(
        compare(
            "PostgreSQL: ceiling (floor ÷ commits per run)", "runs/s",
            scaled(floor.stats, 1 / per_run),
        )
    )  # fmt: skip


def run(options: Options) -> Report:
    report = Report(NAME)
    floor = report.add(measure_floor(options))
    ours = measure_openseal(report, options, floor)
    for name, script in (("DBOS", "dbos_peer.py"), ("LangGraph", "langgraph_peer.py")):
        peer, data = measure_peer(name, script, options)
        report.add(peer)
        if data:
            report.parameters[f"peer_{name.lower()}"] = {k: v for k, v in data.items()
                                                         if k != "seconds"}  # fmt: skip
        versus = f"openseal runs/s vs {name}"
        if ours is None or ours.stats is None:
            reason = ours.note if ours is not None else engine_problem() or "openseal not measured"
            report.add(unavailable(versus, reason, "runs/s", Target(3, upper=False)))
        elif peer.stats is None:
            report.add(unavailable(versus, peer.note, "runs/s", Target(3, upper=False)))
        else:
            report.add(compare(versus, "runs/s", ours.stats, peer, Target(3, upper=False)))
    if engine_problem() is None:
        measure_postgres(report, options)
    return report
