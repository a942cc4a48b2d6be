"""Finding the PostgreSQL server the benchmarks may use, and a scratch schema on it.

``OPENSEAL_BENCH_DATABASE_URL`` (else ``OPENSEAL_TEST_DATABASE_URL``, else a local server's
``test`` database) names it; when it cannot be reached the PostgreSQL figures say so.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def configured_url() -> str:
    return (
        os.environ.get("OPENSEAL_BENCH_DATABASE_URL")
        or os.environ.get("OPENSEAL_TEST_DATABASE_URL")
        or DEFAULT_URL
    )


def probe() -> tuple[str | None, str | None]:
    """(url, server version) when reachable within a few seconds, else (None, reason)."""
    url = configured_url()
    engine = sa.create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            version = conn.exec_driver_sql("SHOW server_version").scalar()
    except Exception as exc:  # any failure means "not reachable"; the reason goes in the report
        return None, f"unreachable: {exc.__class__.__name__}"
    finally:
        engine.dispose()
    return url, str(version)


@contextmanager
def scratch_schema(url: str) -> Iterator[dict[str, str]]:
    """A fresh schema for one benchmark, dropped afterwards; yields psycopg connect_args."""
    name = f"bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{name}"'))
        try:
            yield {"options": f"-csearch_path={name}"}
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{name}" CASCADE'))
    finally:
        admin.dispose()
