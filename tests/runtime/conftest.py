"""Store fixtures: every store test runs on SQLite and on a real PostgreSQL.

PostgreSQL comes from ``OPENSEAL_TEST_DATABASE_URL`` (default: a local server, database
``test``). Each test gets its own schema, dropped afterwards. When the server is unreachable
the PostgreSQL half is skipped locally and fails under ``CI=true``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from openseal.runtime.store import Store
from tests.runtime.support import Backend

PG_DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def postgres_url() -> str:
    return os.environ.get("OPENSEAL_TEST_DATABASE_URL", PG_DEFAULT_URL)


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[sa.Engine]:
    engine = sa.create_engine(postgres_url())
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        engine.dispose()
        message = f"PostgreSQL unreachable at {postgres_url()}: {exc.orig}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    home = tmp_path_factory.mktemp("home")
    if request.param == "sqlite":
        opened = Backend("sqlite", None, home, None)
        yield opened
        opened.close_all()
        return
    admin: sa.Engine = request.getfixturevalue("pg_admin")
    schema_name = f"t_{uuid.uuid4().hex[:16]}"
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema_name}"'))
    opened = Backend("postgresql", postgres_url(), home, schema_name)
    try:
        yield opened
    finally:
        opened.close_all()
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema_name}" CASCADE'))


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.open()
