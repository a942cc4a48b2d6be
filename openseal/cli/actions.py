"""``openseal actions ...``: list and show actions, reconcile an unknown one, resolve by hand.

Each command opens the store as the local operator, or with ``--server`` asks that server, as
the token's principal (:mod:`openseal.cli.client`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from openseal.cli.client import complete_remote_id, connected, record, records, server_options
from openseal.cli.output import echo_data, echo_table, plain
from openseal.cli.runtime import complete_ids, list_options, more_hint, store_options, when
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.store import Action
from openseal.runtime.store import action_boundary as boundary
from openseal.skills.credentials import RuntimeContext


@click.group()
def actions() -> None:
    """Governed actions: their status, key, result, and what to do when the outcome is unknown."""


@actions.command("list")
@store_options
@server_options
@list_options("Only actions with this status (e.g. unknown, needs_attention).")
@click.option("--run", "run_id", default=None, help="Only actions of this run.")
def list_actions(
    home: Path, output: str, server: str | None, token_file: Path | None, status: str | None,
    workflow: str | None, since: str | None, limit: int, after: str | None, run_id: str | None,
) -> None:  # fmt: skip
    """Newest actions first.

    \b
    Examples:
        openseal actions list --status needs_attention
        openseal actions list --workflow procure_laptops --since 2h
    """
    with connected(home, server, token_file) as at:
        flags = {"status": status, "workflow": workflow, "since": since, "after": after}
        if at.remote is not None:
            params = {**flags, "run": run_id, "limit": limit}
            answer = at.remote.call("GET", "/actions", operation="actions.list", params=params)
            found: Sequence[Action] = records(Action, answer["actions"])
        else:
            if run_id is not None:
                run_id = service.complete_id(at.local, "run", run_id)
            found = service.list_actions(
                at.local, status=status, run_id=run_id, workflow=workflow, since=since,
                limit=limit, after=after,
            )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [[a.id, str(a.status), a.skill, a.run_id, when(a.created_at), _result(a)] for a in found]
    echo_table(
        ["id", "status", "skill", "run", "created", "result"],
        rows,
        shrink=["result"],
        empty="no actions",
    )
    more_hint(found, limit)


def _result(action: Action) -> str:
    return json.dumps(plain(action.result), sort_keys=True) if action.result is not None else "-"


@actions.command("show")
@store_options
@server_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
def show(
    home: Path, output: str, server: str | None, token_file: Path | None, action_id: str
) -> None:
    """An action, its proposal, its spend and its history.

    \b
    Examples:
        openseal actions show 01a22b
    """
    with connected(home, server, token_file) as at:
        if at.remote is not None:
            ref = complete_remote_id(at.remote, "action", action_id)
            answer = at.remote.call("GET", f"/actions/{ref}", operation="actions.show")
            action, document = record(Action, answer["action"]), answer["proposal"]
            spends: Sequence[dict[str, Any]] = answer["spend"]
        else:
            view = service.show_action(at.local, service.complete_id(at.local, "action", action_id))
            action, document, spends = view.action, view.proposal.document, view.spend
    if output != "text":
        echo_data({"action": action, "proposal": document, "spend": spends}, output)
        return
    click.echo(f"action {action.id}  {action.status}  skill {action.skill}  run {action.run_id}")
    click.echo(f"  key        {action.key}")
    click.echo(f"  proposal   {action.proposal_name} {action.proposal_hash}")
    click.echo(f"  args       {json.dumps(document.get('args'), sort_keys=True)}")
    click.echo(f"  attempts   {action.attempts}")
    if action.dispatched_at is not None:
        click.echo(f"  boundary   {boundary(action)['note']}")
    if action.result is not None:
        click.echo(f"  result     {json.dumps(plain(action.result), sort_keys=True)}")
    if action.error:
        click.echo(f"  problem    {action.error}")
    if action.resolution:
        click.echo(f"  resolved   {json.dumps(action.resolution, sort_keys=True)}")
    for spend in spends:
        click.echo(f"  spend      {spend['amount']} {spend['currency']} on {spend['scope']} "
                   f"({spend['status']})")  # fmt: skip
    for entry in action.history:
        note = f"  {entry['note']}" if entry.get("note") else ""
        click.echo(f"  {entry['at']}  {entry['from']} -> {entry['to']}  {entry['actor']}{note}")


@actions.command("reconcile")
@store_options
@server_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
@click.option(
    "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_CONTEXT", help="Runtime context file (adapter config, credential sources; "
    "with --server the server's context applies).",
)  # fmt: skip
def reconcile(
    home: Path, output: str, server: str | None, token_file: Path | None, action_id: str,
    context_path: Path | None,
) -> None:  # fmt: skip
    """Ask the destination about an action whose outcome is open (lookup or same-key retry).

    \b
    Examples:
        openseal actions reconcile 01a22b --context .openseal/context.yaml
    """
    with connected(home, server, token_file) as at:
        if at.remote is not None:
            ref = complete_remote_id(at.remote, "action", action_id)
            answer = at.remote.call(
                "POST", f"/actions/{ref}/reconcile", operation="actions.reconcile"
            )
            action, pending = record(Action, answer["action"]), answer["pending"]
        else:
            action, pending = service.reconcile_action(
                at.local,
                service.Reconciliation(service.complete_id(at.local, "action", action_id)),
                service.CLI,
                context=RuntimeContext.load(context_path),
            )
    if output != "text":
        echo_data({"action": action, "pending": pending}, output)
        return
    click.echo(f"action {action.id} is {action.status}" + (f": {pending}" if pending else ""))


@actions.command("resolve")
@store_options
@server_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
@click.option("--outcome", type=click.Choice(["succeeded", "failed"]), required=True)
@click.option("--evidence", required=True, help="What you checked at the destination.")
@click.option("--result", "result_json", default=None, help="JSON result, e.g. the order id.")
def resolve(
    home: Path, output: str, server: str | None, token_file: Path | None, action_id: str,
    outcome: str, evidence: str, result_json: str | None,
) -> None:  # fmt: skip
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
    with connected(home, server, token_file) as at:
        if at.remote is not None:
            ref = complete_remote_id(at.remote, "action", action_id)
            body = {"outcome": outcome, "evidence": evidence, "result": result}
            answer = at.remote.call(
                "POST", f"/actions/{ref}/resolve", operation="actions.resolve", body=body
            )
            action = record(Action, answer["action"])
        else:
            store = at.local
            request = service.Resolution(
                service.complete_id(store, "action", action_id), outcome, evidence, result=result
            )
            action = service.resolve_action(store, request, service.CLI)
    if output != "text":
        echo_data(action, output)
        return
    click.echo(f"action {action.id} resolved as {action.status}")
