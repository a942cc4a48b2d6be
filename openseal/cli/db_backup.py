"""``openseal db backup``, ``db restore`` and ``db recovery``: backups that reconcile first.

A SQLite store is backed up while workers run (SQLite's online backup API) into a folder whose
copy is in recovery mode; a restored store claims no run and sends no action until every
action that could have moved since the backup point is looked up at its destination
(``db recovery reconcile``), the operator has read what was found (``db recovery report``)
and ended it (``db recovery finish``). A PostgreSQL store is backed up with its own tools;
``db backup --check`` checks a database restored from one and ``db recovery start`` puts it in
recovery mode.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from openseal.cli.output import echo_data
from openseal.cli.runtime import check_database_url, context_option, opened, store_options
from openseal.errors import OpenSealError, UsageError
from openseal.runtime.service import CLI


class NotBackedUp(OpenSealError):
    code = "not_backed_up"


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()


def _on_postgres() -> bool:
    check_database_url()
    return bool(os.environ.get("OPENSEAL_DATABASE_URL"))


@click.command()
@store_options
@click.argument("dest", type=click.Path(path_type=Path, file_okay=False), required=False)
@click.option(
    "--check", "check_only", is_flag=True,
    help="Check DEST (a backup folder) instead of writing one; with OPENSEAL_DATABASE_URL, "
    "check that database (restored with pg_restore) and name no DEST.",
)  # fmt: skip
@click.option(
    "--check-archiving", "check_archiving", is_flag=True,
    help="PostgreSQL: check that the server archives its WAL (wal_level, archive_mode, an "
    "archive command or library, the last attempt not a failure).",
)  # fmt: skip
def backup(home: Path, output: str, dest: Path | None, check_only: bool,
           check_archiving: bool) -> None:  # fmt: skip
    """Back the store up into the new folder DEST, while workers keep running.

    The copy is in recovery mode: once restored it sends nothing until its actions are
    reconciled. A PostgreSQL store is backed up with pg_dump or a base backup with WAL
    archiving; --check then checks a database restored from one.

    \b
    Examples:
        openseal db backup backups/2026-12-07
        openseal db backup --check backups/2026-12-07
        OPENSEAL_DATABASE_URL=postgresql+psycopg://openseal@db/restored openseal db backup --check
        openseal db backup --check-archiving        # with OPENSEAL_DATABASE_URL set
    """
    from openseal.runtime.service import backup as backups

    on_postgres = _on_postgres()
    if check_archiving:
        if dest is not None or check_only:
            raise UsageError("--check-archiving checks the server: name no DEST, no --check")
        with opened(home) as store:
            found = backups.check_archiving(store)
        _echo_archiving(found, output)
        if found.problems:
            raise NotBackedUp(f"WAL archiving is not ready: {found.problems[0]}")
        return
    if check_only:
        if on_postgres and dest is not None:
            raise UsageError(
                "--check with OPENSEAL_DATABASE_URL checks that database: name no DEST"
            )
        if not on_postgres and dest is None:
            raise UsageError("--check needs DEST, the backup folder to check")
        checked = backups.check(dest or home)
        _echo_checked(checked, output, "database" if on_postgres else str(dest))
        if checked.problems:
            raise NotBackedUp(f"the backup has problems: {checked.problems[0]}")
        return
    if dest is None:
        raise UsageError("name DEST, the new folder to write the backup into")
    with opened(home) as store:
        checked = backups.backup(store, dest, CLI.actor)
    _echo_checked(checked, output, str(dest))
    if checked.problems:
        raise NotBackedUp(f"the backup has problems: {checked.problems[0]}")


def _echo_checked(checked: Any, output: str, where: str) -> None:
    marker = checked.recovery
    data = {
        "backup": where,
        "revision": checked.revision,
        "backup_at": None if marker is None else _iso(marker.backup_at),
        "recovery_mode": marker is not None,
        "artifact_files": checked.artifacts,
        "problems": list(checked.problems),
    }

    def text() -> None:
        at = f" as of {data['backup_at']}" if data["backup_at"] else ""
        state = "consistent" if not checked.problems else "NOT consistent"
        click.echo(f"backup {where}{at}: {state}, schema {checked.revision}, "
                   f"{checked.artifacts} artefact file(s)")  # fmt: skip
        for problem in checked.problems:
            click.echo(f"  problem: {problem}")
        if marker is not None:
            click.echo("  restored, it starts in recovery mode")

    echo_data(data, output, text)


@click.command()
@store_options
@click.argument("source", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--replace", is_flag=True,
    help="Put the backup in place of the store under --home (stop every openseal process on "
    "it first).",
)  # fmt: skip
def restore(home: Path, output: str, source: Path, replace: bool) -> None:
    """Restore the backup folder SOURCE into --home, in recovery mode.

    \b
    Examples:
        openseal db restore backups/2026-12-07 --home .openseal --replace
    """
    from openseal.runtime.service import backup as backups

    if _on_postgres():
        raise UsageError(
            "a PostgreSQL store is restored with pg_restore (or from a base backup); then run "
            "`openseal db recovery start` on it before any worker or server opens it"
        )
    marker = backups.restore(source, home, replace=replace, actor=CLI.actor)
    data = {"restored": str(source), "home": str(home), "recovery": _recovery_data(marker)}
    echo_data(data, output, lambda: click.echo(
        f"restored {source} into {home}: in recovery mode; next: "
        "`openseal db recovery reconcile`"
    ))  # fmt: skip


@click.group()
def recovery() -> None:
    """Recovery mode after a restore: reconcile, read the report, finish."""


@recovery.command("start")
@store_options
@click.option(
    "--backup-at", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"]),
    default=None, help="When the backup was taken (for the report; ISO 8601, UTC if no offset).",
)  # fmt: skip
def recovery_start(home: Path, output: str, backup_at: datetime | None) -> None:
    """Put the store in recovery mode, after restoring it with other tools (pg_restore).

    \b
    Examples:
        OPENSEAL_DATABASE_URL=postgresql+psycopg://openseal@db/restored openseal db recovery start
    """
    from datetime import UTC

    from openseal.runtime.service import recovery as recoveries

    at = (
        None
        if backup_at is None
        else (backup_at if backup_at.tzinfo else backup_at.replace(tzinfo=UTC))
    )
    with opened(home) as store:
        marker = recoveries.start(store, reason="operator", actor=CLI.actor, backup_at=at)
    echo_data(_recovery_data(marker), output, lambda: click.echo(
        "in recovery mode: no run is claimed until `openseal db recovery finish`"
    ))  # fmt: skip


@recovery.command("reconcile")
@store_options
@context_option(
    "Runtime context file: the adapters' configuration and credentials the lookups use "
    "(default .openseal/context.yaml if it exists)."
)
def recovery_reconcile(home: Path, output: str, context_path: Path | None) -> None:
    """Look every action that could have moved since the backup up at its destination.

    Lookups only read: nothing is sent. Run it again while actions are pending.

    \b
    Examples:
        openseal db recovery reconcile --context .openseal/context.yaml
    """
    from openseal.runtime.service import recovery as recoveries
    from openseal.skills.credentials import RuntimeContext

    context = RuntimeContext.load(context_path)
    with opened(home) as store:
        marker = recoveries.reconcile(store, context, CLI.actor)
    _echo_report(marker, output)


@recovery.command("status")
@store_options
def recovery_status(home: Path, output: str) -> None:
    """Whether the store is in recovery mode, and what the last pass left pending.

    \b
    Examples:
        openseal db recovery status
    """
    from openseal.runtime.service import recovery as recoveries

    with opened(home, read_only=True) as store:
        marker = recoveries.current(store)
    data = {"recovery_mode": marker is not None, "recovery": _recovery_data(marker)}

    def text() -> None:
        if marker is None:
            click.echo("not in recovery mode")
            return
        report = marker.report
        checked = "not reconciled yet" if report is None else (
            f"last reconciled {report['checked_at']}: {len(report['actions'])} action(s) "
            f"looked up, {report['pending']} pending"
        )  # fmt: skip
        click.echo(f"in recovery mode since {_iso(marker.started_at)} ({marker.reason}); {checked}")

    echo_data(data, output, text)


@recovery.command("report")
@store_options
def recovery_report(home: Path, output: str) -> None:
    """What the last reconciliation found, action by action, and the approvals asked again.

    \b
    Examples:
        openseal db recovery report
    """
    from openseal.runtime.service import recovery as recoveries

    with opened(home, read_only=True) as store:
        marker = recoveries.latest(store)
    if marker is None:
        raise UsageError("this store has never been in recovery mode")
    _echo_report(marker, output)


@recovery.command("finish")
@store_options
def recovery_finish(home: Path, output: str) -> None:
    """Leave recovery mode: workers claim runs again. Refused while actions are pending.

    \b
    Examples:
        openseal db recovery finish
    """
    from openseal.runtime.service import recovery as recoveries

    with opened(home) as store:
        marker = recoveries.finish(store, CLI.actor)
    echo_data(_recovery_data(marker), output, lambda: click.echo(
        "recovery finished: workers claim runs again"
    ))  # fmt: skip


def _recovery_data(marker: Any) -> dict[str, Any] | None:
    if marker is None:
        return None
    return {
        "id": marker.id,
        "reason": marker.reason,
        "source": marker.source,
        "backup_at": _iso(marker.backup_at),
        "started_at": _iso(marker.started_at),
        "started_by": marker.started_by,
        "checked_at": _iso(marker.checked_at),
        "finished_at": _iso(marker.finished_at),
        "report": marker.report,
    }


def _echo_report(marker: Any, output: str) -> None:
    report = marker.report or {
        "actions": [], "approvals": [], "runs": [], "pending": 0, "checked_at": None,
    }  # fmt: skip

    def text() -> None:
        state = "finished" if marker.finished_at else "in progress"
        click.echo(f"recovery {state}; reconciled {report['checked_at'] or 'never'}")
        if not report["actions"]:
            click.echo("no action could have moved since the backup")
        for found in report["actions"]:
            click.echo(f"action {found['action_id']} ({found['skill']}, run {found['run_id']}): "
                       f"{found['before']} -> {found['after']}; {found['outcome']}: "
                       f"{found['detail']}")  # fmt: skip
            if found.get("result"):
                click.echo(f"  recorded {_result(found['result'])}")
        for approval in report["approvals"]:
            click.echo(f"approval {approval['approval_id']} of run {approval['run_id']} "
                       f"({approval['proposal']}) is asked again")  # fmt: skip
        for run in report.get("runs", []):
            click.echo(f"run {run['run_id']} ({run['status']}) had no action "
                       "to look up: watch what it does next")  # fmt: skip
        if report["pending"]:
            click.echo(
                f"{report['pending']} pending: reconcile again once their destination answers"
            )

    echo_data(_recovery_data(marker), output, text)


def _result(result: Any) -> str:
    """The destination's record in a line, ids first."""
    if not isinstance(result, dict):
        return str(result)
    keys = sorted(result, key=lambda k: (not (k == "id" or k.endswith("_id")), k))
    return " ".join(f"{k}={result[k]}" for k in keys)


def _echo_archiving(found: Any, output: str) -> None:
    data = {**{k: _iso(v) if isinstance(v, datetime) else v for k, v in found.settings.items()},
            "problems": list(found.problems)}  # fmt: skip

    def text() -> None:
        state = "archiving" if not found.problems else "NOT archiving"
        last = data["last_archived_time"] or "never"
        click.echo(
            f"WAL {state}: wal_level {data['wal_level']}, archive_mode {data['archive_mode']}, "
            f"{data['archived_count']} segment(s) archived (last {last}), "
            f"{data['failed_count']} failure(s)"
        )
        for problem in found.problems:
            click.echo(f"  problem: {problem}")

    echo_data(data, output, text)
