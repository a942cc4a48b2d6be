from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from openseal.errors import StoreError
from openseal.runtime.store.tables import migrations
from openseal.runtime.store.tables.schema import metadata
from tests.runtime.support import Backend


def test_open_migrates_an_empty_database_to_head(backend: Backend) -> None:
    store = backend.open()
    assert store.schema_revision() == migrations.head_revision()
    with store.engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
    assert {"runs", "events", "objectives", "activities", "inbound_events"} <= tables


def test_migrations_produce_exactly_the_schema_module(backend: Backend) -> None:
    store = backend.open()
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": False})
        assert compare_metadata(context, metadata) == []


def _stamp(backend: Backend, revision: str) -> None:
    store = backend.open()
    with store.write() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :rev"), {"rev": revision})


def test_a_database_newer_than_the_code_is_refused(backend: Backend) -> None:
    _stamp(backend, "9999_from_the_future")
    with pytest.raises(StoreError) as raised:
        backend.open()
    assert raised.value.code == "schema_newer"
    assert "9999_from_the_future is newer than this openseal" in str(raised.value)
    assert "upgrade openseal" in str(raised.value)


def test_upgrade_refuses_a_newer_database_too(backend: Backend) -> None:
    _stamp(backend, "9999_from_the_future")
    with pytest.raises(StoreError, match="newer than this openseal"):
        migrations.upgrade(backend.stores[0].engine)


def test_postgres_behind_head_is_refused_unless_auto_migrate(backend: Backend) -> None:
    if backend.name != "postgresql":
        # The embedded SQLite default migrates itself unless told not to.
        with pytest.raises(StoreError) as raised:
            backend.open(auto_migrate=False)
        assert raised.value.code == "schema_outdated"
        return
    with pytest.raises(StoreError) as raised:
        backend.open(auto_migrate=False)
    assert raised.value.code == "schema_outdated"
    assert "openseal db upgrade" in str(raised.value)
    with pytest.raises(StoreError, match="this openseal needs"):
        backend.open(auto_migrate=None)
    assert backend.open(auto_migrate=True).schema_revision() == migrations.head_revision()


def test_unreachable_database_is_a_store_error(tmp_path: object) -> None:
    from openseal.runtime.store import open_store

    with pytest.raises(StoreError) as raised:
        open_store(
            "postgresql+psycopg://nobody@127.0.0.1:1/none", connect_args={"connect_timeout": 2}
        )
    assert raised.value.code == "unavailable"


def _filler(column: sa.Column[object]) -> object:
    """A value of ``column``'s type: one row per table, so every key and every reference to
    it is the same value of its type, and foreign keys hold."""
    try:
        python_type = column.type.python_type
    except NotImplementedError:
        python_type = str
    if python_type is bool:
        return False
    if python_type in (int, float):
        return python_type(1)
    if python_type in (dict, list):
        return {}
    return "k1"


def _populate(engine: sa.Engine) -> dict[str, int]:
    """One row in every table of the schema as it is, parents before children."""
    reflected = sa.MetaData()
    reflected.reflect(engine)
    counts = {}
    with engine.begin() as conn:
        for table in reflected.sorted_tables:
            if table.name == "alembic_version":
                continue
            row = {
                c.name: _filler(c)
                for c in table.columns
                if not c.nullable or c.primary_key or c.foreign_keys
            }
            conn.execute(table.insert().values(**row))
            counts[table.name] = 1
    return counts


@pytest.mark.parametrize("revision", sorted(migrations.known_revisions())[:-1])
def test_a_store_holding_rows_migrates_from_every_earlier_revision(
    backend: Backend, revision: str
) -> None:
    """Rows written at an older revision survive every later migration (SQLite rebuilds a
    table to change it: with foreign keys enforced that used to fail on a store in use)."""
    if backend.url is None:
        from openseal.runtime.store.db.dialects import sqlite_engine

        backend.home.mkdir(parents=True, exist_ok=True)
        engine = sqlite_engine(backend.home / "openseal.db", synchronous="NORMAL",
                                busy_timeout_ms=10_000)  # fmt: skip
    else:
        engine = sa.create_engine(
            backend.url, connect_args={"options": f"-csearch_path={backend.pg_schema}"}
        )
    try:
        migrations.upgrade(engine, revision)
        counts = _populate(engine)
        assert migrations.upgrade(engine) == migrations.head_revision()
        with engine.connect() as conn:
            for table, count in counts.items():
                if sa.inspect(conn).has_table(table):
                    found = conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar()
                    assert found == count, table
    finally:
        engine.dispose()
