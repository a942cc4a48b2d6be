"""``openseal runs migrate``: move the waiting runs a change proposal migrates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from openseal.cli.client import connected, server_options
from openseal.cli.governance import actor_option
from openseal.cli.output import echo_data, echo_table
from openseal.cli.runtime import store_options


@click.command("migrate")
@store_options
@server_options
@actor_option
@click.option(
    "--proposal", "proposal_id", required=True, help="The change proposal (id or prefix)."
)
@click.option("--dry-run", is_flag=True, help="Show which runs would move where; change nothing.")
@click.option("--workflow", default=None, help="Only runs of this workflow.")
@click.option("--version", default=None, help="Only runs on this earlier version (digest prefix).")
@click.option("--state", default=None, help="Only runs waiting in this state of it.")
def migrate_command(
    home: Path, output: str, server: str | None, token_file: Path | None, actor: str,
    proposal_id: str, dry_run: bool, workflow: str | None, version: str | None,
    state: str | None,
) -> None:  # fmt: skip
    """Move the waiting runs an activated change proposal migrates to its workflow version.

    Each run moves in its own transaction with one `run.migrated` event; a run whose action
    may have had an effect that is not settled stays (`blocked`), and so does any run the
    proposal's `migrate` block does not cover. Activating the proposal already does this;
    run it again after an interruption (a run is never moved twice), or with --dry-run to
    review what would move. Exits 0 when done, 1 when refused.

    \b
    Examples:
        openseal runs migrate --proposal 01a22bba --dry-run
        openseal runs migrate --proposal 01a22bba --workflow procure_laptops --state review
    """
    from openseal.runtime.service import governance as gov

    request = gov.RunMigration(proposal_id, dry_run, workflow, version, state)
    body = {"dryRun": dry_run, "workflow": workflow, "version": version, "state": state}
    with connected(home, server, token_file) as at:
        caller = at.acting(actor)
        answer: dict[str, Any] = at.ask(
            lambda store: _answer(gov.migrate_runs(store, request, caller)),
            "proposals.migrate", "proposals", proposal_id, "migrate", method="POST", body=body,
        )  # fmt: skip
    if output != "text":
        echo_data(answer, output)
        return
    _print(answer)


def _answer(report: Any) -> dict[str, Any]:
    from openseal.wire import jsonable

    return {"migration": jsonable(report), "counts": report.counts}


def _print(answer: dict[str, Any]) -> None:
    migration = answer["migration"]
    moves = migration["moves"]
    verb = "would move" if migration["dry_run"] else "moved"
    rows = [
        [
            m["run_id"][:12],
            f"{m['from_version'][:12]}:{m['from_state']}",
            f"{m['to_version'][:12]}:{m['to_state'] or '-'}",
            m["outcome"] + (f" (approval {m['approval']})" if m["approval"] else ""),
            m["reason"] or "",
        ]
        for m in moves
    ]
    if rows:
        echo_table(["RUN", "FROM", "TO", "OUTCOME", "WHY"], rows)
    counts = ", ".join(f"{n} {outcome}" for outcome, n in answer["counts"].items()) or "no runs"
    click.echo(f"change proposal {migration['proposal_id']}: {counts} ({verb})")
