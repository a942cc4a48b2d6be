"""A run's writes touch only the indexes something reads: every write of a run's status, lease
or ``updated_at`` rewrites each index that holds one of them, and a turn writes all three. The
indexes for what few runs have (a timer, an event wait) hold only those runs, and the claim,
the statement the store really sends, still reads each of its three ranges from an index on
both backends, none by scanning the table."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from openseal.runtime.store import Store
from tests.runtime.store.repos.test_archive_index import _plan, _sent
from tests.runtime.support import Backend, new_run

#: the indexes of ``runs`` besides its primary key, and what reads each
RUN_INDEXES = {
    "ix_runs_objective_id",  # an objective's runs
    "ix_runs_claim_queued",  # the claim's queued and running runs; lists by status
    "ix_runs_claim_timer",  # the claim's runs due to wake (partial: with a timer)
    "ix_runs_event_wait",  # an inbound event's waiters (partial: waiting for an event)
    "ix_runs_scope_status",  # a scope's runs and its ready queue
    "ix_runs_children",  # child runs not ended (partial)
    "ix_runs_ended_roots",  # an archive's candidates (partial)
}


def _indexes(store: Store) -> dict[str, Any]:
    return {str(index["name"]): index for index in sa.inspect(store.engine).get_indexes("runs")}


def test_runs_have_only_the_indexes_something_reads(backend: Backend) -> None:
    store = backend.open()
    indexes = _indexes(store)
    assert set(indexes) == RUN_INDEXES
    where = f"{store.dialect}_where"
    for name, column in (("ix_runs_claim_timer", "wake_at"), ("ix_runs_event_wait", "wait_name")):
        predicate = str(indexes[name]["dialect_options"][where])
        assert column in predicate and "NOT NULL" in predicate.upper(), predicate


def test_the_claim_reads_each_of_its_ranges_from_an_index(backend: Backend) -> None:
    store = backend.open()
    new_run(store)

    def claim() -> None:
        assert store.leases.claim("w1") is not None

    statement, parameters = _sent(store, claim)
    plan = _plan(store, statement, parameters, bitmaps=True)
    # which index serves the queued and running ranges is the planner's choice on a table this
    # small; none is read by scanning the table
    assert "Seq Scan" not in plan and "SCAN runs" not in plan, plan
    assert "ix_runs_claim_timer" in plan, plan
