"""A PgBouncer of a test's own in transaction mode, in front of the test PostgreSQL server.

Started from the distribution's ``pgbouncer`` on a free loopback port with its configuration in
a temporary directory: ``pool_mode = transaction`` and a small pool, so the clients' transactions
take turns on a few server connections and nothing a session kept is there at the next
transaction. Authentication is ``trust`` (the test server trusts loopback too). PgBouncer
refuses to run as root: as root it is told to switch to the ``postgres`` user after reading its
configuration. Missing, the tests using it are skipped, and fail under ``CI=true``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from tests.runtime.pg_cluster import free_port

#: generous bound on PgBouncer starting or stopping (a loaded machine)
GUARD = 60.0


@dataclass(frozen=True)
class Pooler:
    port: int
    version: str
    log: Path

    def url(self, database: str, user: str = "postgres") -> str:
        return f"postgresql+psycopg://{user}@127.0.0.1:{self.port}/{database}"


def _binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )


@contextmanager
def pgbouncer(server: str, *, pool_size: int = 4) -> Iterator[Pooler]:
    """PgBouncer in transaction mode in front of the server of the URL ``server``, any database
    on it, at most ``pool_size`` server connections per database; stopped afterwards."""
    binary = _binary()
    if binary is None:
        message = "PgBouncer is not installed (apt-get install pgbouncer)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    target = sa.make_url(server)
    root = Path(tempfile.mkdtemp(prefix="openseal-pgbouncer-"))
    port = free_port()
    (root / "users.txt").write_text(f'"{target.username}" ""\n', encoding="utf-8")
    lines = [
        "[databases]", f"* = host={target.host or '127.0.0.1'} port={target.port or 5432}",
        "[pgbouncer]", "listen_addr = 127.0.0.1", f"listen_port = {port}",
        "unix_socket_dir =", "auth_type = trust", f"auth_file = {root / 'users.txt'}",
        "pool_mode = transaction", f"default_pool_size = {pool_size}", "min_pool_size = 0",
        "reserve_pool_size = 0", "max_client_conn = 500", "max_db_connections = 0",
    ]  # fmt: skip
    if os.geteuid() == 0:
        lines.append(f"user = {pwd.getpwnam('postgres').pw_name}")
    (root / "pgbouncer.ini").write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = root / "pgbouncer.log"
    with log.open("ab") as stderr:
        process = subprocess.Popen(
            [binary, str(root / "pgbouncer.ini")], stdout=stderr, stderr=stderr
        )  # fmt: skip
    try:
        _wait_until_serving(process, port, target, log)
        yield Pooler(port, _version(binary), log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=GUARD)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=GUARD)
        shutil.rmtree(root, ignore_errors=True)


def _version(binary: str) -> str:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split("\n", 1)[0].removeprefix("PgBouncer ").strip()


def _wait_until_serving(
    process: subprocess.Popen[bytes], port: int, target: sa.URL, log: Path
) -> None:
    """Return once a query through the pooler is answered."""
    conninfo = f"host=127.0.0.1 port={port} user={target.username} dbname={target.database}"
    deadline = time.monotonic() + GUARD
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"pgbouncer stopped ({process.returncode}): {log.read_text()}")
        try:
            with psycopg.connect(conninfo, autocommit=True, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
