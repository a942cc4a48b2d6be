"""``openseal deployments ...``: which version each deployment runs, which versions live runs
still use, every activation, and rolling back (as a change proposal, see ``docs/governance.md``).
"""

from __future__ import annotations

from pathlib import Path

import click

from openseal.cli.client import connected, many, record, server_options
from openseal.cli.governance import filing, governed, short
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.runtime import store_options
from openseal.runtime import service


@click.group()
def deployments() -> None:
    """Deployments: which version each workflow, runbook and governance name runs.

    Without --server they act on the store under --home; with --server (or OPENSEAL_SERVER)
    they ask that server as the token's principal.
    """


@deployments.command("list")
@store_options
@server_options
def deployments_list(home: Path, output: str, server: str | None, token_file: Path | None) -> None:
    """List deployments and their active versions.

    \b
    Examples:
        openseal deployments list --output json
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            service.governance.list_deployments, "deployments.list", "deployments",
            read=many(service.governance.DeploymentInfo, "deployments"),
        )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [
        [item.name, str(item.kind), short(item.active_digest), str(item.revision),
         when(item.activated_at), item.activated_by or "-", handle(item.change_proposal_id)]
        for item in found
    ]  # fmt: skip
    headers = ["name", "kind", "version", "revision", "activated", "by", "proposal"]
    echo_table(headers, rows, empty="no deployments")


@deployments.command("show")
@store_options
@server_options
@click.argument("name")
def deployments_show(
    home: Path, output: str, server: str | None, token_file: Path | None, name: str
) -> None:
    """Show a deployment and the versions its live (not ended) runs are pinned to.

    A run keeps the version it started on to its end, so an old version is still in use while
    it has live runs; each version is listed with how many.

    \b
    Examples:
        openseal deployments show procure_laptops
    """
    with connected(home, server, token_file, read_only=True) as at:
        shown = at.ask(
            lambda store: service.governance.deployment_versions(store, name),
            "deployments.show", "deployments", name,
            read=lambda answer: record(service.governance.DeploymentVersions, answer),
        )  # fmt: skip
    if output != "text":
        echo_data(shown, output)
        return
    info = shown.deployment
    click.echo(f"deployment {info.name}  ({info.kind})")
    click.echo(f"  active       {short(info.active_digest)}  (revision {info.revision})")
    by = f" by {info.activated_by}" if info.activated_by else ""
    click.echo(f"  activated    {when(info.activated_at)}{by}")
    runs = "run" if shown.live_runs == 1 else "runs"
    click.echo(f"  live runs    {shown.live_runs} {runs} on {len(shown.live)} version(s)")
    rows = [
        [short(v.digest), str(v.runs), "active" if v.digest == info.active_digest else "-"]
        for v in shown.live
    ]
    echo_table(["version", "live runs", "active"], rows, empty="no live runs")


@deployments.command("history")
@store_options
@server_options
@click.argument("name")
def deployments_history(
    home: Path, output: str, server: str | None, token_file: Path | None, name: str
) -> None:
    """Every activation of a deployment, oldest first: who, when, from which proposal.

    \b
    Examples:
        openseal deployments history procure_laptops
    """
    from openseal.runtime.store import Activation

    with connected(home, server, token_file, read_only=True) as at:
        history = at.ask(
            lambda store: service.governance.deployment_history(store, name),
            "deployments.history", "deployments", name, "history",
            read=many(Activation, "activations"),
        )  # fmt: skip
    if output != "text":
        echo_data(history, output)
        return
    rows = [
        [when(item.at), short(item.previous_digest), short(item.digest), item.actor,
         handle(item.change_proposal_id)]
        for item in history
    ]  # fmt: skip
    headers = ["activated", "from", "to", "by", "proposal"]
    echo_table(headers, rows, empty=f"no activations of {name}")


@deployments.command("rollback")
@governed
@click.argument("name")
@click.option("--to", "to", default=None, help="Digest (or prefix) of an earlier version.")
@click.option("--message", default=None, help="Why; recorded with the proposal.")
def deployments_rollback(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str, name: str,
    to: str | None, message: str | None,
) -> None:  # fmt: skip
    """File a rollback proposal re-activating an earlier version of NAME.

    Without --to, the version active before the current one. The proposal is reviewed,
    decided and activated like any other change.

    \b
    Examples:
        openseal deployments rollback procure_laptops --message "vendor API broke"
        openseal deployments rollback procure_laptops --to 888401d4
    """
    request = service.governance.Rollback(name, to, message)
    with connected(home, server, token_file) as at:
        caller = at.acting(actor)
        result = at.ask(
            lambda store: service.governance.rollback(store, request, caller),
            "deployments.rollback", "deployments", name, "rollback", method="POST",
            body={"to": to, "message": message}, read=filing,
        )  # fmt: skip
    proposal = result.proposal
    assert proposal is not None
    if output != "text":
        echo_data({"proposal": proposal, "created": result.created}, output)
        return
    verb = "filed" if result.created else "already open"
    target = proposal.targets[0]
    click.echo(
        f"rollback proposal {proposal.id} {verb}: {name} -> {short(target.digest)}; "
        f"status {proposal.status}"
    )
