"""``openseal actions ...``: list and show actions, reconcile an unknown one, resolve by hand."""

from __future__ import annotations

import json
from pathlib import Path

import click

from openseal.cli.output import echo_data, plain
from openseal.cli.runtime import complete_ids, opened, store_options
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.store import Action
from openseal.runtime.store import action_boundary as boundary
from openseal.skills.credentials import RuntimeContext


@click.group()
def actions() -> None:
    """Governed actions: their status, key, result, and what to do when the outcome is unknown."""


def _line(action: Action) -> str:
    result = json.dumps(action.result, sort_keys=True) if action.result is not None else "-"
    return f"{action.id}  {action.status:<20} {action.skill:<24} {action.key}  {result}"


@actions.command("list")
@store_options
@click.option("--status", default=None, help="Only actions with this status (e.g. unknown).")
@click.option("--run", "run_id", default=None, help="Only actions of this run.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_actions(
    home: Path, output: str, status: str | None, run_id: str | None, limit: int
) -> None:
    """Newest actions first.

    \b
    Examples:
        openseal actions list --status needs_attention
    """
    with opened(home) as store:
        found = service.list_actions(store, status=status, run_id=run_id, limit=limit)
    if output != "text":
        echo_data(found, output)
        return
    for action in found:
        click.echo(_line(action))


@actions.command("show")
@store_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
def show(home: Path, output: str, action_id: str) -> None:
    """An action, its proposal, its spend and its history.

    \b
    Examples:
        openseal actions show 01a22b
    """
    with opened(home) as store:
        view = service.show_action(store, service.complete_id(store, "action", action_id))
    action = view.action
    if output != "text":
        echo_data(
            {"action": action, "proposal": view.proposal.document, "spend": view.spend}, output
        )
        return
    click.echo(f"action {action.id}  {action.status}  skill {action.skill}  run {action.run_id}")
    click.echo(f"  key        {action.key}")
    click.echo(f"  proposal   {action.proposal_name} {action.proposal_hash}")
    click.echo(f"  args       {json.dumps(view.proposal.document.get('args'), sort_keys=True)}")
    click.echo(f"  attempts   {action.attempts}")
    if action.dispatched_at is not None:
        click.echo(f"  boundary   {boundary(action)['note']}")
    if action.result is not None:
        click.echo(f"  result     {json.dumps(plain(action.result), sort_keys=True)}")
    if action.error:
        click.echo(f"  problem    {action.error}")
    if action.resolution:
        click.echo(f"  resolved   {json.dumps(action.resolution, sort_keys=True)}")
    for spend in view.spend:
        click.echo(f"  spend      {spend['amount']} {spend['currency']} on {spend['scope']} "
                   f"({spend['status']})")  # fmt: skip
    for entry in action.history:
        note = f"  {entry['note']}" if entry.get("note") else ""
        click.echo(f"  {entry['at']}  {entry['from']} -> {entry['to']}  {entry['actor']}{note}")


@actions.command("reconcile")
@store_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
@click.option(
    "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_CONTEXT", help="Runtime context file (adapter config, credential sources).",
)  # fmt: skip
def reconcile(home: Path, output: str, action_id: str, context_path: Path | None) -> None:
    """Ask the destination about an action whose outcome is open (lookup or same-key retry).

    \b
    Examples:
        openseal actions reconcile 01a22b --context .openseal/context.yaml
    """
    context = RuntimeContext.load(context_path)
    with opened(home) as store:
        action, pending = service.reconcile_action(
            store,
            service.Reconciliation(service.complete_id(store, "action", action_id)),
            service.CLI,
            context=context,
        )
    if output != "text":
        echo_data({"action": action, "pending": pending}, output)
        return
    click.echo(f"action {action.id} is {action.status}" + (f": {pending}" if pending else ""))


@actions.command("resolve")
@store_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
@click.option("--outcome", type=click.Choice(["succeeded", "failed"]), required=True)
@click.option("--evidence", required=True, help="What you checked at the destination.")
@click.option("--result", "result_json", default=None, help="JSON result, e.g. the order id.")
def resolve(
    home: Path, output: str, action_id: str, outcome: str, evidence: str, result_json: str | None
) -> None:
    """Settle an action by hand after checking the destination; the run then continues.

    \b
    Examples:
        openseal actions resolve 01a22b --outcome succeeded \\
        --evidence "PO-000001 is in the vendor portal" --result '{"order_id": "PO-000001"}'
    """
    result = None
    if result_json is not None:
        try:
            result = json.loads(result_json)
        except ValueError:
            raise UsageError(f"--result must be JSON: {result_json!r}") from None
    with opened(home) as store:
        action = service.resolve_action(
            store,
            service.Resolution(
                service.complete_id(store, "action", action_id), outcome, evidence, result=result
            ),
            service.CLI,
        )
    if output != "text":
        echo_data(action, output)
        return
    click.echo(f"action {action.id} resolved as {action.status}")
