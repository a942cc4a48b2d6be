"""``openseal db backup --check-archiving`` against a PostgreSQL server of the test's own.

The server (tests/runtime/pg_cluster.py) starts without archiving: the check fails, saying
what is missing. ``archive_mode`` and a real ``archive_command`` copying each WAL segment into
a directory are set; until a restart the mode is not in force and the check says so; after it,
the check passes and a segment switched out with ``pg_switch_wal()`` arrives in the archive. An
``archive_command`` that fails makes the check fail once the server has tried it, and passes
again once the archiver catches up.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.runtime.engine.test_worker_process import LAUNCH
from tests.runtime.pg_cluster import PgPair, pg_server
from tests.runtime.support import eventually

pytestmark = pytest.mark.slow

#: bound on the server archiving a segment it was asked to (a loaded machine)
GUARD = 120.0


@pytest.fixture
def archive() -> Iterator[Path]:
    """An empty directory the server (run as ``postgres``) may write into."""
    path = Path(tempfile.mkdtemp(prefix="openseal-wal-archive-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(path, owner.pw_uid, owner.pw_gid)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Check:
    def __init__(self, pair: PgPair, tmp: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
        self.env["OPENSEAL_DATABASE_URL"] = pair.primary.url()
        self.home = str(tmp / "home")
        self.engine = sa.create_engine(
            pair.primary.url(), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )

    def openseal(self, *args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, *args, "--home", self.home],
            env=self.env, capture_output=True, text=True, timeout=GUARD, check=False,
        )  # fmt: skip
        return done.returncode, done.stdout, done.stderr

    def archiving(self) -> tuple[int, dict[str, Any]]:
        code, out, _err = self.openseal("db", "backup", "--check-archiving", "-o", "json")
        found, _end = json.JSONDecoder().raw_decode(out)  # (then the error's document, if any)
        return code, found

    def sql(self, statement: str) -> Any:
        with self.engine.connect() as conn:
            result = conn.execute(sa.text(statement))
            return result.scalar() if result.returns_rows else None

    def switch_wal(self) -> str:
        """Write something and switch to a new segment; the name of the one switched out."""
        self.sql("CREATE TABLE IF NOT EXISTS wal_filler (n int)")
        self.sql("INSERT INTO wal_filler SELECT generate_series(1, 1000)")
        return str(self.sql("SELECT pg_walfile_name(pg_switch_wal())"))

    def archived(self, segment: str) -> bool:
        """Whether the server counts ``segment`` archived (its command has returned)."""
        last = self.sql("SELECT last_archived_wal FROM pg_stat_archiver")
        return last is not None and str(last) >= segment

    def counters(self) -> tuple[int, int]:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.text("SELECT archived_count, failed_count FROM pg_stat_archiver")
            ).one()
        return int(row[0]), int(row[1])


def test_check_archiving_fails_without_archiving_and_passes_once_segments_are_archived(
    archive: Path, tmp_path: Path
) -> None:
    command = f"test ! -f {archive}/%f && cp %p {archive}/%f"
    with pg_server(("wal_level = replica", "archive_mode = off")) as pair:
        check = Check(pair, tmp_path)
        try:
            code, _out, err = check.openseal("db", "upgrade")
            assert code == 0, err

            # No archiving: refused, naming what is missing, as docs/operations.md shows.
            code, out, err = check.openseal("db", "backup", "--check-archiving")
            assert code == 1
            assert out == (
                "WAL NOT archiving: wal_level replica, archive_mode off, 0 segment(s) archived "
                "(last never), 0 failure(s)\n"
                "  problem: archive_mode is off: set it to on\n"
            )
            assert (
                err.strip()
                == "error: WAL archiving is not ready: archive_mode is off: set it to on"
            )

            # Set, but archive_mode is in force only after a restart: the check says so.
            check.sql("ALTER SYSTEM SET archive_mode = on")
            check.sql(f"ALTER SYSTEM SET archive_command = '{command}'")
            check.sql("SELECT pg_reload_conf()")
            code, found = eventually(lambda: _pending(check), timeout=GUARD)
            assert code == 1
            assert found["problems"] == ["archive_mode is off: restart the server"]

            pair.restart_primary()
            code, found = check.archiving()
            assert code == 0 and found["problems"] == [], found
            assert (found["archive_mode"], found["archive_command"]) == ("on", command)

            # A segment switched out arrives in the archive, and the check counts it.
            segment = check.switch_wal()
            eventually(lambda: check.archived(segment), timeout=GUARD)
            assert (archive / segment).stat().st_size == 16 * 1024 * 1024
            code, out, _err = check.openseal("db", "backup", "--check-archiving")
            assert code == 0
            assert out.startswith("WAL archiving: wal_level replica, archive_mode on, ")
            assert "(last never)" not in out

            # The command fails: the check fails once the server has tried it...
            check.sql("ALTER SYSTEM SET archive_command = 'false'")
            check.sql("SELECT pg_reload_conf()")
            archived, _failed = check.counters()
            eventually(lambda: check.sql("SHOW archive_command") == "false", timeout=GUARD)
            failing = check.switch_wal()
            eventually(lambda: check.counters()[1] > 0, timeout=GUARD)
            code, out, err = check.openseal("db", "backup", "--check-archiving")
            assert code == 1
            assert "problem: the last WAL segment could not be archived" in out
            assert "error: WAL archiving is not ready: the last WAL segment could not" in err
            assert not (archive / failing).exists()

            # ...and passes again once the archiver, with a working command, catches up.
            check.sql(f"ALTER SYSTEM SET archive_command = '{command}'")
            check.sql("SELECT pg_reload_conf()")
            eventually(lambda: check.archived(failing), timeout=GUARD)
            assert (archive / failing).is_file()
            assert check.counters()[0] > archived
            code, found = check.archiving()
            assert code == 0 and found["problems"] == [], found
        finally:
            check.engine.dispose()


def _pending(check: Check) -> tuple[int, dict[str, Any]] | None:
    code, found = check.archiving()
    return (code, found) if found["pending_restart"] == ["archive_mode"] else None
