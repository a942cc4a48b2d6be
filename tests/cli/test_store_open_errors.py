"""A store that cannot be opened is one line naming the file, from `serve` and the CLI alike."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

LAUNCH = "from openseal.cli.main import run; run()"


def openseal(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args, "--home", str(home)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


def one_line_naming(result: subprocess.CompletedProcess[str], name: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "startup failed" not in result.stderr
    assert name in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["objectives", "list"]])
def test_a_corrupt_sqlite_file(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    database = home / "openseal.db"
    database.write_bytes(b"this is not a database at all " * 200)
    line = one_line_naming(openseal(*command, home=home), str(database))
    assert "not a database" in line


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["objectives", "list"]])
def test_a_home_that_cannot_be_created(tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    home = blocker / "home"
    one_line_naming(openseal(*command, home=home), str(home / "openseal.db"))


def _schema_pages(database: Path) -> set[int]:
    """The pages of SQLite's own schema table in ``database`` (page 1 and any it grew into)."""
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        rows = conn.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'").fetchall()
    return {1, *(int(row[0]) for row in rows)}


def _damaged_with_a_wal(tmp_path: Path) -> Path:
    """A store whose newest writes are in its WAL (copied from a live store, as a crash leaves
    it) and whose every page but the schema's is overwritten, where the WAL does not cover
    it: opening reads the schema, and the first read of any table finds the damage."""
    from openseal.runtime.store import open_store
    from tests.runtime.support import new_run

    live = tmp_path / "live"
    store = open_store(home=live)
    for n in range(300):
        new_run(store, n=n)
    store.close()  # checkpointed: the file holds those
    kept = _schema_pages(live / "openseal.db")
    store = open_store(home=live)
    for n in range(3):
        new_run(store, n=1000 + n)  # in the WAL only
    home = tmp_path / "damaged"
    home.mkdir()
    for name in ("openseal.db", "openseal.db-wal"):
        (home / name).write_bytes((live / name).read_bytes())
    store.close()
    data = bytearray((home / "openseal.db").read_bytes())
    for page in range(1, len(data) // PAGE + 1):
        if page not in kept:
            data[(page - 1) * PAGE : page * PAGE] = b"\x5a" * PAGE
    (home / "openseal.db").write_bytes(bytes(data))
    return home


PAGE = 4096


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "list"],
        ["runs", "show", "01"],
        ["objectives", "list"],
        ["approvals", "list"],
        ["actions", "list"],
        ["requests", "show", "01"],
        ["proposals", "list"],
        ["triggers", "list"],
        ["deployments", "history", "small"],
        ["tokens", "list"],
        ["serve", "--port", "0"],
    ],
    ids=" ".join,
)
def test_a_damaged_store_with_a_wal_is_left_byte_for_byte_as_it_was(
    tmp_path: Path, command: list[str]
) -> None:
    home = _damaged_with_a_wal(tmp_path)
    before = {name: (home / name).read_bytes() for name in ("openseal.db", "openseal.db-wal")}
    result = openseal(*command, home=home)
    line = one_line_naming(result, str(home / "openseal.db"))
    assert "is damaged (database disk image is malformed)" in line
    after = {name: (home / name).read_bytes() for name in ("openseal.db", "openseal.db-wal")}
    assert after == before  # never checkpointed into, never migrated
    # only SQLite's shared-memory index of the WAL may have been made, to read it
    assert {p.name for p in home.iterdir()} <= {"openseal.db", "openseal.db-wal", "openseal.db-shm"}
    as_json = openseal(*command, "--output", "json", home=home)
    if command[0] != "serve":
        assert '"store_damaged"' in as_json.stdout + as_json.stderr
