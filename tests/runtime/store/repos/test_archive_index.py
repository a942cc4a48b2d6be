"""An archive's look for candidates reads ``ix_runs_ended_roots`` on both backends: the plan
of the statement the store really sends names the index (on PostgreSQL with sequential and
bitmap scans priced out, as a batch of 100 out of millions of runs prices them), and no sort
follows it: the index gives the candidates in the order an archive takes them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.store import Store
from tests.runtime.support import Backend, deploy, new_run


def _sent(store: Store, call: Any) -> tuple[str, Any]:
    """The one statement ``call`` sends that reads ``runs`` (with its parameters)."""
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        seen.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    [found] = [(s, p) for s, p in seen if "FROM runs" in s]
    return found


def _plan(store: Store, statement: str, parameters: Any, *, bitmaps: bool = False) -> str:
    """The plan of ``statement``; on PostgreSQL with sequential scans priced out, and bitmap
    scans too unless ``bitmaps`` (a statement whose ``OR`` reads several ranges needs them)."""
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if store.dialect == "postgresql":
            cursor.execute("ANALYZE runs")
            # a table of millions of runs, read for a batch of 100, prices these out
            cursor.execute("SET enable_seqscan = off")
            cursor.execute(f"SET enable_bitmapscan = {'on' if bitmaps else 'off'}")
            try:
                cursor.execute(f"EXPLAIN {statement}", parameters)
            finally:
                plan = cursor.fetchall()
                cursor.execute("RESET enable_seqscan")
                cursor.execute("RESET enable_bitmapscan")
            return "\n".join(str(row[0]) for row in plan)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {statement}", parameters)
        return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())
    finally:
        raw.rollback()
        raw.close()


def test_the_archive_candidates_are_read_from_their_index(backend: Backend) -> None:
    store = backend.open()
    deploy(store)
    runs = [new_run(store) for _ in range(30)]
    for run in runs[:20]:
        service.cancel_run(store, service.RunCommand(run.id, reason="ended"), service.CLI)
    before = store.now() + timedelta(seconds=1)

    def look() -> None:
        with store.read() as conn:
            found = store.archive.ended_roots(conn, before, None, 100)
        assert len(found) == 20

    statement, parameters = _sent(store, look)
    plan = _plan(store, statement, parameters)
    assert "ix_runs_ended_roots" in plan, plan
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan
