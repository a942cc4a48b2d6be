"""``openseal agents|teams show|pause|resume NAME`` and ``openseal scopes limits|limit``.

Pausing an agent or a team makes the turns it would act in wait (``waiting_for_capacity``)
while other work goes on; resuming wakes them, higher priority first. ``show`` lists what it
is doing now: its runs not ended, its open agent requests, the concurrency slots its key holds
and the runs waiting for one. A scope's concurrency cap is an operator setting: lowering it is
an operator's, raising or removing it an admin's. Each command acts on the store as the local
operator, or with ``--server`` asks that server as the token's principal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from openseal.cli.client import connected, many, one, server_options
from openseal.cli.output import echo_data, echo_table, when
from openseal.cli.runtime import store_options
from openseal.runtime import service

Kind = Literal["agent", "team"]
PLURAL = {"agent": "agents", "team": "teams"}


def _echo_actor(view: service.ActorView, output: str) -> None:
    if output != "text":
        echo_data({view.kind: view}, output)
        return
    state = f"paused by {view.paused_by} at {when(view.paused_at)}" if view.paused else "active"
    click.echo(f"{view.kind} {view.name}: {state}")
    click.echo(f"  runs not ended      {len(view.runs)}")
    for run in view.runs:
        detail = f"  ({run.waiting})" if run.waiting else ""
        click.echo(f"    {run.run_id}  {run.status}  {run.current_state or '-'}{detail}")
    click.echo(f"  open requests       {', '.join(view.requests) or 'none'}")
    held = ", ".join(f"{slot.run_id} (epoch {slot.epoch})" for slot in view.slots)
    click.echo(f"  slots held          {held or 'none'}")
    click.echo(f"  waiting for a slot  {', '.join(view.waiting_for_capacity) or 'none'}")


def _show(kind: Kind, home: Path, output: str, server: str | None, token: Path | None,
          name: str) -> None:  # fmt: skip
    with connected(home, server, token, read_only=True) as at:
        view = at.ask(
            lambda store: service.show_actor(store, kind, name, service.CLI),
            f"{PLURAL[kind]}.show", PLURAL[kind], name,
            read=one(service.ActorView, kind),
        )  # fmt: skip
    _echo_actor(view, output)


def _pause(kind: Kind, paused: bool, home: Path, output: str, server: str | None,
           token: Path | None, name: str) -> None:  # fmt: skip
    action = "pause" if paused else "resume"
    with connected(home, server, token) as at:
        view = at.ask(
            lambda store: service.set_actor_paused(store, kind, name, paused, service.CLI),
            f"{PLURAL[kind]}.{action}", PLURAL[kind], name, action, method="POST",
            read=one(service.ActorView, kind),
        )  # fmt: skip
    if output != "text":
        echo_data({kind: view}, output)
        return
    if paused:
        click.echo(f"{kind} {name} is paused: its turns wait; turns under way finish")
    else:
        woken = len(view.runs)
        click.echo(f"{kind} {name} is active again ({woken} runs not ended)")


def _group(kind: Kind) -> click.Group:
    plural = PLURAL[kind]

    @click.group(name=plural, help=f"{kind.capitalize()}s: pause and resume one, and show what "
                 "it is doing now (runs, requests, concurrency slots).")  # fmt: skip
    def group() -> None:
        pass

    @group.command("show", help=f"What {kind} NAME is doing now: its runs not ended, open "
                   "requests, the slots it holds and the runs waiting for one.\n\n\b\nExamples:\n"
                   f"    openseal {plural} show NAME --output json")  # fmt: skip
    @store_options
    @server_options
    @click.argument("name")
    def show(home: Path, output: str, server: str | None, token_file: Path | None,
             name: str) -> None:  # fmt: skip
        _show(kind, home, output, server, token_file, name)

    @group.command("pause", help=f"Pause {kind} NAME: the turns it acts in wait "
                   "(waiting_for_capacity) until it is resumed; other work goes on.\n\n\b\n"
                   f"Examples:\n    openseal {plural} pause NAME")  # fmt: skip
    @store_options
    @server_options
    @click.argument("name")
    def pause(home: Path, output: str, server: str | None, token_file: Path | None,
              name: str) -> None:  # fmt: skip
        _pause(kind, True, home, output, server, token_file, name)

    @group.command("resume", help=f"Resume {kind} NAME: the runs waiting for it are woken, "
                   "higher priority first.\n\n\b\nExamples:\n"
                   f"    openseal {plural} resume NAME")  # fmt: skip
    @store_options
    @server_options
    @click.argument("name")
    def resume(home: Path, output: str, server: str | None, token_file: Path | None,
               name: str) -> None:  # fmt: skip
        _pause(kind, False, home, output, server, token_file, name)

    return group


agents = _group("agent")
teams = _group("team")


@click.group()
def scopes() -> None:
    """Scopes' concurrency caps: at most N turns of a scope's runs in flight at once."""


@scopes.command("limits")
@store_options
@server_options
def limits(home: Path, output: str, server: str | None, token_file: Path | None) -> None:
    """Every scope's concurrency cap you can see, with the slots in use now.

    \b
    Examples:
        openseal scopes limits
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            lambda store: service.scope_limits(store, service.CLI),
            "scopes.limits", "scopes", "limits", read=many(service.ScopeLimit, "limits"),
        )  # fmt: skip
    if output != "text":
        echo_data({"limits": found}, output)
        return
    rows = [
        [s.scope, str(s.max_slots), str(s.in_use), s.updated_by, when(s.updated_at)] for s in found
    ]
    headers = ["scope", "max", "in_use", "set_by", "set_at"]
    echo_table(headers, rows, empty="no scope has a concurrency cap")


@scopes.command("limit")
@store_options
@server_options
@click.argument("scope")
@click.option(
    "--max",
    "max_slots",
    type=click.IntRange(0, 1_000_000),
    default=None,
    help="At most this many turns of the scope's runs in flight (0: none start).",
)
@click.option("--none", "remove", is_flag=True, help="Remove the scope's cap (widening).")
def limit(home: Path, output: str, server: str | None, token_file: Path | None, scope: str,
          max_slots: int | None, remove: bool) -> None:  # fmt: skip
    """Set SCOPE's concurrency cap (--max N) or remove it (--none). Lowering a cap is an
    operator's to do; raising or removing one widens it and needs an admin.

    \b
    Examples:
        openseal scopes limit procurement --max 5
        openseal scopes limit procurement --none
    """
    if (max_slots is None) == (not remove):
        raise click.UsageError("give exactly one of --max N and --none")
    with connected(home, server, token_file) as at:
        set_to = at.ask(
            lambda store: service.set_scope_limit(store, scope, max_slots, service.CLI),
            "scopes.set_limit", "scopes", scope, "limit", method="PUT",
            body={"max": max_slots}, read=one(service.ScopeLimit, "limit"),
        )  # fmt: skip
    if output != "text":
        echo_data({"limit": set_to}, output)
        return
    shown = "no cap" if set_to.max_slots is None else f"at most {set_to.max_slots}"
    click.echo(f"scope {scope}: {shown} in flight ({set_to.in_use} in use now)")
