"""Runs listed without SQLAlchemy on SQLite (``openseal runs list``) are the store's own: the
SQL is what SQLAlchemy compiles for the store's statements, the records are equal for every
combination of filters, and what the reads cannot serve goes to the store."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.errors import StoreError
from openseal.runtime.store import ListQuery, NotFound, Store, open_reads, open_store
from openseal.runtime.store.tables.listing import FILTERS
from openseal.runtime.store.tables.prepared_reads import prepared
from openseal.runtime.store.tables.sqlite_sql import COLUMNS, STATEMENTS
from tests.runtime.support import DOCUMENT, WORKFLOW, deploy, digest_of

OTHER = "other_flow"


def test_the_rendered_sql_is_what_sqlalchemy_compiles_now() -> None:
    """`make sql` renders it again when a statement, the schema or SQLAlchemy changes."""
    assert prepared() == (COLUMNS, STATEMENTS)


@pytest.fixture
def populated(tmp_path: Path) -> Store:
    store = open_store(home=tmp_path)
    deploy(store)
    other = {**DOCUMENT, "name": OTHER}
    store.definitions.put(digest_of(other), "workflow", OTHER, other)
    store.definitions.activate(OTHER, digest_of(other), "user:a")
    for i in range(7):
        store.objectives.create("acme", OTHER if i in (2, 5) else WORKFLOW, {"n": i}, actor="u")
    runs = store.runs.newest(ListQuery(limit=10))
    store.runs.pause(runs[1].id, actor="u", reason="test")  # another status, JSON and times
    return store


def test_every_page_is_the_store_s_page(populated: Store) -> None:
    reads = open_reads(populated.home)
    assert reads is not None
    everything = populated.runs.newest(ListQuery(limit=100))
    values = {
        "after": everything[2].id,
        "since": everything[4].created_at,
        "status": "queued",
        "workflow": WORKFLOW,
    }
    try:
        for n in range(len(FILTERS) + 1):
            for filters in itertools.combinations(FILTERS, n):
                for limit in (1, 3, 100):
                    query = ListQuery(limit=limit, **{f: values[f] for f in filters})
                    found = reads.runs.newest(query)
                    assert found == populated.runs.newest(query), filters
        assert reads.runs.newest(ListQuery(since=everything[0].created_at + timedelta(1))) == ()
        digest = everything[0].workflow_digest
        assert reads.definitions.get(digest) == populated.definitions.get(digest)
        with pytest.raises(NotFound, match="definition version 00 not found"):
            reads.definitions.get("00")
    finally:
        reads.close()


def test_what_the_reads_have_no_sql_for_the_store_answers(populated: Store) -> None:
    reads = open_reads(populated.home)
    assert reads is not None
    try:
        run = populated.runs.newest(ListQuery(limit=1))[0]
        scoped = ListQuery(scopes=("default",))
        assert reads.runs.newest(scoped) == populated.runs.newest(scoped)
        assert reads.runs.newest(ListQuery(), objective_id=run.objective_id) == (run,)
    finally:
        reads.close()


def test_only_a_store_at_the_packaged_head_is_read_without_sqlalchemy(tmp_path: Path) -> None:
    assert open_reads(tmp_path) is None  # no store: nothing is created
    assert not (tmp_path / "openseal.db").exists()
    open_store(home=tmp_path).close()
    reads = open_reads(tmp_path)
    assert reads is not None
    reads.close()
    with sqlite3.connect(tmp_path / "openseal.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0001'")
    assert open_reads(tmp_path) is None  # the store itself migrates or refuses
    (tmp_path / "openseal.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError) as refused:  # never handed to a store that could write it
        open_reads(tmp_path)
    assert refused.value.code == "store_damaged"


def test_a_database_fault_is_raised_as_the_store_raises_it(tmp_path: Path) -> None:
    open_store(home=tmp_path).close()
    reads = open_reads(tmp_path)
    assert reads is not None
    with sqlite3.connect(tmp_path / "openseal.db") as connection:
        connection.execute("DROP TABLE runs")
    try:
        with pytest.raises(sa.exc.OperationalError, match="no such table"):
            reads.runs.newest(ListQuery())
    finally:
        reads.close()
