from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from openseal.errors import StoreError
from openseal.runtime.store import migrations
from openseal.runtime.store.schema import metadata
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
