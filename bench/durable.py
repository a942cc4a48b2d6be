"""durable: runs/s and turns/s of the engine against the SQLite floor and two peers.

N runs of a 3-step workflow — transform → action (a no-op ``python`` skill of effect
``write`` with same-key retry declared, dispatched as a governed action: drafted, admitted,
marked dispatched, called, recorded) → end — on SQLite WAL ``synchronous=FULL``, in one
process, three ways:

* concurrency 1: the N objectives created one by one (``service.create_objective``), then
  worked on by ``Engine.run_until_idle``;
* a ``Worker`` of :data:`CONCURRENCY` threads draining the same N objectives, their writes
  sharing commits (batches of :data:`BATCH_SIZE`, docs/decisions/0006);
* ``Engine.submit`` from :data:`CONCURRENCY` threads, each starting a run and working on it to
  the end before taking the next (the objective's creation, the claim and the first turn share
  one batch with the other threads' writes): the embedding that matches how the peers are
  driven (LangGraph's ``invoke``, DBOS starting its workflows in its own process); on
  PostgreSQL in batches of :data:`POSTGRES_BATCH_SIZE`, which pay more there than batches of
  8 (a batch's statements run one after the other on its connection);
* ``Engine.submit`` from one thread, each run started and finished before the next, as a
  peer's at concurrency 1 are (on SQLite, alternating with the peers too). The ratios at
  concurrency 1 take openseal's faster way of the two (created first, or submitted).

On PostgreSQL the counted ``Engine.submit`` batch also counts the round trips to the server
(each ``Sync`` or simple ``Query`` libpq sends, from its trace): a ``BEGIN`` or a
``SAVEPOINT`` travels with the next statement, so they are fewer than the statements.

The timed part is creating the N objectives and executing them, as the peers' timed part is
starting and finishing N workflows. Each repetition starts from a fresh database.

Commits: pure states (the transform and the end) run in the commit that saves them, so a run
costs the objective's creation, the claim (with the transform and the action's turn saved),
the action's admission and ``dispatched`` mark (invariant 7), and the settle (with the end):
4 for one thread alone (3 with ``Engine.submit``, whose creation shares the claim's commit),
fewer per run when several runs share them. The ceiling is the floor
(committed transactions/s, measured in this run) ÷ the write commits per turn observed. The
benchmark counts the commits and statements it observes rather than trusting that arithmetic,
and reports the worker's CPU per run (process time, so a loaded machine shows in wall time
rather than there).

Peers (in ``bench/.venv-peers``, installed by ``bench/peers/install.sh``): DBOS Transact 3.x
(one workflow of three steps) and LangGraph (three nodes, ``durability="sync"``), each at
concurrency 1 and in the ways of running many workflows at once that it offers: from 8
threads, and DBOS's queue and asyncio API, LangGraph's ``batch`` and ``ainvoke`` (see
:data:`PEER_CONFIGURATIONS`). On SQLite (DBOS's system database in a file, ``SqliteSaver``) and
on PostgreSQL (DBOS's system database and ``PostgresSaver`` each in a scratch database on the
server openseal's PostgreSQL batches use, dropped afterwards). Each peer's best is its
configuration with the most runs/s; the figure that counts is openseal's best (its fastest
configuration) ÷ the peer's best, with both at concurrency 1 in its note. Targets: on SQLite
≥ 3× each peer's best and ≥ 2× LangGraph at concurrency 1; on PostgreSQL ≥ 2× each peer's
best; commits per run ≤ 2 with a Worker's batches of 8. The report's notes list each target,
met or missed, and for a missed one the profile to read and the next step.

The ``Engine.submit`` figure and the peers' are measured in alternation: after one untimed
batch of openseal's, each repetition is one timed batch of ``Engine.submit``, then one of each
peer (its script run with ``--repeat 1`` in a process of its own, in a fresh directory, each
configuration after an untimed warm-up), so openseal, DBOS, LangGraph, openseal, DBOS,
LangGraph … (the order is kept in the report's ``interleaved`` parameter; on PostgreSQL, in
``postgres_interleaved``). On a shared machine the conditions drift over
minutes and move the two sides apart: ``Engine.submit`` is bound by the CPU, LangGraph by its
fsyncs, so repetitions measured minutes apart compare a fast CPU with a slow disk or the
reverse. Each comparison's note lists the ratio of every pair of repetitions (``Engine.submit``
÷ the peer), so their spread shows beside the ratio of the medians.

``OPENSEAL_BENCH_BASELINE=<git revision>`` also measures that revision: its ``openseal`` and
its own ``bench`` are extracted with ``git archive``, and before each repetition of the current
batches (SQLite at concurrency 1 and batched, PostgreSQL at both) one batch of the revision
runs in a subprocess, through its own ``bench.durable.Batch`` (its store, its migrations; see
:mod:`bench.durable_baseline`). Each such figure is reported with the ratio current ÷ baseline;
the PostgreSQL one at concurrency 1 has the target ≥ 2×. A revision whose ``Batch`` has no
concurrency runs its batched figure at concurrency 1, and the figure's note says so. The
``Engine.submit`` figure has no baseline: the driver runs a revision's create-then-work batches
only.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from tempfile import mkdtemp
from typing import Any

from bench.baseline import BASELINE_ENV, checkout
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
#: creating the objective, the claim (with the transform), the action's mark, the settle (with
#: the end): one thread alone, no batching
DESIGN_COMMITS_PER_RUN = 4
#: the batched configuration: worker threads, and runs whose writes share one commit at most
CONCURRENCY, BATCH_SIZE = 8, 8
#: on PostgreSQL, ``Engine.submit``'s batches: a batch runs its bodies one after the other on
#: one connection, each statement a round trip, while the server lets the commits of
#: concurrent connections share their WAL flushes; so smaller batches on more connections pay
#: there (batches of 2 and 4 measured 1.3–1.9× batches of 8 from 8 threads, in one run; 2
#: measured 1.2–1.4× 4, in three): the engine's default there
POSTGRES_BATCH_SIZE = 2
#: the batched configurations, as the peer comparison names them
WORKER_SETTING = f"a Worker of {CONCURRENCY} threads, batches of {BATCH_SIZE}"
SUBMIT_SETTING = f"Engine.submit from {CONCURRENCY} threads, batches of {BATCH_SIZE}"
POSTGRES_SUBMIT_SETTING = (
    f"Engine.submit from {CONCURRENCY} threads, batches of {POSTGRES_BATCH_SIZE}"
)
#: on SQLite, openseal's best runs/s (its fastest configuration) at least this many times
#: each peer's best
PEER_TARGETS = {"DBOS": 3.0, "LangGraph": 3.0}
#: on SQLite, openseal at concurrency 1 at least this many times the peer at concurrency 1
ALONE_TARGETS = {"LangGraph": 2.0}
#: on PostgreSQL, openseal's best at least this many times each peer's best
POSTGRES_PEER_TARGET = 2.0
#: each peer and the script that drives it (in ``bench/.venv-peers``), in the order they run
PEER_SCRIPTS = {"DBOS": "dbos_peer.py", "LangGraph": "langgraph_peer.py"}
#: the configurations each peer runs in (its script's names), concurrency 1 first: threads,
#: and what its documentation offers for running many workflows at once
PEER_CONFIGURATIONS = {
    "DBOS": ("c1", "threads", "queue", "async"),
    "LangGraph": ("c1", "threads", "batch", "async"),
}
#: how the report names each configuration
PEER_SETTINGS = {
    "c1": "concurrency 1",
    "threads": f"{CONCURRENCY} threads",
    "queue": f"its queue (worker_concurrency {CONCURRENCY})",
    "batch": f"batch() with max_concurrency {CONCURRENCY}",
    "async": f"its asyncio API, {CONCURRENCY} at once",
}
#: the cProfile a missed PostgreSQL target points to
POSTGRES_PROFILE = "PostgreSQL: openseal runs/s"
#: what to do next when a peer target is missed, by database
NEXT_STEPS = {
    "sqlite": "CPU per run is the limit (cpu_ms_per_run in the parameters): fewer objects, "
    "calls and statements per turn, the profile's top entries first",
    "postgres": "each statement is a round trip (statements_per_run in the postgres_* "
    "parameters): fewer statements per run and more runs per commit, then the profile's "
    "top entries",
}
#: what a baseline revision's batch runs: read as text and run in that revision's tree
BASELINE_DRIVER = Path(__file__).with_name("durable_baseline.py")


#: the number of the next batch's home directory
_HOMES = itertools.count(1)

#: a batched figure and the configuration that produced it
Configured = tuple[Figure, str]


@dataclass(frozen=True)
class Sample:
    """One repetition: wall seconds, turns, the commits counted, CPU seconds of the process."""

    seconds: float
    turns: int
    commits: CommitCounter
    cpu: float


class Batch:
    """One repetition: a fresh store, N objectives created and run to the end."""

    def __init__(
        self,
        options: Options,
        documents: list[Any],
        runs: int,
        postgres_url: str | None = None,
        *,
        concurrency: int = 1,
        batch_size: int = BATCH_SIZE,
        submit: bool = False,
        counted: bool = True,
        round_trips: bool = False,
    ) -> None:
        self.options = options
        self.documents = documents
        self.runs = runs
        self.postgres_url = postgres_url
        self.concurrency = concurrency
        self.batch_size = batch_size
        #: start and finish each run in-process with ``Engine.submit`` (from ``concurrency``
        #: threads) rather than creating every objective first and then working on them
        self.submit = submit
        #: count commits and statements (their listeners cost CPU on every statement)
        self.counted = counted
        #: also count round trips to PostgreSQL (libpq traces every message to a file)
        self.round_trips = round_trips

    def __call__(self) -> Sample:
        from openseal.runtime.engine.engine import Engine
        from openseal.runtime.engine.turns import TurnReport

        # numbered across batches: each repetition of each configuration has a store of its own
        home = self.options.workdir / f"durable-{next(_HOMES)}"
        turns: list[TurnReport] = []
        with loaded_store(home, self.documents, self.postgres_url) as store:
            commits = CommitCounter()
            if self.counted:
                commits.attach(store.engine)
            if self.round_trips:
                commits.trace_round_trips(store.engine, home / "trace")
            engine = Engine(store, on_turn=turns.append, batch_size=self.batch_size)
            started, cpu = time.perf_counter(), time.process_time()
            if self.submit:
                self.submit_all(engine)
            else:
                self.create_then_work(engine)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            commits.stop_tracing()
            ended = [t for t in turns if str(t.status) != "running"]
            unfinished = [t for t in ended if str(t.status) != "completed"]
            if unfinished or len(ended) != self.runs:
                detail = unfinished[0].detail if unfinished else f"{len(ended)} runs ended"
                raise RuntimeError(f"{self.runs - len(ended) + len(unfinished)} runs did not "
                                   f"complete: {detail}")  # fmt: skip
        return Sample(elapsed, len(turns), commits, cpu)

    def create_then_work(self, engine: Any) -> None:
        """Create every objective, then work on the runs: one thread alone, or a ``Worker``."""
        from openseal.runtime import service
        from openseal.runtime.engine.worker import Worker

        for i in range(self.runs):
            service.create_objective(engine.store, start_request(i), service.CLI)
        if self.concurrency == 1:
            engine.run_until_idle(max_steps=self.runs * 2)
        else:
            Worker(engine, concurrency=self.concurrency, mode="until_idle").run()

    def submit_all(self, engine: Any) -> None:
        """Start and finish each run in-process with ``Engine.submit``, from ``concurrency``
        threads taking the next run as each finishes one (as the peers start theirs)."""
        from openseal.runtime import service

        numbers = itertools.count()
        failures: list[BaseException] = []

        def submitting() -> None:
            try:
                while (i := next(numbers)) < self.runs:
                    engine.submit(start_request(i), service.CLI)
            except BaseException as exc:  # reported by the calling thread
                failures.append(exc)

        threads = [threading.Thread(target=submitting) for _ in range(self.concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]


def start_request(number: int) -> Any:
    from openseal.runtime import service

    return service.StartObjective("three_steps", {"n": number})


@dataclass(frozen=True)
class Baseline:
    """A revision's own ``openseal`` and ``bench``, extracted to ``tree``."""

    revision: str
    tree: Path

    def batch(self, like: Batch) -> dict[str, Any]:
        """One batch of the revision with ``like``'s runs, store and concurrency, run in a
        subprocess by its own code: seconds, cpu (or None), write_commits, concurrency."""
        spec = {
            "workdir": mkdtemp(prefix="batch-", dir=self.tree.parent),
            "runs": like.runs,
            "postgres_url": like.postgres_url,
            "concurrency": like.concurrency,
        }
        completed = subprocess.run(
            [sys.executable, "-c", BASELINE_DRIVER.read_text(), json.dumps(spec)],
            # its tree first on the path, and as the working directory (which ``-c`` puts
            # first), so that this checkout's packages do not shadow the revision's
            cwd=self.tree, env={**os.environ, "PYTHONPATH": str(self.tree)},
            capture_output=True, check=False, timeout=1800,
        )  # fmt: skip
        if completed.returncode != 0:
            lines = completed.stderr.decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"the {self.revision} batch failed: {lines[-1:]}")
        result: dict[str, Any] = json.loads(completed.stdout.decode().strip().splitlines()[-1])
        return result


def baseline_tree(report: Report, options: Options) -> Baseline | None:
    """The revision ``OPENSEAL_BENCH_BASELINE`` names, extracted; None when unset."""
    revision = os.environ.get(BASELINE_ENV)
    if not revision:
        return None
    report.parameters["baseline"] = revision
    tree = checkout(revision, options.workdir / "baseline" / "tree", ("openseal", "bench"))
    return Baseline(revision, tree)


def repetitions(
    batch: Batch, options: Options, baseline: Baseline | None
) -> tuple[list[Sample], list[dict[str, Any]]]:
    """A warm-up, then ``options.repeat`` samples of ``batch``, each after one batch of the
    baseline when there is one (old, new, old, new …: both under the same load)."""
    batch()  # warm-up: imports, compiled-workflow cache, first connections
    samples, old = [], []
    for _ in range(options.repeat):
        if baseline is not None:
            old.append(baseline.batch(batch))
        samples.append(batch())
    return samples, old


def versus_baseline(
    report: Report,
    current: Figure,
    batch: Batch,
    old: list[dict[str, Any]],
    baseline: Baseline | None,
    target: Target | None = None,
) -> None:
    """The baseline's figure beside ``current`` (measured by ``batch``), and the ratio
    current ÷ baseline."""
    if baseline is None:
        return
    assert current.stats is not None
    runs, last = batch.runs, old[-1]
    note = f"{last['write_commits'] / runs:.2f} write commits"
    cpu = last["cpu"]
    note += f", {1000 * cpu / runs:.2f} ms CPU per run" if cpu is not None else " per run"
    if last["concurrency"] != batch.concurrency:
        note += f"; concurrency {last['concurrency']}: its Batch has no concurrency parameter"
    old_figure = report.add(
        compare(
            f"{current.name} ({baseline.revision})", "runs/s",
            rates(runs, summarize([o["seconds"] for o in old])), note=note,
        )
    )  # fmt: skip
    report.add(
        compare(
            f"{current.name}: current ÷ {baseline.revision}", "runs/s", current.stats,
            old_figure, target,
        )
    )  # fmt: skip


def per_run(
    report: Report, key: str, sample: Sample, runs: int, counted: Sample | None = None
) -> dict[str, float]:
    """Commits and statements per run of ``counted`` (by default ``sample``) and CPU per run
    of ``sample``, kept in the report's parameters."""
    commits = (counted or sample).commits
    figures = {
        "write_commits_per_run": commits.writes / runs,
        "statements_per_run": commits.statements / runs,
        "read_transactions_per_run": (commits.commits - commits.writes) / runs,
        "cpu_ms_per_run": 1000 * sample.cpu / runs,
    }
    if commits.traced:
        figures["round_trips_per_run"] = commits.round_trips() / runs
    report.parameters[key] = figures
    return figures


def per_run_note(figures: dict[str, float]) -> str:
    trips = figures.get("round_trips_per_run")
    return (
        f"{figures['write_commits_per_run']:.2f} write commits, "
        f"{figures['statements_per_run']:.1f} statements, "
        + (f"{trips:.1f} round trips, " if trips is not None else "")
        + f"{figures['cpu_ms_per_run']:.2f} ms CPU per run"
    )


def configuration(concurrency: int, batch_size: int) -> str:
    if concurrency == 1:
        return "concurrency 1"
    return f"concurrency {concurrency}, batches of {batch_size}"


def measure_openseal(
    report: Report,
    options: Options,
    floor: Figure,
    baseline: Baseline | None,
    peers: list[Peer],
) -> tuple[list[Configured], Figure | None]:
    """The batched figures, each with its configuration, and the figure of one thread alone
    (none when not measured); the ``peers``' repetitions alternate with ``Engine.submit``'s
    (or run alone when the engine cannot)."""
    problem = engine_problem()
    if problem is not None:
        report.add(unavailable("openseal runs/s", problem, "runs/s"))
        report.add(unavailable("openseal turns/s", problem, "turns/s"))
        interleave(report, options, None, peers)
        return [], None
    with_action = action_supported()
    workflow = ACTION_WORKFLOW if with_action else TRANSFORM_WORKFLOW
    shape = "transform → action(noop python skill) → end" if with_action else (
        "transform → transform → end (the engine has no `action` handler yet)"
    )  # fmt: skip
    report.parameters["workflow"] = shape
    documents = compiled(options.workdir / "project", workflow)
    runs = batch_runs(options)
    report.parameters["runs"] = runs
    report.parameters["concurrency"], report.parameters["batch_size"] = CONCURRENCY, BATCH_SIZE
    alone = Batch(options, documents, runs)
    samples, old = repetitions(alone, options, baseline)
    one = per_run(report, "concurrency_1", samples[-1], runs)
    alone_figure = report.add(
        compare(
            "openseal runs/s, concurrency 1", "runs/s",
            rates(runs, summarize([s.seconds for s in samples])), note=per_run_note(one),
        )
    )  # fmt: skip
    versus_baseline(report, alone_figure, alone, old, baseline)
    batched = Batch(options, documents, runs, concurrency=CONCURRENCY)
    samples, old = repetitions(batched, options, baseline)
    many = per_run(report, "batched", samples[-1], runs)
    ours = report.add(
        compare(
            "openseal runs/s", "runs/s", rates(runs, summarize([s.seconds for s in samples])),
            note=f"{shape}; {configuration(CONCURRENCY, BATCH_SIZE)}: {per_run_note(many)}",
        )
    )  # fmt: skip
    versus_baseline(report, ours, batched, old, baseline)
    report.add(
        compare(
            "write commits per run (batched)", "commits",
            summarize([s.commits.writes / runs for s in samples]),
            target=Target(2, on="value"),
        )
    )  # fmt: skip
    turns = samples[-1].turns
    per_turn = samples[-1].commits.writes / turns
    report.parameters.update(
        turns_per_run=turns / runs,
        write_commits_per_run=many["write_commits_per_run"],
        design_write_commits_per_run=DESIGN_COMMITS_PER_RUN,
    )
    assert floor.stats is not None
    ceiling = report.add(
        compare(
            "ceiling: floor ÷ commits per turn",
            "turns/s",
            scaled(floor.stats, 1 / per_turn),
            note=f"{per_turn:.2f} write commits per turn observed (batched; one thread alone: "
            f"{DESIGN_COMMITS_PER_RUN}/{STEPS} = {DESIGN_COMMITS_PER_RUN / STEPS:.2f})",
        )
    )
    report.add(
        compare(
            "openseal turns/s", "turns/s",
            summarize([s.turns / s.seconds for s in samples]), ceiling,
        )
    )  # fmt: skip
    if not options.quick:
        # cProfile sees the calling thread only: one thread alone is what it can show
        small = Batch(options, documents, max(50, runs // 10))
        report.profiles["openseal runs/s"] = profile_text(small, top=25)
    submitted, single = measure_submit(report, options, documents, shape, peers)
    # at concurrency 1, openseal's faster way: created first and worked on, or started and
    # finished one by one as a peer's are (LangGraph's invoke)
    alone_best = max((alone_figure, single), key=lambda f: f.stats.median if f.stats else 0)
    return [(ours, WORKER_SETTING), (submitted, SUBMIT_SETTING)], alone_best


def measure_submit(
    report: Report, options: Options, documents: list[Any], shape: str, peers: list[Peer]
) -> tuple[Figure, Figure]:
    """Runs started and finished in-process with ``Engine.submit`` from :data:`CONCURRENCY`
    threads and from one, as the peers are driven (LangGraph's ``invoke``, DBOS starting its
    workflows in its process), each repetition followed by one of each of the ``peers`` (see
    :func:`interleave`); the two figures. Not compared to a baseline revision: its driver runs
    the other batches only.

    The peers' runs pay for no instruments, so neither do these: the timed batches count
    nothing, and one more batch, untimed, counts the commits and statements."""
    runs = report.parameters["runs"]
    submitting = Batch(
        options, documents, runs, concurrency=CONCURRENCY, submit=True, counted=False
    )
    one_by_one = Batch(options, documents, runs, submit=True, counted=False)
    singles: list[Sample] = []
    samples = interleave(report, options, submitting, peers, alongside=[(one_by_one, singles)])
    single = report.add(
        compare(
            "openseal runs/s, Engine.submit from 1 thread", "runs/s",
            rates(runs, summarize([s.seconds for s in singles])),
            note=f"{shape}; concurrency 1, each run started and finished before the next, as "
            "a peer's are; its repetitions alternate with the peers'",
        )
    )  # fmt: skip
    counted = Batch(options, documents, runs, concurrency=CONCURRENCY, submit=True)()
    figures = per_run(report, "submit", samples[-1], runs, counted)
    submitted = report.add(
        compare(
            f"openseal runs/s, Engine.submit from {CONCURRENCY} threads", "runs/s",
            rates(runs, summarize([s.seconds for s in samples])),
            note=f"{shape}; batches of {BATCH_SIZE}: {per_run_note(figures)}",
        )
    )  # fmt: skip
    return submitted, single


def fastest(batched: list[Configured]) -> tuple[Stats, str] | None:
    """The runs/s of the configuration with the most, and that configuration (None when none
    was measured)."""
    measured = [(figure.stats, setting) for figure, setting in batched if figure.stats]
    return max(measured, key=lambda item: item[0].median, default=None)


def batch_runs(options: Options) -> int:
    """The runs of a SQLite batch of openseal's."""
    return options.pick(quick=20, default=1000)


def peer_runs(options: Options) -> int:
    """The runs of each configuration of a peer's repetition (fewer than openseal's: a peer
    runs four configurations per repetition, and its slowest does 3–50 runs/s on a busy
    2-core machine). The figures compared are rates, each after an untimed warm-up."""
    return options.pick(quick=10, default=100)


def peer_command(
    script: str,
    directory: Path,
    runs: int,
    configurations: tuple[str, ...],
    postgres: str | None = None,
) -> list[str]:
    """One repetition of a peer's ``configurations`` (each after its untimed warm-up), its
    databases in ``directory``, or with ``postgres`` a scratch database on that server."""
    command = [
        str(PEERS_VENV / "bin" / "python"),
        str(PEERS_DIRECTORY / script),
        "--runs", str(runs),
        "--repeat", "1",
        "--dir", str(directory),
        "--configurations", ",".join(configurations),
    ]  # fmt: skip
    if postgres is not None:
        command += ["--postgres", postgres]
    return command


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as libpq (and so the peers) spell it."""
    import sqlalchemy as sa

    parsed = sa.make_url(url).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


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


class PeerFailed(RuntimeError):
    """A peer's repetition did not run; the message says why."""


def measure_peer(
    peer: Peer, options: Options, runs: int, repetition: int, postgres: str | None
) -> dict[str, Any]:
    """One repetition of ``peer``'s configurations, in a process of its own and a fresh
    directory: what its script printed (``seconds`` holds one timed batch per configuration,
    beside its versions and pragmas)."""
    where = "postgres" if postgres else "sqlite"
    directory = options.workdir / "peers" / f"{Path(peer.script).stem}-{where}-{repetition}"
    directory.mkdir(parents=True)
    command = peer_command(peer.script, directory, runs, peer.configurations, postgres)
    completed = subprocess.run(command, capture_output=True, check=False, timeout=1800)
    if completed.returncode != 0:
        lines = completed.stderr.decode(errors="replace").strip().splitlines()
        raise PeerFailed(lines[-1] if lines else f"exit status {completed.returncode}")
    data: dict[str, Any] = json.loads(completed.stdout.decode().strip().splitlines()[-1])
    return data


@dataclass
class Peer:
    """A peer's repetitions so far, on SQLite or (``postgres``: the server's URL) PostgreSQL:
    seconds per batch of runs by configuration, and what its last one printed beside them; or
    why it does not run (not installed, or a repetition that failed)."""

    name: str
    script: str
    problem: str | None = None
    postgres: str | None = None
    seconds: dict[str, list[float]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def configurations(self) -> tuple[str, ...]:
        return PEER_CONFIGURATIONS[self.name]

    @property
    def repetitions(self) -> int:
        return min((len(found) for found in self.seconds.values()), default=0)

    def repetition(self, options: Options, runs: int) -> bool:
        """One more repetition unless one has failed already; whether it ran."""
        if self.problem is not None:
            return False
        try:
            self.data = measure_peer(self, options, runs, self.repetitions, self.postgres)
        except PeerFailed as failed:
            self.problem = f"peer failed: {failed}"
            return False
        for configuration, seconds in self.data["seconds"].items():
            self.seconds.setdefault(configuration, []).extend(seconds)
        return True

    def described(self) -> str:
        database = (
            f"PostgreSQL {self.data.get('postgresql')}"
            if self.postgres
            else f"SQLite {self.data.get('sqlite')}"
        )
        checkpointer = self.data.get("checkpointer")
        saver = f", checkpointer {checkpointer}" if checkpointer else ""
        return f"{self.name} {self.data.get('version')}{saver}, {database}"

    def figures(self, runs: int, prefix: str = "") -> tuple[Figure, Figure]:
        """Its figure at concurrency 1 and its best (the configuration with the most runs/s,
        each configuration tried listed in the note), or both not available with the reason;
        every configuration's figure is returned by :meth:`tried`."""
        alone = f"{prefix}{self.name} runs/s, concurrency 1"
        best = f"{prefix}{self.name} runs/s, its best"
        if self.problem is not None or not self.seconds:
            reason = self.problem or "not measured"
            return unavailable(alone, reason, "runs/s"), unavailable(best, reason, "runs/s")
        measured = {c: rates(runs, summarize(s)) for c, s in self.seconds.items() if s}
        top = max(measured, key=lambda c: measured[c].median)
        tried = "; ".join(
            f"{PEER_SETTINGS[c]} {measured[c].median:.1f}" for c in self.configurations
            if c in measured
        )  # fmt: skip
        note = f"{self.described()}; {runs} runs per configuration; runs/s tried: {tried}"
        return (
            compare(alone, "runs/s", measured["c1"], note=self.described()),
            compare(best, "runs/s", measured[top], note=f"{PEER_SETTINGS[top]}: {note}"),
        )

    def best_setting(self) -> str | None:
        """The configuration of its best figure (the fewest seconds per batch), as the report
        names it."""
        measured = {c: summarize(s).median for c, s in self.seconds.items() if s}
        if self.problem is not None or not measured:
            return None
        return PEER_SETTINGS[min(measured, key=lambda c: measured[c])]


def interleave(
    report: Report,
    options: Options,
    submitting: Callable[[], Sample] | None,
    peers: list[Peer],
    key: str = "interleaved",
    alongside: Sequence[tuple[Callable[[], Sample], list[Sample]]] = (),
) -> list[Sample]:
    """``options.repeat`` samples of ``submitting`` (after one untimed), each followed by one
    repetition of each peer (all its configurations): openseal, DBOS, LangGraph, openseal …
    so that each pair compared is measured under the same conditions (the CPU and the disk of
    a shared machine drift over minutes, each side bound by one of them). The order they ran
    in is kept in the report's ``key`` parameter; ``submitting`` None runs the peers alone.
    Each of ``alongside`` (a batch and the list its samples go to) runs right after
    ``submitting``, in the same repetitions."""
    runs = peer_runs(options)
    if submitting is not None:
        submitting()  # warm-up: imports, compiled-workflow cache, first connections
    samples: list[Sample] = []
    order: list[str] = []
    for _ in range(options.repeat):
        if submitting is not None:
            samples.append(submitting())
            order.append("openseal")
        for batch, found in alongside:
            found.append(batch())
        order.extend(peer.name for peer in peers if peer.repetition(options, runs))
    report.parameters[key] = order
    return samples


def measure_postgres(
    report: Report,
    options: Options,
    baseline: Baseline | None,
    peers: list[Peer],
) -> list[Configured]:
    """The same batches on PostgreSQL (a scratch schema per repetition) — one thread alone, a
    Worker, and ``Engine.submit`` from threads whose repetitions alternate with the
    ``peers``' on the same server — each with its configuration; the ratio to a baseline
    revision's at concurrency 1."""
    name = "PostgreSQL: openseal runs/s"
    if options.postgres_url is None:
        report.add(unavailable(name, "no PostgreSQL server reachable", "runs/s"))
        return []
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
    report.parameters["postgres_runs"] = runs
    configured: list[Configured] = []
    for concurrency in (1, CONCURRENCY):
        batch = Batch(options, documents, runs, options.postgres_url, concurrency=concurrency)
        samples, old = repetitions(batch, options, baseline)
        setting = configuration(concurrency, BATCH_SIZE)
        figures = per_run(report, f"postgres_concurrency_{concurrency}", samples[-1], runs)
        commits = figures["write_commits_per_run"]
        described = "one thread alone" if concurrency == 1 else WORKER_SETTING
        ours = report.add(
            compare(
                f"{name}, {setting}", "runs/s",
                rates(runs, summarize([s.seconds for s in samples])),
                note=f"{runs} runs, {described}: {per_run_note(figures)}",
            )
        )  # fmt: skip
        configured.append((ours, "concurrency 1" if concurrency == 1 else WORKER_SETTING))
        # the throughput target: twice the runs/s of the revision before that work
        target = Target(2, upper=False) if concurrency == 1 else None
        versus_baseline(report, ours, batch, old, baseline, target)
        assert floor.stats is not None
        report.add(
            compare(
                f"PostgreSQL: ceiling (floor ÷ commits per run), {setting}", "runs/s",
                scaled(floor.stats, 1 / commits),
            )
        )  # fmt: skip
    submitting = Batch(
        options, documents, runs, options.postgres_url, concurrency=CONCURRENCY, submit=True,
        counted=False, batch_size=POSTGRES_BATCH_SIZE,
    )  # fmt: skip
    samples = interleave(report, options, submitting, peers, key="postgres_interleaved")
    counted = Batch(
        options, documents, runs, options.postgres_url, concurrency=CONCURRENCY, submit=True,
        batch_size=POSTGRES_BATCH_SIZE, round_trips=True,
    )()  # fmt: skip
    figures = per_run(report, "postgres_submit", samples[-1], runs, counted)
    submitted = report.add(
        compare(
            f"{name}, Engine.submit from {CONCURRENCY} threads", "runs/s",
            rates(runs, summarize([s.seconds for s in samples])),
            note=f"{runs} runs, batches of {POSTGRES_BATCH_SIZE}: {per_run_note(figures)}",
        )
    )  # fmt: skip
    configured.append((submitted, POSTGRES_SUBMIT_SETTING))
    if not options.quick:
        # the profile a missed PostgreSQL target points to: one thread alone, as cProfile sees
        small = Batch(options, documents, max(50, runs // 10), options.postgres_url)
        report.profiles[POSTGRES_PROFILE] = profile_text(small, top=25)
    return configured


def versus_peer(
    name: str,
    peer: Figure,
    best: tuple[Stats, str] | None,
    alone: tuple[Figure | None, Figure] | None = None,
    *,
    target: float | None = None,
    prefix: str = "",
) -> Figure:
    """openseal's best runs/s (``best``, with its configuration) against the peer's best,
    with the target, and both figures at concurrency 1 (``alone``: openseal's, the peer's)
    and their ratio in the note; not available, with the reason, when either was not
    measured."""
    versus = f"{prefix}openseal's best ÷ {name}'s best"
    bound = Target(PEER_TARGETS[name] if target is None else target, upper=False)
    if best is None:
        reason = engine_problem() or "openseal not measured"
        return unavailable(versus, reason, "runs/s", bound)
    if peer.stats is None:  # the peer's figure says why, already as "not available: ..."
        return unavailable(versus, peer.note.removeprefix("not available: "), "runs/s", bound)
    rate, setting = best
    note = f"openseal: {setting}; {name}: {peer.note.split(':', 1)[0]}"
    if alone is not None and alone[0] is not None and alone[0].stats and alone[1].stats:
        ours, theirs = alone[0].stats.median, alone[1].stats.median
        note += (
            f"; at concurrency 1: openseal {ours:.1f}, {name} {theirs:.1f} runs/s "
            f"({ours / theirs:.2f}×)"
        )
    return compare(versus, "runs/s", rate, peer, bound, note=note)


def compare_peers(
    report: Report,
    options: Options,
    peers: list[Peer],
    best: tuple[Stats, str] | None,
    alone: Figure | None,
    *,
    postgres: bool = False,
    submitted: Figure | None = None,
) -> None:
    """Each peer's figures (concurrency 1, its best) and openseal's best ÷ its best, with the
    targets (and ``submitted`` ÷ the peer's best repetition by repetition: they alternated);
    on SQLite also openseal ÷ the peer at concurrency 1."""
    prefix = "PostgreSQL: " if postgres else ""
    for measured in peers:
        name = measured.name
        peer_alone, peer_best = measured.figures(peer_runs(options), prefix)
        report.add(peer_alone)
        report.add(peer_best)
        if measured.problem is None and measured.data:
            described = {k: v for k, v in measured.data.items() if k != "seconds"}
            report.parameters[f"{'postgres_' if postgres else ''}peer_{name.lower()}"] = {
                **described,
                "best": measured.best_setting(),
                "runs_per_s": {
                    c: [peer_runs(options) / s for s in found]
                    for c, found in measured.seconds.items()
                },
            }
        target = POSTGRES_PEER_TARGET if postgres else None
        versus = versus_peer(
            name, peer_best, best, (alone, peer_alone), target=target, prefix=prefix
        )
        paired = paired_ratios(submitted, peer_best)
        if paired:
            listed = ", ".join(f"{ratio:.2f}×" for ratio in paired)
            versus = replace(
                versus,
                note=f"{versus.note}; Engine.submit ÷ {name}'s best, repetition by repetition "
                f"(they alternated): {listed}",
            )
        report.add(versus)
        if not postgres and alone is not None and alone.stats is not None and peer_alone.stats:
            bound = ALONE_TARGETS.get(name)
            report.add(
                compare(
                    f"openseal ÷ {name}, both at concurrency 1", "runs/s", alone.stats,
                    peer_alone, Target(bound, upper=False) if bound else None,
                    note=f"openseal: {alone.name}",
                )
            )  # fmt: skip


def summarize_targets(report: Report) -> None:
    """One note per peer target — met or missed, the ratio — and for a missed one the profile
    to read and the next step."""
    for figure in report.figures:
        if (
            figure.target is None
            or figure.target.upper
            or not figure.name.endswith(("'s best", "both at concurrency 1"))
        ):
            continue
        bound = figure.target.describe(figure.unit)
        if figure.met is None:
            report.notes.append(f"target {figure.name} {bound}: not measured ({figure.note})")
            continue
        ratio = f"{figure.ratio:.2f}×" if figure.ratio is not None else "?"
        if figure.met:
            report.notes.append(f"target {figure.name} {bound}: met, {ratio}")
            continue
        postgres = figure.name.startswith("PostgreSQL")
        profile = POSTGRES_PROFILE if postgres else "openseal runs/s"
        step = NEXT_STEPS["postgres" if postgres else "sqlite"]
        report.notes.append(
            f"target {figure.name} {bound}: MISSED, {ratio}; profile: profiles[{profile!r}] in "
            f"bench/results/durable.json; next step: {step}"
        )


def paired_ratios(ours: Figure | None, peer: Figure) -> list[float]:
    """``ours`` ÷ ``peer``, repetition by repetition (their samples alternated); none unless
    both have every repetition."""
    if ours is None or ours.stats is None or peer.stats is None:
        return []
    if ours.stats.count != peer.stats.count:
        return []
    return [a / b for a, b in zip(ours.stats.samples, peer.stats.samples, strict=True)]


def run(options: Options) -> Report:
    report = Report(NAME)
    floor = report.add(measure_floor(options))
    baseline = baseline_tree(report, options)
    problem = ensure_peers(options)
    peers = [Peer(name, script, problem) for name, script in PEER_SCRIPTS.items()]
    batched, alone = measure_openseal(report, options, floor, baseline, peers)
    candidates = batched + ([(alone, "concurrency 1")] if alone is not None else [])
    best = fastest(candidates)
    if best is not None:
        report.parameters["peer_comparison"] = best[1]
    submitted = next((figure for figure, setting in batched if setting == SUBMIT_SETTING), None)
    compare_peers(report, options, peers, best, alone, submitted=submitted)
    if engine_problem() is None:
        server = libpq_url(options.postgres_url) if options.postgres_url else None
        on_postgres = [
            Peer(name, script, problem or (None if server else "no PostgreSQL server"), server)
            for name, script in PEER_SCRIPTS.items()
        ]
        configured = measure_postgres(report, options, baseline, on_postgres)
        if configured:
            best_postgres = fastest(configured)
            if best_postgres is not None:
                report.parameters["postgres_peer_comparison"] = best_postgres[1]
            alone_postgres, submitted_postgres = configured[0][0], configured[-1][0]
            compare_peers(
                report, options, on_postgres, best_postgres, alone_postgres, postgres=True,
                submitted=submitted_postgres,
            )  # fmt: skip
    summarize_targets(report)
    return report
