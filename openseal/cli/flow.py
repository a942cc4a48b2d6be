"""``openseal agents|teams show|pause|resume NAME`` and ``openseal scopes
limits|limit|quotas|quota|queue``.

Pausing an agent or a team makes the turns it would act in wait (``waiting_for_capacity``)
while other work goes on; resuming wakes them, higher priority first. ``show`` lists what it
is doing now: its runs not ended, its open agent requests, the concurrency slots its key holds
and the runs waiting for one, and its runs' calls in flight to capped skills. A scope's
concurrency cap is an operator setting: lowering it is an operator's, raising or removing it an
admin's. Each command acts on the store as the local
operator, or with ``--server`` asks that server as the token's principal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from openseal.cli.client import connected, many, one, record, server_options
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
    click.echo(f"  calls in flight     {len(view.calls)}")
    for call in view.calls:
        what = f"action {call.action_id}" if call.action_id else "a read in a turn"
        click.echo(f"    {call.key}  {what}  of run {call.run_id}  since {when(call.taken_at)}")


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
    """Scopes' flow control: concurrency caps, quotas per day or month, ready-queue depths."""


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


def _amount(value: float) -> str:
    return f"{value:g}"


@scopes.command("quotas")
@store_options
@server_options
def quotas(home: Path, output: str, server: str | None, token_file: Path | None) -> None:
    """Every scope's quota you can see, with what its day or month used so far.

    \b
    Examples:
        openseal scopes quotas
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            lambda store: service.scope_quotas(store, service.CLI),
            "scopes.quotas", "scopes", "quotas", read=many(service.ScopeQuota, "quotas"),
        )  # fmt: skip
    if output != "text":
        echo_data({"quotas": found}, output)
        return
    rows = [
        [q.scope, q.measure, q.per, _amount(q.max), _amount(q.used), q.when_over,
         when(q.resets_at)]
        for q in found
    ]  # fmt: skip
    headers = ["scope", "measure", "per", "max", "used", "when_over", "resets_at"]
    echo_table(headers, rows, empty="no scope has a quota")


@scopes.command("quota")
@store_options
@server_options
@click.argument("scope")
@click.argument("measure")
@click.option(
    "--per", type=click.Choice(["day", "month"]), required=True,
    help="The quota's window: a day or a month (UTC, by the store's clock).",
)  # fmt: skip
@click.option(
    "--max", "amount", type=click.FloatRange(0, 1e15), default=None,
    help="At most this much of MEASURE per window (money in its currency).",
)  # fmt: skip
@click.option(
    "--when-over", type=click.Choice(["wait", "refuse"]), default=None,
    help="Over the quota, new objectives wait (the default) or are refused with 429.",
)  # fmt: skip
@click.option("--none", "remove", is_flag=True, help="Remove the quota (widening).")
def quota(home: Path, output: str, server: str | None, token_file: Path | None, scope: str,
          measure: str, per: str, amount: float | None, when_over: str | None,
          remove: bool) -> None:  # fmt: skip
    """Set SCOPE's quota of MEASURE (runs, tokens, tool_calls, money.<CURRENCY>) per day or
    month (--max N) or remove it (--none). Over it, the scope's new objectives wait in
    waiting_for_capacity, or are refused with 429 quota_exceeded (--when-over refuse), until
    the window resets. Setting or lowering a quota is an operator's to do; raising or
    removing one widens it and needs an admin.

    \b
    Examples:
        openseal scopes quota acme runs --per day --max 1000
        openseal scopes quota acme money.USD --per month --max 250 --when-over refuse
        openseal scopes quota acme runs --per day --none
    """
    if (amount is None) == (not remove):
        raise click.UsageError("give exactly one of --max N and --none")
    with connected(home, server, token_file) as at:
        set_to = at.ask(
            lambda store: service.set_scope_quota(
                store, scope, measure, per, amount, when_over, service.CLI
            ),
            "scopes.set_quota", "scopes", scope, "quotas", measure, per, method="PUT",
            body={"max": amount, "when_over": when_over},
            read=lambda answer: None if answer["quota"] is None
            else record(service.ScopeQuota, answer["quota"]),
        )  # fmt: skip
    if output != "text":
        echo_data({"quota": set_to}, output)
        return
    if set_to is None:
        click.echo(f"scope {scope}: no quota of {measure} per {per}")
        return
    click.echo(
        f"scope {scope}: at most {_amount(set_to.max)} {measure} per {per}, over it new "
        f"objectives {'are refused' if set_to.when_over == 'refuse' else 'wait'} "
        f"({_amount(set_to.used)} used; resets at {when(set_to.resets_at)})"
    )


@scopes.command("queue")
@store_options
@server_options
@click.argument("scope")
@click.option(
    "--max", "max_queued", type=click.IntRange(0, 10_000_000), default=None,
    help="At most this many of the scope's runs waiting for a worker.",
)  # fmt: skip
@click.option("--none", "remove", is_flag=True, help="Remove the bound (widening).")
def queue(home: Path, output: str, server: str | None, token_file: Path | None, scope: str,
          max_queued: int | None, remove: bool) -> None:  # fmt: skip
    """Bound SCOPE's ready queue (--max N) or remove the bound (--none): while N of its runs
    wait for a worker, new objectives in it and events that would start one are refused with
    429 queue_full. Lowering is an operator's to do; raising or removing needs an admin.

    \b
    Examples:
        openseal scopes queue acme --max 500
        openseal scopes queue acme --none
    """
    if (max_queued is None) == (not remove):
        raise click.UsageError("give exactly one of --max N and --none")
    with connected(home, server, token_file) as at:
        set_to = at.ask(
            lambda store: service.set_scope_queue(store, scope, max_queued, service.CLI),
            "scopes.set_queue", "scopes", scope, "queue", method="PUT",
            body={"max_queued": max_queued}, read=one(service.ScopeQueue, "queue"),
        )  # fmt: skip
    if output != "text":
        echo_data({"queue": set_to}, output)
        return
    shown = "no bound" if set_to.max_queued is None else f"at most {set_to.max_queued}"
    click.echo(f"scope {scope}: {shown} waiting for a worker ({set_to.queued} now)")


@scopes.command("retention")
@store_options
@server_options
def retention(home: Path, output: str, server: str | None, token_file: Path | None) -> None:
    """Every scope's retention you can see: how long its ended runs stay in the live store
    before `openseal db archive` may take them (a workflow's own retention still applies: the
    longer wins).

    \b
    Examples:
        openseal scopes retention
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            lambda store: service.scope_retentions(store, service.CLI),
            "scopes.retention", "scopes", "retention",
            read=many(service.ScopeRetention, "retention"),
        )  # fmt: skip
    if output != "text":
        echo_data({"retention": found}, output)
        return
    rows = [[s.scope, str(s.keep_ended_runs), s.updated_by, when(s.updated_at)] for s in found]
    headers = ["scope", "keep_ended_runs", "set_by", "set_at"]
    echo_table(headers, rows, empty="no scope has a retention setting")


@scopes.command("set-retention")
@store_options
@server_options
@click.argument("scope")
@click.option(
    "--keep-ended-runs",
    "period",
    default=None,
    metavar="PERIOD",
    help="Keep the scope's ended runs live this long (30d, 12h, 1w; at least 1h).",
)
@click.option("--none", "remove", is_flag=True, help="Remove the scope's setting (an admin's).")
def set_retention(home: Path, output: str, server: str | None, token_file: Path | None,
                  scope: str, period: str | None, remove: bool) -> None:  # fmt: skip
    """Keep SCOPE's ended runs in the live store for PERIOD (--keep-ended-runs) or remove the
    setting (--none). Setting or lengthening it is an operator's; shortening or removing it
    lets runs leave the live store sooner and needs an admin.

    \b
    Examples:
        openseal scopes set-retention procurement --keep-ended-runs 400d
        openseal scopes set-retention procurement --none
    """
    if (period is None) == (not remove):
        raise click.UsageError("give exactly one of --keep-ended-runs PERIOD and --none")
    with connected(home, server, token_file) as at:
        set_to = at.ask(
            lambda store: service.set_scope_retention(store, scope, period, service.CLI),
            "scopes.set_retention", "scopes", scope, "retention", method="PUT",
            body={"keep_ended_runs": period}, read=one(service.ScopeRetention, "retention"),
        )  # fmt: skip
    if output != "text":
        echo_data({"retention": set_to}, output)
        return
    if set_to.keep_ended_runs is None:
        click.echo(f"scope {scope}: no retention setting (the deployment's default applies)")
    else:
        click.echo(f"scope {scope}: ended runs stay live {set_to.keep_ended_runs}")
