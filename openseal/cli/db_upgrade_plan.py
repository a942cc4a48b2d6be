"""``openseal db upgrade --plan``: the migrations a database is missing, what each does and
what it locks on PostgreSQL, without changing anything."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from openseal.cli.output import echo_data

if TYPE_CHECKING:
    from openseal.runtime.store import UpgradePlan

#: what each ``locks`` value means for the workers writing while it runs (PostgreSQL)
LOCK_MEANINGS = {
    "none": "writers go on",
    "brief": "holds its table's lock for a moment; waits for transactions already open on it",
    "writes": "writes to its tables wait until it ends (longer on larger tables)",
}


def show_plan(home: Path, output: str) -> None:
    """Print what ``openseal db upgrade`` would apply to the store in use."""
    from openseal.cli.runtime import check_database_url
    from openseal.runtime.store import plan_upgrade

    check_database_url()
    found = plan_upgrade(home=home)
    data = {
        "current": found.current,
        "head": found.head,
        "pending": [
            {"revision": m.revision, "summary": m.summary, "locks": m.locks} for m in found.pending
        ],
    }
    echo_data(data, output, lambda: _print(found))


def _print(found: UpgradePlan) -> None:
    at = f"database at {found.current}" if found.current else "no schema yet"
    if not found.pending:
        click.echo(f"{at}: up to date, nothing to apply")
        return
    count = len(found.pending)
    click.echo(f"{at}; `openseal db upgrade` applies {count} migration{'s' * (count > 1)} "
               f"to reach {found.head}:")  # fmt: skip
    for migration in found.pending:
        click.echo(f"  {migration.revision}  {migration.locks:<6}  {migration.summary}")
    for level in dict.fromkeys(m.locks for m in found.pending):
        click.echo(f"locks {level}: {LOCK_MEANINGS[level]}")
    if not os.environ.get("OPENSEAL_DATABASE_URL"):
        click.echo("(SQLite: every migration holds the database's write lock while it runs)")
