"""``openseal deploy PATH|BUNDLE``: file a change proposal for compiled definitions.

Deploying never activates: it stores the versions and files a proposal that is reviewed,
decided and activated with ``openseal proposals ...``. ``--wait-for-activation`` blocks until
someone activates it (exit 0) or it is rejected, superseded or the timeout passes (exit 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal import __version__
from openseal.cli.client import connected, one
from openseal.cli.governance import filing, governed, in_use_lines, short
from openseal.cli.output import echo_data
from openseal.errors import OpenSealError, UsageError
from openseal.runtime.service import OPEN_CHANGE_PROPOSAL_STATUSES as OPEN_STATUSES
from openseal.runtime.service import ChangeProposalStatus as S
from openseal.wire import jsonable

if TYPE_CHECKING:
    from openseal.compiler import Bundle, CompiledDocument
    from openseal.runtime.service import governance as gov


@click.command("deploy")
@governed
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--message", "-m", default=None, help="What the change is for.")
@click.option(
    "--wait-for-activation", "wait", is_flag=True, help="Wait until the proposal is activated."
)
@click.option(
    "--timeout",
    type=click.FloatRange(0),
    default=600.0,
    show_default=True,
    help="Seconds to wait with --wait-for-activation.",
)
def deploy(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str, path: Path,
    message: str | None, wait: bool, timeout: float,
) -> None:  # fmt: skip
    """Store the definitions at PATH and file a change proposal for what changed.

    PATH is a bundle directory (from `openseal compile`) or definition files/directories,
    compiled first (exit 1 on error diagnostics). Each workflow, runbook and governance
    definition is a deployment; the proposal holds the semantic diff against the active
    versions. Nothing is activated until the proposal is approved and activated. Without
    --server the store under --home is changed as --actor; with --server (or OPENSEAL_SERVER)
    the compiled documents are posted to that server as the token's principal.

    \b
    Examples:
        openseal deploy definitions/procurement/hcl --message "cheaper vendor search"
        openseal deploy build/ --wait-for-activation --timeout 600
    """
    from openseal.runtime.service import governance as gov
    from openseal.runtime.store import ChangeProposal

    source = _load(path)
    with connected(home, server, token_file, create=True) as at:
        caller = at.acting(actor)
        result = at.ask(
            lambda store: gov.deploy(store, gov.Deployment(source, message), caller),
            "proposals.file", "proposals", method="POST",
            body={"documents": _documents(source), "message": message},
            read=filing,
        )  # fmt: skip
        final = None
        if output == "text":
            print_filed(result)  # before waiting: the id is what the reviewers need
        if wait and result.proposal is not None:
            proposal = result.proposal.id
            click.echo(
                f"waiting up to {timeout:g} s for change proposal {proposal} to be activated "
                f"(it is {result.proposal.status}; its reviewers and deciders act on it with "
                f"`openseal proposals review|decide|activate {proposal}`)",
                err=True,
            )
            final = gov.wait_for_activation(
                lambda: at.ask(
                    lambda store: gov.get_proposal(store, proposal),
                    "proposals.show", "proposals", proposal, read=one(ChangeProposal, "proposal"),
                ),
                timeout,
            )  # fmt: skip
    if output != "text":
        echo_data(filed_json(result, final), output)
    elif final is not None:
        click.echo(f"change proposal {final.id} is {final.status}")
    if final is not None and final.status is not S.ACTIVATED:
        if final.status in OPEN_STATUSES:
            reason = f"still {final.status} after waiting {timeout:g} s for activation"
        else:
            reason = f"{final.status}; it will not be activated"
        click.echo(f"error: change proposal {final.id} is {reason}", err=True)
        raise click.exceptions.Exit(1)


def _documents(source: Mapping[str, CompiledDocument] | Bundle) -> list[dict[str, Any]]:
    """The compiled documents as the API takes them (the JSON ``openseal compile`` writes)."""
    from openseal.compiler import Bundle

    if isinstance(source, Bundle):
        return [entry.document for entry in source.entries.values()]
    return [document.document for document in source.values()]


def _load(path: Path) -> Mapping[str, CompiledDocument] | Bundle:
    from openseal.cli.output import emit_diagnostics
    from openseal.compiler import Stage, compile_paths, is_bundle, read_bundle

    if path.is_dir() and is_bundle(path):
        return read_bundle(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    result = compile_paths([path], through=Stage.EMIT)
    if not result.ok:
        loaded = result.loaded
        emit_diagnostics(
            result.diagnostics, loaded.sources, len(loaded.files), "human", __version__
        )
        raise OpenSealError(f"{path} does not compile; nothing deployed")
    return result.documents


def print_filed(result: gov.DeployResult) -> None:
    proposal = result.proposal
    if proposal is None:
        click.echo(result.note or "nothing to deploy")
        return
    if not result.created:
        click.echo(
            f"change proposal {proposal.id} is already open for these versions "
            f"(status {proposal.status})"
        )
        return
    risk = "yes" if proposal.risk_widening else "no"
    click.echo(f"filed change proposal {proposal.id}; status {proposal.status}")
    for target in proposal.targets:
        base = proposal.base.get(target.name)
        click.echo(f"  {target.name} ({target.kind}): {short(base)} -> {short(target.digest)}")
    if result.unchanged:
        click.echo(f"  unchanged: {', '.join(result.unchanged)}")
    click.echo(f"  risk widening: {risk}")
    for line in in_use_lines(result.in_use):
        click.echo(f"  in use: {line}")
    click.echo(f"next: openseal proposals show {proposal.id}")


def filed_json(result: gov.DeployResult, final: Any = None) -> dict[str, Any]:
    return {**jsonable(result), "final_status": None if final is None else str(final.status)}
