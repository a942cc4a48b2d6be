"""``openseal approvals ...``: list, show and decide approvals bound to a proposal's hash.

Deciding needs an approval authority (``--authority FILE``, ``OPENSEAL_APPROVAL_AUTHORITY`` or
``<home>/approvals.yaml``); without one decisions are not served. The CLI acts as the local
operator (``user:local``) and must name the hash it was shown (``approvals show`` prints it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from openseal.cli.output import echo_data, plain
from openseal.cli.runtime import complete_ids, opened, store_options
from openseal.runtime import service
from openseal.runtime.service import AUTHORITY_ENV, ApprovalError, load_authority
from openseal.runtime.store import Approval

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def approvals() -> None:
    """Approvals: see the exact proposal and its hash, then approve, reject or request changes."""


def _line(approval: Approval) -> str:
    expires = approval.expires_at.isoformat(timespec="seconds") if approval.expires_at else "-"
    return (
        f"{approval.id}  {approval.status:<17} {approval.proposal_name:<12} "
        f"{approval.proposal_hash}  run {approval.run_id}  expires {expires}"
    )


@approvals.command("list")
@store_options
@click.option("--status", default=None, help="Only approvals with this status (e.g. pending).")
@click.option("--run", "run_id", default=None, help="Only approvals of this run.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_approvals(
    home: Path, output: str, status: str | None, run_id: str | None, limit: int
) -> None:
    """Newest approvals first.

    \b
    Examples:
        openseal approvals list --status pending
    """
    with opened(home) as store:
        found = service.list_approvals(store, status=status, run_id=run_id, limit=limit)
    if output != "text":
        echo_data(found, output)
        return
    for approval in found:
        click.echo(_line(approval))


@approvals.command("show")
@store_options
@click.argument("ref", metavar="ID_OR_HASH", shell_complete=complete_ids("approval"))
def show(home: Path, output: str, ref: str) -> None:
    """Every field of the exact proposal, and the hash to decide on.

    \b
    Examples:
        openseal approvals show 01a22b
    """
    with opened(home) as store:
        view = service.show_approval(store, service.complete_id(store, "approval", ref))
    approval, proposal = view.approval, view.proposal
    if output != "text":
        echo_data({"approval": approval, "proposal": proposal.document,
                   "hash": approval.proposal_hash, "verified": proposal.verified,
                   "unverified_reason": proposal.problem}, output)  # fmt: skip
        return
    click.echo(f"approval {approval.id}  {approval.status}  run {approval.run_id}")
    click.echo(f"  approvers  {', '.join(approval.approvers) or '(any)'}")
    click.echo(f"  scope      {approval.scope}")
    if approval.expires_at:
        click.echo(f"  expires    {approval.expires_at.isoformat(timespec='seconds')}")
    if approval.decision:
        click.echo(f"  decided    {approval.decision} by {approval.decided_by} "
                   f"({approval.reason or 'no reason given'})")  # fmt: skip
    state = "verified against its artefact" if proposal.verified else "NOT VERIFIED"
    click.echo(f"proposal {approval.proposal_name} ({state}):")
    if proposal.problem is not None:
        click.echo(f"  not verified: {proposal.problem}")
        click.echo("  it cannot be approved; what is shown below is not known to be the content")
    text = json.dumps(plain(proposal.document), indent=2, sort_keys=True)
    for line in text.splitlines():
        click.echo(f"  {line}")
    click.echo(f"hash {approval.proposal_hash}")
    click.echo(f"decide with: --hash {approval.proposal_hash}")


def decision_options(command: F) -> F:
    command = click.option(
        "--authority", type=click.Path(path_type=Path, dir_okay=False), default=None,
        envvar=AUTHORITY_ENV, help="Approval authority file (default <home>/approvals.yaml).",
    )(command)  # fmt: skip
    command = click.option(
        "--hash", "seen_hash", required=True,
        help="The proposal hash you were shown (`openseal approvals show`).",
    )(command)  # fmt: skip
    return click.argument("ref", metavar="ID_OR_HASH", shell_complete=complete_ids("approval"))(
        command
    )


def _decide(
    home: Path, output: str, ref: str, decision: str, seen_hash: str, authority: Path | None,
    reason: str | None,
) -> None:  # fmt: skip
    with opened(home) as store:
        try:
            request = service.ApprovalDecision(
                service.complete_id(store, "approval", ref), decision, seen_hash, reason
            )
            decided = service.decide_approval(
                store, load_authority(authority, home=home), request, service.CLI
            )
        except ApprovalError as exc:
            raise ApprovalError(f"{exc.message} [{exc.code}]", code=exc.code) from None
    approval = decided.approval
    if output != "text":
        echo_data({"approval": approval, "changed": decided.changed}, output)
        return
    verb = "recorded" if decided.changed else "already recorded (nothing changed)"
    click.echo(f"approval {approval.id} {approval.status} by {approval.decided_by}: {verb}")


@approvals.command("approve")
@store_options
@decision_options
def approve(home: Path, output: str, ref: str, seen_hash: str, authority: Path | None) -> None:
    """Approve the exact proposal whose hash you name.

    \b
    Examples:
        openseal approvals approve 01a22b --hash bf85238147
    """
    _decide(home, output, ref, "approve", seen_hash, authority, None)


@approvals.command("reject")
@store_options
@decision_options
@click.option("--reason", required=True, help="Why (kept with the decision).")
def reject(
    home: Path, output: str, ref: str, seen_hash: str, authority: Path | None, reason: str
) -> None:
    """Reject the proposal.

    \b
    Examples:
        openseal approvals reject 01a22b --hash bf85238147 --reason "too expensive"
    """
    _decide(home, output, ref, "reject", seen_hash, authority, reason)


@approvals.command("request-changes")
@store_options
@decision_options
@click.option("--reason", required=True, help="What should change.")
def request_changes(
    home: Path, output: str, ref: str, seen_hash: str, authority: Path | None, reason: str
) -> None:
    """Send the proposal back to be drafted again.

    \b
    Examples:
        openseal approvals request-changes 01a22b --hash bf85238147 --reason "prefer fabrikam"
    """
    _decide(home, output, ref, "request_changes", seen_hash, authority, reason)
