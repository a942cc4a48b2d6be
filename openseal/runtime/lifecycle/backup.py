"""Backups of the embedded SQLite store, and restoring one (invariant 18).

A backup is a folder: ``openseal.db``, copied by SQLite's online backup API while workers go
on, and ``artifacts/`` (the large artefacts kept as files, docs/decisions/0010), copied after
it: artefacts are create-only, so every file a row of the copy names is there. The copy is
born in recovery mode (:mod:`.recovery`): whichever way it is put back, by
:func:`restore` or by hand, it claims nothing and sends nothing until its actions are
reconciled.

PostgreSQL is backed up with its own tools (``pg_dump``, base backups with WAL archiving);
:func:`check_archiving` verifies that the server archives its WAL, :func:`check` a database
restored from a backup.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openseal.errors import StoreError, UsageError
from openseal.runtime.lifecycle import recovery
from openseal.runtime.store import Recovery, Store, open_store

DATABASE = "openseal.db"
ARTIFACTS = "artifacts"
#: the files of a SQLite store besides ``openseal.db`` that a restore replaces
SIDE_FILES = ("openseal.db-wal", "openseal.db-shm")


@dataclass(frozen=True)
class Checked:
    """What :func:`check` found: the schema revision, the recovery marker, and problems (none:
    the copy is consistent and may be restored)."""

    revision: str | None
    recovery: Recovery | None
    artifacts: int
    problems: tuple[str, ...]


def backup(store: Store, dest: Path, actor: str) -> Checked:
    """Copy the SQLite ``store`` into the new folder ``dest``, marked for recovery."""
    if store.dialect != "sqlite":
        store.backup_to(dest)  # refused, saying which tools back PostgreSQL up
    if dest.exists():
        raise StoreError(
            f"{dest} exists; a backup is written to a new folder", code="not_backed_up"
        )
    dest.mkdir(parents=True)
    at = store.now()
    store.backup_to(dest / DATABASE)
    copy = open_store(home=dest, auto_migrate=False)
    try:
        recovery.start(
            copy, reason="backup", source=str(store.home / DATABASE), backup_at=at, actor=actor
        )
    finally:
        copy.close()
    store.one_file(dest / DATABASE)
    source = store.home / ARTIFACTS
    if source.is_dir():
        shutil.copytree(source, dest / ARTIFACTS, ignore=shutil.ignore_patterns(".tmp-*"))
    return check(dest)


def check(folder: Path) -> Checked:
    """Check a backup folder (or, with ``OPENSEAL_DATABASE_URL`` set, the database it names,
    restored with PostgreSQL's tools): readable, consistent, at a schema this openseal knows,
    and in recovery mode."""
    in_database = bool(os.environ.get("OPENSEAL_DATABASE_URL"))
    if not in_database and not (folder / DATABASE).is_file():
        raise UsageError(f"no backup at {folder}: {folder / DATABASE} does not exist")
    store = open_store(home=folder, read_only=not in_database, auto_migrate=False)
    try:
        problems = list(store.integrity_problems())
        revision = store.schema_revision()
        marker = store.recoveries.active()
    finally:
        store.close()
    if marker is None:
        problems.append(
            "not in recovery mode: put it in recovery mode (`openseal db recovery start`) "
            "before any worker or server opens it"
        )
    files = folder / ARTIFACTS
    count = sum(1 for path in files.rglob("*") if path.is_file()) if files.is_dir() else 0
    return Checked(revision, marker, count, tuple(problems))


def restore(source: Path, home: Path, *, replace: bool, actor: str) -> Recovery:
    """Put the backup folder ``source`` in place of the SQLite store under ``home``, in
    recovery mode. Every openseal process on ``home`` must be stopped first."""
    checked = check(source)
    damaged = [p for p in checked.problems if not p.startswith("not in recovery mode")]
    if damaged:
        raise StoreError(f"the backup at {source} is damaged: {damaged[0]}", code="store_damaged")
    target = home / DATABASE
    if target.exists() and not replace:
        raise UsageError(
            f"a store exists at {target}; stop every openseal process on it and restore with "
            "--replace to put the backup in its place"
        )
    home.mkdir(parents=True, exist_ok=True)
    staged = home / f"{DATABASE}.restoring"
    shutil.copyfile(source / DATABASE, staged)
    for name in SIDE_FILES:
        (home / name).unlink(missing_ok=True)
    os.replace(staged, target)
    if (source / ARTIFACTS).is_dir():
        shutil.copytree(source / ARTIFACTS, home / ARTIFACTS, dirs_exist_ok=True)
    store = open_store(home=home)
    try:
        marker = checked.recovery
        return recovery.start(
            store, reason="restore", source=str(source), actor=actor,
            backup_at=None if marker is None else marker.backup_at,
        )  # fmt: skip
    finally:
        store.close()


@dataclass(frozen=True)
class Archiving:
    """What :func:`check_archiving` found on a PostgreSQL server: its WAL archiving settings
    and counters, and problems (none: a base backup with this archive can be restored to any
    moment since)."""

    settings: dict[str, Any]
    problems: tuple[str, ...]


def check_archiving(store: Store) -> Archiving:
    """Whether the PostgreSQL server under ``store`` archives its WAL: ``wal_level`` at least
    ``replica``, ``archive_mode`` on (in force, not only set: both need a restart), an
    ``archive_command`` or ``archive_library`` set, and the last archiving attempt not a
    failure. A managed service that keeps its own
    point-in-time recovery hides these: check its backup settings instead."""
    found = store.wal_archiving()
    # both take effect only when the server starts: one set but not yet in force says so
    pending = found.get("pending_restart") or ()
    problems: list[str] = []
    if found["wal_level"] not in ("replica", "logical"):
        fix = "restart the server" if "wal_level" in pending else "set it to replica"
        problems.append(f"wal_level is {found['wal_level']}: {fix}")
    if found["archive_mode"] not in ("on", "always"):
        fix = "restart the server" if "archive_mode" in pending else "set it to on"
        problems.append(f"archive_mode is {found['archive_mode']}: {fix}")
    # PostgreSQL shows the command as "(disabled)" while archive_mode is off, set or not: what
    # is missing then is the mode, said above
    command = (found["archive_command"] or "").strip()
    if not command and not (found["archive_library"] or "").strip():
        problems.append("neither archive_command nor archive_library is set")
    failed, archived = found["last_failed_time"], found["last_archived_time"]
    if failed is not None and (archived is None or failed > archived):
        problems.append(
            f"the last WAL segment could not be archived ({found['failed_count']} failure(s), "
            "the last after the last success): see the server's log"
        )
    return Archiving(found, tuple(problems))
