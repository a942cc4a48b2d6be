"""``openseal triggers list|show|pause|resume|retire``: deployed triggers and their firings.

Triggers are deployed like workflows (``openseal deploy``, then a change proposal is decided
and activated); these commands show them and let an operator pause, resume or retire one.
Workers fire them: without a running ``openseal worker`` nothing fires (missed occurrences
are caught up per the trigger's ``catch_up`` when one starts).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from openseal.cli.output import echo_data
from openseal.cli.runtime import opened, store_options
from openseal.runtime import service
from openseal.runtime.store import TriggerFiring


@click.group()
def triggers() -> None:
    """Triggers: schedules and inbound events that start workflows by themselves."""


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.isoformat(timespec="seconds")


def _firing(firing: TriggerFiring | None) -> str:
    if firing is None:
        return "never"
    started = f" objective {firing.objective_id}" if firing.objective_id else ""
    return f"{_when(firing.occurred_at)} {firing.outcome}{started}"


@triggers.command("list")
@store_options
def list_triggers(home: Path, output: str) -> None:
    """Every deployed trigger: its status, what fires it, its next occurrence and last firing.

    \b
    Examples:
        openseal triggers list
        openseal triggers list --output json
    """
    with opened(home) as store:
        views = service.list_triggers(store)
    if output != "text":
        echo_data({"triggers": views}, output)
        return
    if not views:
        click.echo("no triggers are deployed")
    for view in views:
        click.echo(
            f"{view.name}  {view.status:<7} {view.fires_on} -> {view.workflow}  "
            f"next {_when(view.next_occurrence)}  last {_firing(view.last_firing)}"
        )


@triggers.command("show")
@store_options
@click.argument("name")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
def show(home: Path, output: str, name: str, limit: int) -> None:
    """One trigger and its newest firings (started, queued, skipped, missed, failed).

    \b
    Examples:
        openseal triggers show weekday_restock --limit 5
    """
    with opened(home) as store:
        view, firings = service.show_trigger(store, name, limit=limit)
    if output != "text":
        echo_data({"trigger": view, "firings": firings}, output)
        return
    click.echo(f"trigger {view.name} ({view.status}), version {view.digest[:12]}")
    click.echo(f"  fires on   {view.fires_on}, starts workflow {view.workflow}")
    click.echo(f"  overlap    {view.overlap}; catch-up {view.catch_up}")
    click.echo(f"  next       {_when(view.next_occurrence)}")
    for firing in firings:
        detail = f" ({firing.detail})" if firing.detail else ""
        click.echo(f"  {_firing(firing)}{detail}")


def _set(home: Path, output: str, name: str, status: str, reason: str | None) -> None:
    with opened(home) as store:
        view = service.set_trigger_status(
            store, service.TriggerCommand(name, status, reason), service.CLI
        )
    if output != "text":
        echo_data({"trigger": view}, output)
        return
    click.echo(f"trigger {view.name} is {view.status}; next {_when(view.next_occurrence)}")


_REASON = click.option("--reason", default=None, help="Why, for the record.")


@triggers.command("pause")
@store_options
@click.argument("name")
@_REASON
def pause(home: Path, output: str, name: str, reason: str | None) -> None:
    """Stop NAME firing until it is resumed.

    \b
    Examples:
        openseal triggers pause weekday_restock --reason "supplier closed this week"
    """
    _set(home, output, name, "paused", reason)


@triggers.command("resume")
@store_options
@click.argument("name")
@_REASON
def resume(home: Path, output: str, name: str, reason: str | None) -> None:
    """Let a paused trigger fire again; what the pause missed is caught up per its policy.

    \b
    Examples:
        openseal triggers resume weekday_restock
    """
    _set(home, output, name, "active", reason)


@triggers.command("retire")
@store_options
@click.argument("name")
@_REASON
def retire(home: Path, output: str, name: str, reason: str | None) -> None:
    """Stop NAME for good (its current version); activating a new version starts it afresh.

    \b
    Examples:
        openseal triggers retire weekday_restock --reason "replaced by low_stock"
    """
    _set(home, output, name, "retired", reason)
