"""``openseal approvals ...``: list, show and decide approvals bound to a proposal's hash.

On the embedded store, deciding needs an approval authority (``--authority FILE``,
``OPENSEAL_APPROVAL_AUTHORITY`` or ``<home>/approvals.yaml``) and the CLI acts as the local
operator (``user:local``). With ``--server`` the server's authority decides who may approve, as
the token's principal. Either way the decision must name the hash that was shown
(``approvals show`` prints it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.cli.client import Connection, ServerError, connected, listed, record, server_options
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.runtime import complete_ids, list_options, more_hint, store_options
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.service import AUTHORITY_ENV, ApprovalStatus

if TYPE_CHECKING:
    from openseal.runtime.store import Approval, Store
from openseal.wire import jsonable

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def approvals() -> None:
    """Approvals: see the exact proposal and its hash, then approve, reject or request changes.

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


@approvals.command("list")
@store_options
@server_options
@list_options(ApprovalStatus, "approvals")
@click.option(
    "--run",
    "run_id",
    default=None,
    help="Only approvals of this run.",
    shell_complete=complete_ids("run"),
)
def list_approvals(
    home: Path, output: str, server: str | None, token_file: Path | None, status: str | None,
    workflow: str | None, since: str | None, limit: int, after: str | None, run_id: str | None,
) -> None:  # fmt: skip
    """Newest approvals first.

    \b
    Examples:
        openseal approvals list --status pending
        openseal approvals list --workflow procure_laptops --since 1d
        openseal approvals list --server https://openseal.example.com
    """
    from openseal.runtime.store import Approval

    with connected(home, server, token_file, read_only=True) as at:
        run_id = None if run_id is None else at.id("run", run_id)
        found = listed(
            at, Approval, "approvals", service.list_approvals, status=status, run_id=run_id,
            workflow=workflow, since=since, limit=limit, after=after,
        )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [
        [
            handle(a.id),
            str(a.status),
            a.proposal_name,
            handle(a.run_id),
            when(a.expires_at),
            a.proposal_hash,
        ]
        for a in found
    ]
    echo_table(
        ["handle", "status", "proposal", "run", "expires", "hash"],
        rows,
        shrink=["hash"],
        empty="no approvals",
    )
    more_hint(found, limit)


@dataclass(frozen=True)
class _Shown:
    """An approval with the exact proposal, as the store or the server showed it."""

    approval: Approval
    document: dict[str, Any]
    verified: bool
    problem: str | None


def _show(at: Connection[Store], ref: str) -> _Shown:
    from openseal.runtime.store import Approval

    def shown(view: service.ApprovalView) -> _Shown:
        proposal = view.proposal
        return _Shown(view.approval, proposal.document, proposal.verified, proposal.problem)

    def read(answer: dict[str, Any]) -> _Shown:
        return _Shown(record(Approval, answer["approval"]), answer["proposal"],
                      answer["verified"], answer["unverified_reason"])  # fmt: skip

    ref = at.id("approval", ref)
    return at.ask(
        lambda store: shown(service.show_approval(store, ref)),
        "approvals.show",
        "approvals",
        ref,
        read=read,
    )


@approvals.command("show")
@store_options
@server_options
@click.argument("ref", metavar="ID_OR_HASH", shell_complete=complete_ids("approval"))
def show(home: Path, output: str, server: str | None, token_file: Path | None, ref: str) -> None:
    """Every field of the exact proposal, and the hash to decide on.

    \b
    Examples:
        openseal approvals show 01a22b
    """
    with connected(home, server, token_file, read_only=True) as at:
        shown = _show(at, ref)
    approval = shown.approval
    if output != "text":
        echo_data({"approval": approval, "proposal": shown.document,
                   "hash": approval.proposal_hash, "verified": shown.verified,
                   "unverified_reason": shown.problem}, output)  # fmt: skip
        return
    click.echo(f"approval {approval.id}  {approval.status}  run {approval.run_id}")
    click.echo(f"  approvers  {', '.join(approval.approvers) or '(any)'}")
    click.echo(f"  scope      {approval.scope}")
    if approval.expires_at:
        click.echo(f"  expires    {when(approval.expires_at)}")
    if approval.decision:
        click.echo(f"  decided    {approval.decision} by {approval.decided_by} "
                   f"({approval.reason or 'no reason given'})")  # fmt: skip
    state = "verified against its artefact" if shown.verified else "NOT VERIFIED"
    click.echo(f"proposal {approval.proposal_name} ({state}):")
    if shown.problem is not None:
        click.echo(f"  not verified: {shown.problem}")
        click.echo("  it cannot be approved; what is shown below is not known to be the content")
    text = json.dumps(jsonable(shown.document), indent=2, sort_keys=True)
    for line in text.splitlines():
        click.echo(f"  {line}")
    click.echo(f"hash {approval.proposal_hash}")
    click.echo(f"decide with: --hash {approval.proposal_hash}")


def decision_options(command: F) -> F:
    command = server_options(command)
    command = click.option(
        "--authority", type=click.Path(path_type=Path, dir_okay=False), default=None,
        envvar=AUTHORITY_ENV, help="Approval authority file (default <home>/approvals.yaml; "
        "with --server the server's authority applies).",
    )(command)  # fmt: skip
    command = click.option(
        "--hash", "seen_hash", required=True, callback=_hash_prefix,
        help="The proposal hash you were shown (`openseal approvals show`), or its first "
        f"{service.MIN_HASH_PREFIX} or more hex digits (as `openseal approvals list` shows it).",
    )(command)  # fmt: skip
    return click.argument("ref", metavar="ID_OR_HASH", shell_complete=complete_ids("approval"))(
        command
    )


def _hash_prefix(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    try:
        service.seen_hash_prefix(value)
    except UsageError as exc:
        raise click.BadParameter(exc.message) from None
    return value


@dataclass(frozen=True)
class Decision:
    """What ``approvals approve|reject|request-changes`` asked for, and where."""

    home: Path
    output: str
    server: str | None
    token_file: Path | None
    ref: str
    seen_hash: str
    authority: Path | None


def _decide(asked: Decision, decision: str, reason: str | None) -> None:
    with connected(asked.home, asked.server, asked.token_file) as at:
        try:
            approval, changed = _decided(at, asked, decision, reason)
        except (service.ApprovalError, ServerError) as exc:
            raise type(exc)(f"{exc.message} [{exc.code}]", code=exc.code) from None
    if asked.output != "text":
        echo_data({"approval": approval, "changed": changed}, asked.output)
        return
    verb = "recorded" if changed else "already recorded (nothing changed)"
    click.echo(f"approval {approval.id} {approval.status} by {approval.decided_by}: {verb}")


def _decided(
    at: Connection[Store], asked: Decision, decision: str, reason: str | None
) -> tuple[Approval, bool]:
    from openseal.runtime.store import Approval

    def local(store: Store) -> tuple[Approval, bool]:
        request = service.ApprovalDecision(ref, decision, asked.seen_hash, reason)
        authority = service.load_authority(asked.authority, home=asked.home)
        decided = service.decide_approval(store, authority, request, service.CLI)
        return decided.approval, decided.changed

    def read(answer: dict[str, Any]) -> tuple[Approval, bool]:
        return record(Approval, answer["approval"]), bool(answer["changed"])

    ref = at.id("approval", asked.ref)
    body = {"decision": decision, "hash": asked.seen_hash, "reason": reason}
    return at.ask(
        local,
        "approvals.decide",
        "approvals",
        ref,
        "decision",
        method="POST",
        body=body,
        read=read,
    )


@approvals.command("approve")
@store_options
@decision_options
def approve(**asked: Any) -> None:
    """Approve the exact proposal whose hash you name.

    \b
    Examples:
        openseal approvals approve 01a22b --hash bf85238147
    """
    _decide(Decision(**asked), "approve", None)


@approvals.command("reject")
@store_options
@decision_options
@click.option("--reason", required=True, help="Why (kept with the decision).")
def reject(reason: str, **asked: Any) -> None:
    """Reject the proposal.

    \b
    Examples:
        openseal approvals reject 01a22b --hash bf85238147 --reason "too expensive"
    """
    _decide(Decision(**asked), "reject", reason)


@approvals.command("request-changes")
@store_options
@decision_options
@click.option("--reason", required=True, help="What should change.")
def request_changes(reason: str, **asked: Any) -> None:
    """Send the proposal back to be drafted again.

    \b
    Examples:
        openseal approvals request-changes 01a22b --hash bf85238147 --reason "prefer fabrikam"
    """
    _decide(Decision(**asked), "request_changes", reason)
