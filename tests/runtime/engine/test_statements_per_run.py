"""The statements one run of the durable benchmark's workflow (transform → governed action
calling a no-op skill → end) sends, created as a client would and run in one thread: each
statement costs CPU on every run, so a change that adds one fails here (and a change that
saves one lowers the bound). Counted as the benchmark counts them (``bench durable``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.runtime_support import ACTION_WORKFLOW, CommitCounter, compiled
from openseal.runtime import service
from openseal.runtime.engine.engine import Engine
from openseal.runtime.engine.turns import TurnReport
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.runtime.store.repos import leases

RUNS = 10
#: statements per run at most, by backend: what the store sends now, the worker's last look
#: for work (which finds none) included; SQLite's count its ``BEGIN``s, while psycopg begins
#: PostgreSQL's transactions without a statement of ours. On PostgreSQL the objective, its
#: first run, its ``run.created`` and the NOTIFY are one statement (``store.insert_rows``), and
#: the turns a fenced transaction starts go in the statement that appends its events, and so
#: do the UPDATEs that end the action's turn and settle the objective; a draft's artefact and
#: proposal are inserted by one statement. Creating an objective looks up the active version
#: and the project in one statement. The action is drafted, admitted and marked dispatched in
#: the claim's transaction (docs/decisions/0013), inside a savepoint of its own
STATEMENTS_PER_RUN = {"sqlite": 23.2, "postgresql": 10.1}
#: write commits per run: creating the objective, the claim (transform run and the action's
#: turn saved, the action admitted and marked dispatched), the settle (end run)
WRITE_COMMITS_PER_RUN = 3


def test_a_benchmark_run_sends_no_more_statements_than_pinned(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process whose claims all go to one scope looks for another scope's run at most once a
    # second (leases.FairClaims, tested in tests/runtime/store/repos/test_fair_claims_window.py):
    # a cost per second, not per run, so it is left out of the count per run here.
    monkeypatch.setattr(leases, "FAIR_SHARE", leases.FAIR_WINDOW + 1)
    service.register_documents(store, compiled(tmp_path / "project", ACTION_WORKFLOW))
    turns: list[TurnReport] = []
    engine = Engine(store, on_turn=turns.append)
    start = service.StartObjective("three_steps", {"n": 0})
    service.create_objective(store, start, service.CLI)  # the first reads what is cached after
    engine.run_until_idle(max_steps=2)
    counter = CommitCounter()
    counter.attach(store.engine)
    for n in range(1, RUNS + 1):
        start = service.StartObjective("three_steps", {"n": n})
        service.create_objective(store, start, service.CLI)
    engine.run_until_idle(max_steps=RUNS * 2)
    ended = [str(t.status) for t in turns if str(t.status) != "running"]
    assert ended == ["completed"] * (RUNS + 1)
    assert counter.writes == WRITE_COMMITS_PER_RUN * RUNS
    assert counter.statements / RUNS <= STATEMENTS_PER_RUN[store.dialect]


#: statements per run at most through ``Engine.submit`` (one thread): the objective's creation,
#: its run's claim and first turn share a commit, and the run created there is written by its
#: claim, not read: one INSERT of the row, claimed, and one of its events (run.created first);
#: the action's proposal goes in with it, and its admission takes the active version the
#: creation read
SUBMITTED_STATEMENTS_PER_RUN = {"sqlite": 19.0, "postgresql": 9.0}
#: write commits per submitted run: creating and claiming (with the transform and the action's
#: turn saved, the action admitted and marked dispatched), the settle (end run)
SUBMITTED_WRITE_COMMITS_PER_RUN = 2


def test_a_submitted_run_sends_no_more_statements_than_pinned(store: Store, tmp_path: Path) -> None:
    service.register_documents(store, compiled(tmp_path / "project", ACTION_WORKFLOW))
    engine = Engine(store)
    engine.submit(service.StartObjective("three_steps", {"n": 0}), service.CLI)
    counter = CommitCounter()
    counter.attach(store.engine)
    reports = [
        engine.submit(service.StartObjective("three_steps", {"n": n}), service.CLI)[1]
        for n in range(1, RUNS + 1)
    ]
    assert all(r is not None and r.status == RunStatus.COMPLETED for r in reports)
    assert counter.writes == SUBMITTED_WRITE_COMMITS_PER_RUN * RUNS
    assert counter.statements / RUNS <= SUBMITTED_STATEMENTS_PER_RUN[store.dialect]
