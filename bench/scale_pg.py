"""scale_pg: PostgreSQL with a million waiting runs — claims, sizes, event pages, run lists.

One real run of a workflow that waits for an event is created and driven to
``waiting_for_event`` by the engine; it is the template. Its objective, run and events are
then copied in SQL (``INSERT … SELECT`` over ``generate_series``, in batches; never through the
engine) until there are N waiting runs (100,000; 1,000,000 with ``--full``) with 10 events
each, plus one run deep in history (100,000 events). Every column is copied from the
template except the keys, so the rows are the shapes the engine writes. Then, after
``VACUUM ANALYZE``:

* bytes per waiting run (runs and objectives with their indexes) and per event, from
  ``pg_total_relation_size``: sizes, one measurement each;
* claim latency: some runs among them are made runnable and claimed one by one through
  ``store.leases.claim`` — p50 and p95, with the claim statement's plan;
* an event page (100 events) of the deep run near its end, through ``store.runs.events``;
* ``runs list`` filters through the service (a status most runs have, a rare one, one
  objective), each with its plan.

Plans are ``EXPLAIN (ANALYZE, BUFFERS)`` of the statements the store really sent, captured
from SQLAlchemy's ``before_cursor_execute`` event, and land in the report's profiles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from bench.harness import Options, Report, Target, compare, percentile, summarize, unavailable
from bench.runtime_support import (
    WAIT_WORKFLOW,
    compiled,
    engine_problem,
    loaded_store,
    start_run,
)
from openseal.runtime.store import Store
from openseal.runtime.store.tables import schema

NAME = "scale_pg"
EVENTS_PER_RUN = 10
PAGE = 100
#: runs copied per transaction
BATCH = 50_000
#: the numbers of the copies one batch makes (``g``)
COPIES = "generate_series(CAST(:lo AS integer), CAST(:hi AS integer)) g"


def run(options: Options) -> Report:
    report = Report(NAME)
    runs = options.pick(quick=2_000, default=100_000, full=1_000_000)
    deep = options.pick(quick=2_000, default=100_000, full=100_000)
    claims = options.pick(quick=20, default=200, full=200)
    report.parameters.update(
        waiting_runs=runs, events_per_run=EVENTS_PER_RUN, deep_run_events=deep, claims=claims
    )
    problem = None if options.postgres_url else "PostgreSQL is not reachable"
    problem = problem or engine_problem()
    if problem is not None:
        for name, unit in (("bytes per waiting run", "B"), ("claim latency p95", "ms")):
            report.add(unavailable(name, problem, unit))
        return report
    from openseal.runtime.engine.engine import Engine

    documents = compiled(options.workdir / "project", WAIT_WORKFLOW)
    with loaded_store(options.workdir / "home", documents, options.postgres_url) as store:
        template = start_run(store, "waits", {"n": 0})
        Engine(store, worker_id="bench-template").run_until_idle()
        started = time.perf_counter()
        copy_runs(store, template.id, template.objective_id, runs)
        deepen(store, template.id, deep)
        report.parameters["seconds_to_load"] = round(time.perf_counter() - started, 1)
        with store.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")
        measure_sizes(store, report, runs)
        measure_claims(store, report, claims)
        measure_page(store, report, template.id, deep, options.repeat * 10)
        measure_lists(store, report, template.objective_id, options.repeat * 4)
    return report


# -- loading ----------------------------------------------------------------------------


def _copy(table: sa.Table, replaced: dict[str, str], source: str) -> str:
    """``INSERT INTO table`` of every column, ``replaced`` ones by expression, the others
    from the template row aliased ``t`` in ``source``."""
    names = [column.name for column in table.columns]
    values = [replaced.get(name, f"t.{name}") for name in names]
    return f"INSERT INTO {table.name} ({', '.join(names)}) SELECT {', '.join(values)} {source}"


def copy_runs(store: Store, run_id: str, objective_id: str, count: int) -> None:
    """``count`` copies of the template objective, its waiting run and 10 events each."""
    objective = _copy(
        schema.objectives, {"id": "md5('o' || g)"},
        f"FROM objectives t, {COPIES} WHERE t.id = :objective",
    )  # fmt: skip
    run = _copy(
        schema.runs,
        {"id": "md5('r' || g)", "objective_id": "md5('o' || g)",
         "last_event_seq": str(EVENTS_PER_RUN)},
        f"FROM runs t, {COPIES} WHERE t.id = :run",
    )  # fmt: skip
    events = _copy(
        schema.events, {"run_id": "md5('r' || g)", "seq": "s"},
        f"FROM {COPIES} CROSS JOIN generate_series(1, CAST(:per AS integer)) s "
        "JOIN events t ON t.run_id = :run AND t.seq = ((s - 1) % CAST(:kept AS integer)) + 1",
    )  # fmt: skip
    with store.read() as conn:
        kept = int(
            conn.execute(sa.text("SELECT last_event_seq FROM runs WHERE id = :r"), {"r": run_id})
            .scalar_one()
        )  # fmt: skip
    for lo in range(1, count + 1, BATCH):
        bounds = {"lo": lo, "hi": min(count, lo + BATCH - 1), "objective": objective_id,
                  "run": run_id, "per": EVENTS_PER_RUN, "kept": kept}  # fmt: skip
        with store.write() as conn:
            for statement in (objective, run, events):
                conn.execute(sa.text(statement), bounds)


def deepen(store: Store, run_id: str, events: int) -> None:
    """The template run with ``events`` events in all (its own, then copies of its last)."""
    with store.write() as conn:
        last = int(
            conn.execute(sa.text("SELECT last_event_seq FROM runs WHERE id = :r"), {"r": run_id})
            .scalar_one()
        )  # fmt: skip
        statement = _copy(
            schema.events, {"seq": "s"},
            "FROM events t, generate_series(CAST(:first AS integer), CAST(:total AS integer)) s "
            "WHERE t.run_id = :run AND t.seq = :last",
        )  # fmt: skip
        conn.execute(
            sa.text(statement), {"first": last + 1, "total": events, "run": run_id, "last": last}
        )
        conn.execute(
            sa.text("UPDATE runs SET last_event_seq = :total WHERE id = :r"),
            {"total": events, "r": run_id},
        )


# -- measuring --------------------------------------------------------------------------


def measure_sizes(store: Store, report: Report, runs: int) -> None:
    with store.read() as conn:
        size = {
            table: int(
                conn.execute(sa.text(f"SELECT pg_total_relation_size('{table}')")).scalar_one()
            )
            for table in ("runs", "objectives", "events")
        }
        events = int(conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one())
    per_run = (size["runs"] + size["objectives"]) / (runs + 1)
    report.add(
        compare(
            "bytes per waiting run", "B", summarize([per_run]), target=Target(2048, on="value"),
            note="runs + objectives with their indexes, one measurement; events below",
        )
    )  # fmt: skip
    report.add(compare("bytes per event", "B", summarize([size["events"] / events]),
                       note=f"{events} events with the primary key"))  # fmt: skip


def queue_some(store: Store, count: int) -> None:
    """Make ``count`` waiting runs, spread over the table, runnable."""
    with store.write() as conn:
        conn.execute(
            sa.text(
                "UPDATE runs SET status = 'queued' WHERE id IN (SELECT id FROM runs "
                "WHERE status = 'waiting_for_event' ORDER BY md5(id || 'x') LIMIT :n)"
            ),
            {"n": count},
        )


def measure_claims(store: Store, report: Report, claims: int) -> None:
    queue_some(store, claims)
    with captured(store) as statements:
        times = timed(lambda: store.leases.claim("bench-claimer"), claims)
    queue_some(store, claims)  # the plan of a claim that finds work
    report.add(compare("claim latency p50", "ms", summarize([percentile(times, 0.5)])))
    report.add(
        compare(
            "claim latency p95",
            "ms",
            summarize([percentile(times, 0.95)]),
            note=f"{claims} claims among the waiting runs, one by one",
        )
    )
    report.profiles["claim latency p95"] = explain(store, statements, "FROM runs")


def measure_page(store: Store, report: Report, run_id: str, events: int, repeat: int) -> None:
    with captured(store) as statements:
        times = timed(lambda: store.runs.events(run_id, events - PAGE, PAGE), repeat)
    report.add(
        compare(
            "event page deep in a run p95",
            "ms",
            summarize([percentile(times, 0.95)]),
            note=f"{PAGE} events after {events - PAGE} of {events}",
        )
    )
    report.profiles["event page deep in a run p95"] = explain(store, statements, "FROM events")


def measure_lists(store: Store, report: Report, objective_id: str, repeat: int) -> None:
    from openseal.runtime import service

    filters: dict[str, dict[str, Any]] = {
        "runs list, most runs' status": {"status": "waiting_for_event"},
        "runs list, a rare status": {"status": "failed"},
        "runs list, one objective": {"objective_id": objective_id},
    }
    for name, wanted in filters.items():

        def listed(wanted: dict[str, Any] = wanted) -> object:
            return service.list_runs(store, limit=100, **wanted)

        with captured(store) as statements:
            times = timed(listed, repeat)
        report.add(compare(f"{name} p95", "ms", summarize([percentile(times, 0.95)])))
        report.profiles[f"{name} p95"] = explain(store, statements, "FROM runs")


def timed(call: Callable[[], object], count: int) -> list[float]:
    """Milliseconds of each of ``count`` calls."""
    out = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


@contextmanager
def captured(store: Store) -> Iterator[list[tuple[str, Any]]]:
    """The statements (with parameters) the store sends meanwhile."""
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        seen.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", record)


def explain(store: Store, statements: Sequence[tuple[str, Any]], marker: str) -> str:
    """The plan of the first captured statement containing ``marker`` (its parameters
    bound as they were sent); a claim's ``FOR UPDATE`` is planned inside a rolled-back
    transaction, so nothing stays locked or changed."""
    found = next(((s, p) for s, p in statements if marker in s), None)
    if found is None:
        return f"no statement with {marker!r} was captured"
    statement, parameters = found
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement}", parameters)
        plan = "\n".join(str(row[0]) for row in cursor.fetchall())
    finally:
        raw.rollback()
        raw.close()
    return f"{' '.join(statement.split())}\n\n{plan}"
