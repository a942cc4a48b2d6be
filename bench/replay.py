"""replay: recorded runs re-driven through a version per second — no model, no tool, no effect.

The procurement example's runs are recorded first by an engine of 4 threads with the scripted
model and the procurement simulator (quantities 3 to 17 laptops; a quarter each approved,
rejected, left waiting and approved again), and that rate is the baseline. Then:

* ``check``: every run re-driven through its own pinned version (``openseal replay --check``);
* ``proposal``: every run re-driven through a change that tightens the buyer's binding
  constraint from 20000 to 10000 EUR (``openseal proposals replay``).

On SQLite, and on PostgreSQL when one is reachable. No target yet: the figure is new.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.harness import Options, Report, compare, rates, repeat_timed, summarize, unavailable
from bench.runtime_support import loaded_store

NAME = "replay"
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "definitions" / "procurement"
TOKEN, TOKEN_ENV = "bench-token-not-a-secret", "OPENSEAL_BENCH_PROCUREMENT_TOKEN"
PICK = {"vendor": "northwind", "unit_price": 1149.0, "currency": "EUR"}
DECISIONS = ("approve", "reject", None, "approve")
BUDGET = 15000
CONSTRAINT, TIGHTER = "args.total <= 20000", "args.total <= 10000"


def definitions(workdir: Path, name: str, constraint: str) -> dict[str, Any]:
    """The example's documents, with a team budget no order reaches and ``constraint``."""
    from openseal.compiler.pipeline import compile_paths

    root = workdir / name
    shutil.copytree(EXAMPLE, root)
    (root / ".git").mkdir()
    team = root / "hcl" / "team.hcl"
    text = team.read_text(encoding="utf-8").replace("spend    = 250000", "spend    = 1000000000")
    team.write_text(text.replace(CONSTRAINT, constraint), encoding="utf-8")
    result = compile_paths(sorted((root / "hcl").glob("*.hcl")))
    assert result.ok, [d.message for d in result.diagnostics]
    return dict(result.documents)


def record(store: Any, workdir: Path, url: str, count: int) -> float:
    """``count`` recorded runs; the seconds the engine took to work them."""
    from openseal.runtime import service
    from openseal.runtime.actions.approvals import ApprovalAuthority
    from openseal.runtime.engine.engine import Engine
    from openseal.runtime.providers import ScriptedProvider, fixed
    from openseal.skills.credentials import RuntimeContext

    context = workdir / "context.yaml"
    context.write_text(
        f"credentials:\n  procurement_api: {{env: {TOKEN_ENV}}}\n"
        f"config:\n  procurement_url: {url}\n",
        encoding="utf-8",
    )
    provider = ScriptedProvider({"research#1": [{"output": PICK}]})
    engine = Engine(store, fixed(provider), context=RuntimeContext.load(context))
    runs = []
    for index in range(count):
        request = {"item": "laptop", "quantity": 3 + index % 15, "budget": BUDGET}
        start = service.StartObjective("procure_laptops", {"request": request})
        run = service.create_objective(store, start, service.CLI).run
        assert run is not None
        runs.append(run)
    seconds = _idle(engine, count)
    local = ApprovalAuthority(local_operator=True)
    for index, run in enumerate(runs):
        verb = DECISIONS[index % 4]
        pending = service.list_approvals(store, status="pending", run_id=run.id)
        if verb is None or not pending:
            continue
        reason = None if verb == "approve" else "not this one"
        decision = service.ApprovalDecision(pending[0].id, verb, pending[0].proposal_hash, reason)
        service.decide_approval(store, local, decision, service.CLI)
    return seconds + _idle(engine, count)


def _idle(engine: Any, count: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(engine.run_until_idle, max_steps=count * 10) for _ in range(4)]:
            done.result()
    return time.perf_counter() - started


def measure(report: Report, options: Options, backend: str, url: str | None) -> None:
    from openseal.runtime.governance import flow as gov
    from openseal.runtime.replay import Selection, check_runs, replay_proposal
    from openseal.simulator.procurement import ProcurementSimulator

    count = options.pick(quick=40, default=1000)
    work = options.workdir / backend
    recorded = definitions(work, "recorded", CONSTRAINT)
    with (
        loaded_store(work / "home", list(recorded.values()), url) as store,
        ProcurementSimulator(credential=TOKEN) as sim,
    ):
        engine_seconds = record(store, work, sim.url, count)
        filed = gov.deploy(store, definitions(work, "tighter", TIGHTER), "user:bench")
        assert filed.proposal is not None
        proposal_id = filed.proposal.id
        every = Selection(runs=count)
        baseline = report.add(
            compare(f"recording {count} runs (engine, 4 threads), {backend}", "runs/s",
                    summarize([count / engine_seconds]))
        )  # fmt: skip
        jobs: list[tuple[str, Callable[[], object]]] = [
            ("check", lambda: check_runs(store, every)),
            ("proposal", lambda: replay_proposal(store, proposal_id, every)),
        ]
        for name, job in jobs:
            seconds = repeat_timed(job, repeat=options.pick(quick=2, default=3))
            figure = f"replay {name}, {count} runs, {backend}"
            report.add(compare(figure, "runs/s", rates(count, seconds), baseline))


def run(options: Options) -> Report:
    report = Report(NAME)
    os.environ[TOKEN_ENV] = TOKEN
    report.parameters.update(runs=options.pick(quick=40, default=1000))
    measure(report, options, "SQLite", None)
    if options.postgres_url is None:
        report.add(unavailable("replay, PostgreSQL", "no PostgreSQL reachable", "runs/s"))
    else:
        measure(report, options, "PostgreSQL", options.postgres_url)
    return report
