"""``openseal db archive``, ``openseal db restore-archive`` and reading a run out of an archive
(``openseal runs show ID --archive PATH``).

The archive's format is documented in docs/archive-format.md; what is archived and when is
:mod:`openseal.runtime.lifecycle`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from openseal.cli.output import echo_data
from openseal.cli.retention_options import retention_from, retention_options
from openseal.cli.runtime import opened, store_options


@click.command("archive")
@store_options
@click.option(
    "--to", "to", default=None, metavar="PATH|URL",
    help="The archive: a directory, or a URL such as s3://BUCKET/PREFIX (default: HOME/archive).",
)  # fmt: skip
@click.option(
    "--ended-before", default=None, metavar="WHEN",
    help="Only runs that ended before WHEN: an age (30d) or an ISO 8601 time.",
)  # fmt: skip
@click.option("--batch-size", type=click.IntRange(1, 5000), default=100, show_default=True)
@click.option("--dry-run", is_flag=True, help="Count what would be archived; change nothing.")
@retention_options
def archive(
    home: Path, output: str, to: str | None, ended_before: str | None, batch_size: int,
    dry_run: bool, **policy: Any,
) -> None:  # fmt: skip
    """Move ended runs whose retention passed into an archive, in batches; forget expired keys.

    Each batch is written (gzip JSON Lines per table, a manifest with sha256 checksums), read
    back and verified, then deleted from the live store. A crash leaves rows live, archived,
    or both; the next archive into the same place finishes what it left. Refused while the
    store is in recovery mode after a restore.

    \b
    Examples:
        openseal db archive --dry-run
        openseal db archive --ended-before 90d --to /var/lib/openseal/archive
        openseal db archive --to s3://example-bucket/openseal-archive
        openseal db archive --keep-ended-runs 14d --keep-ended-runs-in finance=400d
    """
    from openseal.runtime import service

    retention = retention_from(policy)
    request = service.ArchiveRequest(
        to=service.locate_archive(to or home / "archive"), retention=retention,
        batch_size=batch_size, dry_run=dry_run,
        ended_before=service.parse_since(ended_before) if ended_before else None,
    )  # fmt: skip
    with opened(home) as store:
        report = service.archive(store, request)
    echo_data(report, output, lambda: _echo_report(report))


def _echo_report(report: Any) -> None:
    verb = "would archive" if report.dry_run else "archived"
    batches = "" if report.dry_run else f" in {len(report.batches)} batch(es)"
    click.echo(f"{verb} {report.runs} run(s){batches}")
    for table, count in sorted(report.rows.items()):
        if count:
            click.echo(f"  {table:<20} {count}")
    for reason, trees in sorted(report.kept.items()):
        click.echo(f"kept live: {trees} run tree(s): {reason}")
    if report.resumed:
        click.echo(f"finished {len(report.resumed)} batch(es) an earlier archive left")
    if not report.dry_run:
        click.echo(
            f"forgot {report.idempotency_keys_expired} idempotency key(s) and "
            f"{report.delivery_keys_expired} delivery key(s)"
        )
    if report.inbound_events_removed:
        click.echo(
            f"removed {report.inbound_events_removed} inbound event(s) of archived runs whose "
            "delivery key expired (their batches hold them)"
        )


@click.command("restore-archive")
@store_options
@click.argument("path", metavar="PATH|URL")
@click.option("--run", "run_id", default=None, help="Only this run (with its whole run tree).")
def restore_archive(home: Path, output: str, path: str, run_id: str | None) -> None:
    """Bring archived runs back into the live store: every run at PATH|URL (an archive or one
    batch), or one run's tree. Rows already live are left as they are, so it can be run again.

    \b
    Examples:
        openseal db restore-archive .openseal/archive --run 0191f0c3...
        openseal db restore-archive s3://example-bucket/openseal-archive --run 0191f0c3...
    """
    from openseal.runtime import service

    location = service.locate_archive(path, "PATH")
    with opened(home) as store:
        report = service.restore_archive(store, location, run_id)
    echo_data(
        report, output,
        lambda: click.echo(
            f"restored {len(report.runs)} run(s) ({report.rows_inserted} row(s) inserted)"
        ),
    )  # fmt: skip


def show_archived(path: str, run_id: str, output: str) -> None:
    """``runs show ID --archive PATH|URL``: the run as the archive holds it."""
    from openseal.runtime import service

    record = service.find_archived_run(service.locate_archive(path, "--archive"), run_id)
    if output != "text":
        echo_data(record, output)
        return
    run = record["run"]
    click.echo(f"run {run['id']}  {run['status']}  (archived in {record['batch']})")
    click.echo(f"  state     {run['current_state'] or '-'}")
    click.echo(f"  created   {run['created_at']}  ended {run['updated_at']}")
    counts = [f"{table} {len(record[table])}" for table in ("events", "turns", "actions")]
    click.echo("  " + "  ".join(counts))
    outputs = (run.get("context") or {}).get("outputs")
    if outputs:
        click.echo(f"  outputs   {json.dumps(outputs, sort_keys=True)}")
    for event in record["events"]:
        click.echo(f"  {event['seq']:>4}  {event['at']}  {event['type']}")
