"""``openseal run``: compile one runbook and execute it in this process, now."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics, output_option, render
from openseal.runbooks.boundary import BOUNDARY

if TYPE_CHECKING:
    from rich.table import Table

    from openseal.compiler import Plan, Prepared
    from openseal.runbooks.executor import RunOptions, RunResult, StepOutcome

_HELP = f"""Run a runbook in this process: compile FILE, then execute its steps as a DAG.

{BOUNDARY}. Nothing is stored: if this process dies, the run is gone.

FILE is a definition file holding `runbook` blocks (its project — the nearest
directory with an `openseal.project` marker — is compiled with it, so skills
resolve), or a node/edge `workflow` file in the peer system's form.

Prints the runbook's outputs as JSON on stdout. Exit codes: 0 success,
1 failure (diagnostics, a failed step, an input of the wrong type),
2 usage (bad options, malformed --input, an unknown input name).

\b
Examples:
    openseal run definitions/runbooks/vendor_quotes/hcl/runbook.hcl \\
        --input-file definitions/runbooks/vendor_quotes/quotes.json --input budget=9000
    openseal run runbook.hcl --plan
"""


@click.command(
    help=_HELP,
)
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--input",
    "-i",
    "inputs",
    multiple=True,
    metavar="NAME=VALUE",
    help="An input, typed by its declaration (numbers, true/false, JSON for lists "
    "and objects). Repeatable.",
)
@click.option(
    "--input-file",
    type=click.Path(path_type=Path),
    default=None,
    help="A JSON object of inputs; --input values override it.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=None,
    help="Steps running at once (default: the runbook's `concurrency`).",
)
@output_option(
    "`json` or `yaml`: the whole result (every step's status, times, error) instead of "
    "only the outputs."
)
@click.option(
    "--plan",
    "show_plan",
    is_flag=True,
    help="Print the execution order and parallel levels; run nothing.",
)
@click.option("--name", default=None, help="Which runbook, when FILE defines several.")
@click.option(
    "--config",
    "config",
    multiple=True,
    metavar="KEY=VALUE",
    help="Configuration for skill adapters (`config.KEY` in their templates; "
    "`credential.NAME=env:VAR`). Repeatable.",
)
def run_command(
    file: Path,
    inputs: tuple[str, ...],
    input_file: Path | None,
    concurrency: int | None,
    output: str,
    show_plan: bool,
    name: str | None,
    config: tuple[str, ...],
) -> None:
    from openseal.compiler import prepare
    from openseal.runbooks.executor import RunOptions, run
    from openseal.runbooks.inputs import gather, parse_pairs, read_input_file
    from openseal.runbooks.render import plan_json, plan_text

    click.echo(BOUNDARY, err=True)
    prepared = prepare(file, name)
    _report(prepared, output)
    if prepared.plan is None:
        sys.exit(1)
    plan = prepared.plan
    if show_plan:
        text = plan_text(plan, concurrency)
        click.echo(
            text
            if output == "text"
            else render(plan_json(plan, concurrency), output, sort_keys=False),
            nl=False,
        )
        return
    file_values = read_input_file(input_file) if input_file is not None else None
    values = gather(plan.inputs, inputs, file_values)
    options = RunOptions(concurrency=concurrency, config=dict(parse_pairs(config)))
    with _importable(file), _progress(plan, options):
        result = run(plan, values, options)
    _print_result(result, output)
    if not result.ok:
        sys.exit(1)


def _report(prepared: Prepared, output: str) -> None:
    if not prepared.diagnostics:
        return
    if prepared.plan is None:
        fmt = "human" if output == "text" else output
        emit_diagnostics(
            prepared.diagnostics, prepared.sources, prepared.file_count, fmt, __version__
        )
    else:  # warnings only: keep stdout for the result
        emit_diagnostics(
            prepared.diagnostics, prepared.sources, prepared.file_count, "human", __version__
        )


def _print_result(result: RunResult, output: str) -> None:
    from openseal.runbooks.render import summary

    if output != "text":
        click.echo(render(result.to_json(), output, sort_keys=False), nl=False)
    else:
        if result.ok:
            click.echo(json.dumps(dict(result.outputs), indent=2, ensure_ascii=False))
        click.echo(summary(result), err=True)


@contextmanager
def _importable(file: Path) -> Iterator[None]:
    """Let python skills import modules that sit in the runbook's project."""
    from openseal.compiler import project_root

    root = project_root(file) or (file if file.is_dir() else file.parent).resolve()
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        if str(root) in sys.path:
            sys.path.remove(str(root))


@contextmanager
def _progress(plan: Plan, options: RunOptions) -> Iterator[None]:
    """A live per-step table on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.live import Live

    view = _ProgressView(plan)
    console = Console(stderr=True)
    with Live(view.table(), console=console, refresh_per_second=8, transient=False) as live:
        view.live = live
        options.observer = view
        yield


class _ProgressView:
    def __init__(self, plan: Plan) -> None:
        from openseal.runbooks.executor import StepOutcome

        self.plan = plan
        self.outcomes = {sid: StepOutcome(sid) for sid in plan.order()}
        self.live: object = None

    def step_changed(self, outcome: StepOutcome) -> None:
        self.outcomes[outcome.id] = outcome
        update = getattr(self.live, "update", None)
        if update is not None:
            update(self.table())

    def table(self) -> Table:
        from rich.table import Table

        table = Table(box=None, show_header=True, header_style="bold")
        for column in ("step", "type", "status", "time", "note"):
            table.add_column(column)
        styles = {"succeeded": "green", "failed": "red", "running": "cyan", "canceled": "yellow"}
        for sid, outcome in self.outcomes.items():
            style = styles.get(outcome.status, "dim")
            time = f"{outcome.duration:.2f}s" if outcome.duration is not None else ""
            table.add_row(
                sid,
                self.plan.steps[sid].label,
                f"[{style}]{outcome.status}[/]",
                time,
                outcome.error or "",
            )
        return table
