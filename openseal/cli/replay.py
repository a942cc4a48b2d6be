"""``openseal proposals replay`` and ``openseal replay``: recorded runs re-driven through a
version, with no model call, no tool call and no effect.

``proposals replay ID`` re-drives the selected runs of each workflow a change proposal changes
through the version it proposes; ``replay`` re-drives runs through their own pinned versions,
and with ``--check`` exits 1 when any run would not go the same way (a release of openseal
that reinterprets recorded histories fails it). See ``docs/versions.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from openseal.cli.client import connected, server_options
from openseal.cli.output import echo_data
from openseal.cli.runtime import complete_ids, store_options
from openseal.runtime import service

#: the most runs one replay re-drives
MAX_RUNS = 10_000


def _render(report: dict[str, Any], output: str) -> None:
    echo_data(report, output, lambda: click.echo(service.replay.render(report), nl=False))


@click.command("replay")
@store_options
@server_options
@click.argument("proposal_id", shell_complete=complete_ids("change proposal"))
@click.option(
    "--runs", type=click.IntRange(1, MAX_RUNS), default=None,
    help="The N newest runs of each workflow the proposal changes (default 100).",
)  # fmt: skip
@click.option(
    "--since", default=None, metavar="WHEN",
    help="The runs started since WHEN: an age (30m, 2h, 1d) or an ISO 8601 time.",
)  # fmt: skip
@click.option("--run", "run_ids", multiple=True, metavar="RUN", help="This run (repeatable).")
def proposals_replay(
    home: Path, output: str, server: str | None, token_file: Path | None, proposal_id: str,
    runs: int | None, since: str | None, run_ids: tuple[str, ...],
) -> None:  # fmt: skip
    """Replay recorded runs against a change proposal before it is decided.

    Each selected run's recorded inputs, model and tool results, approval decisions and
    delivered events are re-driven through the proposed version; nothing is called and
    nothing is written. Per run: same, diverges at STATE (and why), or needs new input at
    STATE (and what it would ask). The summary comes first.

    \b
    Examples:
        openseal proposals replay 01a22bba --since 1d
        openseal proposals replay 01a22bba --run 01a4c9d2 --output json
    """
    selection = service.replay.selection(runs=runs, since=since, run_ids=run_ids)
    body = {"runs": runs, "since": since, "run": list(run_ids) or None}
    with connected(home, server, token_file, read_only=True) as at:
        report = at.ask(
            lambda store: service.replay.replay_proposal(store, proposal_id, selection).to_json(),
            "proposals.replay", "proposals", proposal_id, "replay", method="POST",
            body={k: v for k, v in body.items() if v is not None},
        )  # fmt: skip
    _render(report, output)


@click.command("replay")
@store_options
@click.option("--check", is_flag=True, help="Exit 1 when any run does not replay the same.")
@click.option("--workflow", default=None, metavar="NAME", help="Only runs of this workflow.")
@click.option(
    "--runs", type=click.IntRange(1, MAX_RUNS), default=None,
    help="The N newest runs (default 100).",
)  # fmt: skip
@click.option(
    "--since", default=None, metavar="WHEN",
    help="The runs started since WHEN: an age (30m, 2h, 1d) or an ISO 8601 time.",
)  # fmt: skip
@click.option("--run", "run_ids", multiple=True, metavar="RUN", help="This run (repeatable).")
def replay(
    home: Path, output: str, check: bool, workflow: str | None, runs: int | None,
    since: str | None, run_ids: tuple[str, ...],
) -> None:  # fmt: skip
    """Re-drive recorded runs through their own pinned versions and compare.

    A run that took its path under this release of openseal replays the same; a divergence
    means the runtime now reads that history differently. Nothing is called or written.

    \b
    Examples:
        openseal replay --check
        openseal replay --check --workflow procure_laptops --runs 500
    """
    selection = service.replay.selection(runs=runs, since=since, run_ids=run_ids, workflow=workflow)
    with connected(home, None, None, read_only=True) as at:
        report = service.replay.check_runs(at.local, selection)
    _render(report.to_json(), output)
    if check and not report.clean:
        counts = report.counts()
        differ = counts["diverges"] + counts["needs_input"]
        click.echo(f"error: {differ} run(s) do not replay the same", err=True)
        raise click.exceptions.Exit(1)
