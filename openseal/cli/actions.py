"""``openseal actions ...``: list and show actions, reconcile an unknown one, resolve by hand.

Each command opens the store as the local operator, or with ``--server`` asks that server, as
the token's principal (:mod:`openseal.cli.client`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal.cli.client import connected, listed, one, record, server_options
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.runtime import (
    complete_ids,
    context_option,
    list_options,
    more_hint,
    store_options,
)
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.service import ActionStatus
from openseal.wire import jsonable

if TYPE_CHECKING:
    from openseal.runtime.store import Action


@click.group()
def actions() -> None:
    """Governed actions: their status, key, result, and what to do when the outcome is unknown.

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


@actions.command("list")
@store_options
@server_options
@list_options(ActionStatus, "actions")
@click.option(
    "--run",
    "run_id",
    default=None,
    help="Only actions of this run.",
    shell_complete=complete_ids("run"),
)
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
    from openseal.runtime.store import Action

    with connected(home, server, token_file, read_only=True) as at:
        run_id = None if run_id is None else at.id("run", run_id)
        found = listed(
            at, Action, "actions", service.list_actions, status=status, run_id=run_id,
            workflow=workflow, since=since, limit=limit, after=after,
        )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [
        [handle(a.id), str(a.status), a.skill, handle(a.run_id), when(a.created_at), outcome(a)]
        for a in found
    ]
    echo_table(
        ["handle", "status", "skill", "run", "created", "outcome"],
        rows,
        shrink=["outcome"],
        empty="no actions",
    )
    more_hint(found, limit)


def outcome(action: Action) -> str:
    """What an action came to, in a few words: for one that succeeded the destination's
    answer, its ids first (``order_id=PO-000001 status=confirmed``); for one that failed or
    is open, the problem; ``-`` before there is either."""
    if action.result is not None and (action.status == ActionStatus.SUCCEEDED or not action.error):
        return _fields(jsonable(action.result))
    return action.error or "-"


def _fields(result: Any) -> str:
    """A result's plain fields as ``key=value``, ids first, so a cut line keeps the ids; a
    result with no plain field is its compact JSON."""
    if not isinstance(result, dict):
        return result if isinstance(result, str) else json.dumps(result, sort_keys=True)
    plain = {k: v for k, v in result.items() if isinstance(v, str | int | float | bool)}
    if not plain:
        return json.dumps(result, sort_keys=True, separators=(",", ":"))

    def order(key: str) -> tuple[bool, str]:
        return (not (key == "id" or key.endswith("_id")), key)

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    return " ".join(f"{key}={text(plain[key])}" for key in sorted(plain, key=order))


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
    from openseal.runtime.store import Action, action_boundary

    with connected(home, server, token_file, read_only=True) as at:
        ref = at.id("action", action_id)
        action, document, spends = at.ask(
            lambda store: _shown(service.show_action(store, ref)),
            "actions.show", "actions", ref,
            read=lambda answer: (record(Action, answer["action"]), answer["proposal"],
                                 answer["spend"]),
        )  # fmt: skip
    if output != "text":
        echo_data({"action": action, "proposal": document, "spend": spends}, output)
        return
    click.echo(f"action {action.id}  {action.status}  skill {action.skill}  run {action.run_id}")
    click.echo(f"  key        {action.key}")
    click.echo(f"  proposal   {action.proposal_name} {action.proposal_hash}")
    click.echo(f"  args       {json.dumps(document.get('args'), sort_keys=True)}")
    click.echo(f"  attempts   {action.attempts}")
    if action.dispatched_at is not None:
        click.echo(f"  boundary   {action_boundary(action)['note']}")
    if action.result is not None:
        click.echo(f"  result     {json.dumps(jsonable(action.result), sort_keys=True)}")
    if action.error:
        click.echo(f"  problem    {action.error}")
    if action.resolution:
        click.echo(f"  resolved   {json.dumps(action.resolution, sort_keys=True)}")
    for spend in spends:
        click.echo(f"  spend      {spend['amount']} {spend['currency']} on {spend['scope']} "
                   f"({spend['status']})")  # fmt: skip
    for entry in action.history:
        note = f"  {entry['note']}" if entry.get("note") else ""
        click.echo(
            f"  {when(entry['at'])}  {entry['from']} -> {entry['to']}  {entry['actor']}{note}"
        )


def _shown(view: service.ActionView) -> tuple[Action, dict[str, Any], Sequence[dict[str, Any]]]:
    return view.action, view.proposal.document, view.spend


@actions.command("reconcile")
@store_options
@server_options
@click.argument("action_id", metavar="ID_OR_KEY", shell_complete=complete_ids("action"))
@context_option(
    "Runtime context file (adapter config, credential sources; "
    "with --server the server's context applies)."
)
def reconcile(
    home: Path, output: str, server: str | None, token_file: Path | None, action_id: str,
    context_path: Path | None,
) -> None:  # fmt: skip
    """Ask the destination about an action whose outcome is open (lookup or same-key retry).

    \b
    Examples:
        openseal actions reconcile 01a22b --context .openseal/context.yaml
    """
    from openseal.runtime.store import Action
    from openseal.skills.credentials import RuntimeContext

    with connected(home, server, token_file) as at:
        ref = at.id("action", action_id)
        action, pending = at.ask(
            lambda store: service.reconcile_action(
                store, service.Reconciliation(ref), service.CLI,
                context=RuntimeContext.load(context_path),
            ),
            "actions.reconcile", "actions", ref, "reconcile", method="POST",
            read=lambda answer: (record(Action, answer["action"]), answer["pending"]),
        )  # fmt: skip
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
    from openseal.runtime.store import Action

    result = None
    if result_json is not None:
        try:
            result = json.loads(result_json)
        except ValueError:
            raise UsageError(f"--result must be JSON: {result_json!r}") from None
    with connected(home, server, token_file) as at:
        ref = at.id("action", action_id)
        action = at.ask(
            lambda store: service.resolve_action(
                store, service.Resolution(ref, outcome, evidence, result=result), service.CLI
            ),
            "actions.resolve", "actions", ref, "resolve", method="POST",
            body={"outcome": outcome, "evidence": evidence, "result": result},
            read=one(Action, "action"),
        )  # fmt: skip
    if output != "text":
        echo_data(action, output)
        return
    click.echo(f"action {action.id} resolved as {action.status}")
