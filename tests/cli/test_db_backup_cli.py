"""``openseal db backup|restore|recovery``: a SQLite backup taken while runs are written, its
check, a restore in recovery mode, and the refusals; PostgreSQL's recovery commands."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from openseal.runtime import service
from openseal.runtime.store import Store, open_store
from tests.cli.support import Cli, create
from tests.runtime.support import Backend


def recovery(cli: Cli, *args: str) -> tuple[int, str, str]:
    """``openseal db recovery ARGS``."""
    return cli("db", "recovery", *args, words=3)


def recovery_json(cli: Cli, *args: str) -> dict[str, object]:
    found = cli.json("db", "recovery", *args, words=3)
    assert isinstance(found, dict)
    return found


#: the SQLite backup's own tests: a PostgreSQL store is backed up with PostgreSQL's tools
#: (``test_backup_restore.py`` runs pg_dump and pg_restore; ``--check-archiving`` is below)
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@SQLITE_ONLY
def test_a_backup_taken_while_runs_are_written_is_consistent_and_in_recovery_mode(
    cli: Cli,
    store: Store,
    backend: Backend,
    tmp_path: Path,
) -> None:
    stop = threading.Event()
    written: list[str] = []

    def write() -> None:
        writer = open_store(home=backend.home)
        try:
            while not stop.is_set() or len(written) < 20:
                request = service.StartObjective("small", {"n": 1})
                written.append(service.create_objective(writer, request, service.CLI).run.id)
        finally:
            writer.close()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        code, out, err = cli("db", "backup", str(tmp_path / "b"), "--output", "json")
    finally:
        stop.set()
        thread.join(timeout=300)
    assert code == 0, err
    made = json.loads(out)
    assert made["problems"] == [] and made["recovery_mode"] is True
    copy = open_store(home=tmp_path / "b", read_only=True)
    try:
        copied = [run.id for run in copy.runs.query(limit=10_000)]
        assert copy.recoveries.active() is not None
    finally:
        copy.close()
    assert copied == written[: len(copied)]  # one moment of the live store, runs in order
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["openseal.db"]

    code, out, err = cli("db", "backup", "--check", str(tmp_path / "b"))
    assert code == 0, err
    assert "consistent, schema" in out and "restored, it starts in recovery mode" in out


@SQLITE_ONLY
def test_a_restore_replaces_the_store_in_recovery_mode_and_workers_wait(
    cli: Cli,
    store: Store,
    backend: Backend,
    tmp_path: Path,
) -> None:
    before = create(cli)
    assert cli("db", "backup", str(tmp_path / "b"))[0] == 0
    after = create(cli)

    code, _out, err = cli("db", "restore", str(tmp_path / "b"))
    assert code == 2 and "restore with --replace" in err
    code, out, err = cli("db", "restore", str(tmp_path / "b"), "--replace")
    assert code == 0, err
    assert "in recovery mode" in out
    ids = [run["id"] for run in cli.json("runs", "list")]  # type: ignore[union-attr]
    assert before in ids and after not in ids

    status = recovery_json(cli, "status")
    assert status["recovery_mode"] is True
    code, _out, err = cli("worker", "--until-idle")
    assert code == 0, err
    assert "recovery mode" in err
    [run] = cli.json("runs", "list")  # type: ignore[misc]
    assert run["status"] == "queued"  # the worker claimed nothing

    code, _out, err = recovery(cli, "finish")
    assert code == 1 and "has not reconciled yet" in err
    code, out, err = recovery(cli, "reconcile")
    assert code == 0, err
    assert "no action could have moved since the backup" in out
    code, out, err = recovery(cli, "finish")
    assert (code, out) == (0, "recovery finished: workers claim runs again\n"), err
    assert recovery(cli, "status")[1] == "not in recovery mode\n"


def test_the_backup_commands_refuse_what_they_cannot_do(
    cli: Cli,
    store: Store,
    backend: Backend,
    tmp_path: Path,
) -> None:
    if backend.url is not None:
        code, _out, err = cli("db", "backup", str(tmp_path / "b"))
        assert code == 1 and "pg_dump" in err
        code, _out, err = cli("db", "restore", str(tmp_path))
        assert code == 2 and "pg_restore" in err
        code, _out, err = cli("db", "backup", "--check")
        assert code == 1 and "not in recovery mode" in err
        return
    (tmp_path / "b").mkdir()
    code, _out, err = cli("db", "backup", str(tmp_path / "b"))
    assert code == 1 and "a backup is written to a new folder" in err
    code, _out, err = cli("db", "backup", "--check", str(tmp_path / "b"))
    assert code == 2 and "no backup at" in err
    code, _out, err = cli("db", "backup")
    assert code == 2 and "name DEST" in err
    code, _out, err = recovery(cli, "finish")
    assert code == 1 and "not in recovery mode" in err
    code, _out, err = recovery(cli, "report")
    assert code == 2 and "never been in recovery mode" in err


def test_recovery_mode_is_started_by_hand_after_a_restore_with_other_tools(
    cli: Cli,
    store: Store,
    tmp_path: Path,
) -> None:
    code, out, err = recovery(cli, "start", "--backup-at", "2026-12-07T05:00:00")
    assert code == 0, err
    assert "in recovery mode" in out
    status = recovery_json(cli, "status")
    assert status["recovery"] == {
        **status["recovery"],
        "reason": "operator",  # type: ignore[dict-item]
        "backup_at": "2026-12-07T05:00:00+00:00",
    }
    queued = create(cli)
    code, _out, err = cli("worker", "--once")
    assert code == 1 and "error: the store is in recovery mode" in err
    assert store.runs.get(queued).status == "queued"
    assert recovery(cli, "reconcile")[0] == 0
    report = recovery_json(cli, "report")
    assert report["report"] == {**report["report"], "pending": 0}  # type: ignore[dict-item]
    assert recovery(cli, "finish")[0] == 0


@SQLITE_ONLY
def test_a_large_artefact_kept_as_a_file_is_backed_up_and_restored(
    cli: Cli,
    store: Store,
    backend: Backend,
    tmp_path: Path,
) -> None:
    from openseal.runtime.store.repos.artifacts import INLINE_MAX_BYTES

    large = os.urandom(INLINE_MAX_BYTES + 1)
    digest = store.artifacts.put(large).digest
    assert store.artifacts.path(digest).is_file()  # kept as a file, not in its row
    code, out, err = cli("db", "backup", str(tmp_path / "b"))
    assert code == 0, err
    assert "1 artefact file(s)" in out
    store.artifacts.path(digest).unlink()  # lost with the disk the store was on
    assert cli("db", "restore", str(tmp_path / "b"), "--replace")[0] == 0
    restored = open_store(home=backend.home, read_only=True)
    try:
        assert restored.artifacts.read(digest) == large  # verified by its sha256
    finally:
        restored.close()


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_check_archiving_reports_the_servers_wal_archiving(
    cli: Cli,
    store: Store,
    pg_admin: sa.Engine,
) -> None:
    with pg_admin.connect() as conn:
        mode = conn.execute(sa.text("SHOW archive_mode")).scalar_one()
        level = conn.execute(sa.text("SHOW wal_level")).scalar_one()
    code, out, _err = cli("db", "backup", "--check-archiving", "--output", "json")
    found, _end = json.JSONDecoder().raw_decode(out)  # (then the error's document, if any)
    assert (found["archive_mode"], found["wal_level"]) == (mode, level)
    assert code == (1 if found["problems"] else 0)
    if mode == "off":  # the test server's default: reported, and refused
        assert "archive_mode is off: set it to on" in found["problems"]
        code, out, err = cli("db", "backup", "--check-archiving")
        assert code == 1 and "error: WAL archiving is not ready: archive_mode is off" in err
        assert out.startswith(f"WAL NOT archiving: wal_level {level}, archive_mode off")
    code, _out, err = cli("db", "backup", "--check-archiving", "somewhere")
    assert code == 2 and "name no DEST" in err


def test_archiving_is_ready_only_with_every_setting_and_no_failure_since_a_success() -> None:
    from datetime import UTC, datetime

    from openseal.runtime.lifecycle import backup

    class Server:
        def __init__(self, **settings: object) -> None:
            self.settings = {
                "wal_level": "replica", "archive_mode": "on", "archive_command": "cp %p /a/%f",
                "archive_library": "", "archived_count": 3, "failed_count": 0,
                "last_archived_time": datetime(2026, 12, 7, 9, tzinfo=UTC),
                "last_failed_time": None, **settings,
            }  # fmt: skip

        def wal_archiving(self) -> dict[str, object]:
            return self.settings

    def problems(**settings: object) -> tuple[str, ...]:
        return backup.check_archiving(Server(**settings)).problems  # type: ignore[arg-type]

    assert problems() == ()
    assert problems(archive_command="", archive_library="pgbackrest") == ()
    assert problems(archive_command="") == ("neither archive_command nor archive_library is set",)
    # what PostgreSQL shows for the command while archive_mode is off, whether it is set or not
    assert problems(archive_mode="off", archive_command="(disabled)") == (
        "archive_mode is off: set it to on",
    )
    assert problems(archive_mode="off", pending_restart=["archive_mode"]) == (
        "archive_mode is off: restart the server",
    )
    assert problems(wal_level="minimal")[0] == "wal_level is minimal: set it to replica"
    failed = problems(failed_count=1, last_failed_time=datetime(2026, 12, 7, 10, tzinfo=UTC))
    assert failed and "could not be archived (1 failure(s)" in failed[0]
    assert problems(failed_count=1, last_failed_time=datetime(2026, 12, 7, 8, tzinfo=UTC)) == ()
