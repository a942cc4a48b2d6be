"""``openseal triggers list|show|pause|resume|retire``: deployed triggers and their firings.

Triggers are deployed like workflows (``openseal deploy``, then a change proposal is decided
and activated); these commands show them and let an operator pause, resume or retire one.
Workers fire them: without a running ``openseal worker`` nothing fires (missed occurrences
are caught up per the trigger's ``catch_up`` when one starts). Each command acts on the store
as the local operator, or with ``--server`` asks that server as the token's principal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.cli.client import connected, many, one, record, records, server_options
from openseal.cli.output import echo_data, echo_table, when
from openseal.cli.runtime import store_options
from openseal.runtime import service

if TYPE_CHECKING:
    from openseal.runtime.store import TriggerFiring

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def triggers() -> None:
    """Triggers: schedules and inbound events that start workflows by themselves.

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


def _firing(firing: TriggerFiring | None) -> str:
    if firing is None:
        return "never"
    started = f" objective {firing.objective_id}" if firing.objective_id else ""
    return f"{when(firing.occurred_at)} {firing.outcome}{started}"


@triggers.command("list")
@store_options
@server_options
def list_triggers(home: Path, output: str, server: str | None, token_file: Path | None) -> None:
    """Every deployed trigger: its status, what fires it, its next occurrence and last firing.

    \b
    Examples:
        openseal triggers list
        openseal triggers list --output json
    """
    with connected(home, server, token_file, read_only=True) as at:
        views = at.ask(
            service.list_triggers, "triggers.list", "triggers",
            read=many(service.TriggerView, "triggers"),
        )  # fmt: skip
    if output != "text":
        echo_data({"triggers": views}, output)
        return
    rows = [
        [view.name, view.status, view.fires_on, view.workflow, when(view.next_occurrence),
         _firing(view.last_firing)]
        for view in views
    ]  # fmt: skip
    headers = ["name", "status", "fires_on", "workflow", "next", "last"]
    echo_table(headers, rows, shrink=["fires_on", "last"], empty="no triggers are deployed")


@triggers.command("show")
@store_options
@server_options
@click.argument("name")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
def show(
    home: Path, output: str, server: str | None, token_file: Path | None, name: str, limit: int
) -> None:
    """One trigger and its newest firings (started, queued, skipped, missed, failed).

    \b
    Examples:
        openseal triggers show weekday_restock --limit 5
    """
    from openseal.runtime.store import TriggerFiring

    with connected(home, server, token_file, read_only=True) as at:
        view, firings = at.ask(
            lambda store: service.show_trigger(store, name, limit=limit),
            "triggers.show", "triggers", name, params={"limit": limit},
            read=lambda answer: (record(service.TriggerView, answer["trigger"]),
                                 records(TriggerFiring, answer["firings"])),
        )  # fmt: skip
    if output != "text":
        echo_data({"trigger": view, "firings": firings}, output)
        return
    click.echo(f"trigger {view.name} ({view.status}), version {view.digest[:12]}")
    click.echo(f"  fires on   {view.fires_on}, starts workflow {view.workflow}")
    click.echo(f"  overlap    {view.overlap}; catch-up {view.catch_up}")
    click.echo(f"  next       {when(view.next_occurrence)}")
    for firing in firings:
        detail = f" ({firing.detail})" if firing.detail else ""
        click.echo(f"  {_firing(firing)}{detail}")


def _set(asked: Change, status: str, reason: str | None) -> None:
    request = service.TriggerCommand(asked.name, status, reason)
    with connected(asked.home, asked.server, asked.token_file) as at:
        view = at.ask(
            lambda store: service.set_trigger_status(store, request, service.CLI),
            "triggers.set_status", "triggers", asked.name, "status", method="POST",
            body={"status": status, "reason": reason},
            read=one(service.TriggerView, "trigger"),
        )  # fmt: skip
    if asked.output != "text":
        echo_data({"trigger": view}, asked.output)
        return
    click.echo(f"trigger {view.name} is {view.status}; next {when(view.next_occurrence)}")


@dataclass(frozen=True)
class Change:
    """Which trigger to pause, resume or retire, and where."""

    home: Path
    output: str
    server: str | None
    token_file: Path | None
    name: str


def change_options(command: F) -> F:
    command = click.argument("name")(command)
    return store_options(server_options(command))


_REASON = click.option("--reason", default=None, help="Why, for the record.")


@triggers.command("pause")
@change_options
@_REASON
def pause(reason: str | None, **asked: Any) -> None:
    """Stop NAME firing until it is resumed.

    \b
    Examples:
        openseal triggers pause weekday_restock --reason "supplier closed this week"
    """
    _set(Change(**asked), "paused", reason)


@triggers.command("resume")
@change_options
@_REASON
def resume(reason: str | None, **asked: Any) -> None:
    """Let a paused trigger fire again; what the pause missed is caught up per its policy.

    \b
    Examples:
        openseal triggers resume weekday_restock
    """
    _set(Change(**asked), "active", reason)


@triggers.command("retire")
@change_options
@_REASON
def retire(reason: str | None, **asked: Any) -> None:
    """Stop NAME for good (its current version); activating a new version starts it afresh.

    \b
    Examples:
        openseal triggers retire weekday_restock --reason "replaced by low_stock"
    """
    _set(Change(**asked), "retired", reason)
