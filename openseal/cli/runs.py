"""``openseal objectives ...`` and ``openseal runs ...``: start work and watch or steer runs."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import click

from openseal.cli.output import echo_data, echo_item, plain
from openseal.cli.runtime import complete_ids, opened, store_options
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.service import format_cost, summarize
from openseal.runtime.store import Event, Run


def parse_value(text: str, what: str) -> Any:
    """JSON if it parses as JSON, else the plain string (so `--input item=laptop` works)."""
    try:
        return json.loads(text)
    except ValueError:
        if what == "--value":
            raise UsageError(f"--value must be JSON: {text!r}") from None
        return text


def parse_inputs(pairs: tuple[str, ...], input_file: Path | None) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    if input_file is not None:
        try:
            loaded = json.loads(input_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read --input-file {input_file}: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--input-file {input_file} must hold a JSON object")
        inputs.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--input takes key=value, got {pair!r}")
        inputs[key] = parse_value(value, "--input")
    return inputs


# -- objectives ------------------------------------------------------------------------


@click.group()
def objectives() -> None:
    """Create and inspect objectives (each starts a run of a deployed workflow)."""


@objectives.command("create")
@store_options
@click.option("--workflow", required=True, help="Name of a deployed workflow.")
@click.option(
    "--input",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An input; VALUE is JSON or a plain string. Repeatable.",
)
@click.option(
    "--input-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A JSON object of inputs (--input values override it).",
)
@click.option(
    "--request-key", default=None, help="Idempotency key: the same key returns the same objective."
)
@click.option("--project", default="default", show_default=True)
def create(
    home: Path, output: str, workflow: str, pairs: tuple[str, ...], input_file: Path | None,
    request_key: str | None, project: str,
) -> None:  # fmt: skip
    """Start WORKFLOW on its active version.

    \b
    Examples:
        openseal objectives create --workflow procure_laptops \\
        --input 'request={"item": "laptop", "quantity": 10, "budget": 10000}'
    """
    inputs = parse_inputs(pairs, input_file)
    with opened(home) as store:
        request = service.StartObjective(workflow, inputs, project, request_key)
        created = service.create_objective(store, request, service.CLI)
    if output != "text":
        echo_data(
            {"objective": created.objective, "run": created.run, "created": created.created}, output
        )
        return
    verb = "created" if created.created else "already exists:"
    click.echo(f"objective {created.objective.id} {verb} run {created.run.id} ({workflow})")


@objectives.command("list")
@store_options
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_objectives(home: Path, output: str, limit: int) -> None:
    """Newest objectives first.

    \b
    Examples:
        openseal objectives list --limit 10
    """
    with opened(home) as store:
        found = service.list_objectives(store, limit=limit)
    if output != "text":
        echo_data(found, output)
        return
    for objective in found:
        click.echo(f"{objective.id}  {objective.status:<9} {objective.workflow_name}  "
                   f"{objective.created_at.isoformat(timespec='seconds')}")  # fmt: skip


@objectives.command("show")
@store_options
@click.argument("objective_id", shell_complete=complete_ids("objective"))
def show_objective(home: Path, output: str, objective_id: str) -> None:
    """An objective and its runs.

    \b
    Examples:
        openseal objectives show 0191f0
    """
    with opened(home) as store:
        objective_id = service.complete_id(store, "objective", objective_id)
        objective, runs = service.show_objective(store, objective_id)
    if output != "text":
        echo_data({"objective": objective, "runs": runs}, output)
        return
    click.echo(f"objective {objective.id}  {objective.status}  workflow {objective.workflow_name}")
    click.echo(f"  version  {objective.workflow_digest}")
    click.echo(f"  inputs   {json.dumps(objective.inputs, sort_keys=True)}")
    for run in runs:
        click.echo(f"  run {run.id}  {run.status}  at {run.current_state or '-'}")


# -- runs ------------------------------------------------------------------------------


@click.group()
def runs() -> None:
    """Watch and steer runs: show, events, pause, resume, cancel, intervene."""


@runs.command("list")
@store_options
@click.option("--status", default=None, help="Only runs with this status.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_runs(home: Path, output: str, status: str | None, limit: int) -> None:
    """Runs in creation order.

    \b
    Examples:
        openseal runs list --status waiting_for_approval
        openseal runs list --output json
    """
    with opened(home) as store:
        found = service.list_runs(store, status=status, limit=limit)
    if output != "text":
        echo_data(found, output)
        return
    for run in found:
        click.echo(f"{run.id}  {run.status:<22} {run.current_state or '-'}")


@runs.command("show")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
def show(home: Path, output: str, run_id: str) -> None:
    """A run's status, what it waits for and where it is in its graph.

    \b
    Examples:
        openseal runs show 0191f0
        openseal runs show 0191f0 --output yaml
    """
    with opened(home) as store:
        view = service.show_run(store, service.complete_id(store, "run", run_id))
    if output != "text":
        document = plain(view)
        document["position"] = {"previous": view.previous, "current": view.current,
                                "next": list(view.next)}  # fmt: skip
        echo_data(document, output)
        return
    run = view.run
    following = ", ".join(view.next) or "(end)"
    click.echo(f"run {run.id}  {run.status}  workflow {view.workflow}")
    click.echo(f"  position  {view.previous or '(start)'} -> {view.current} -> {following}")
    if view.reason:
        click.echo(f"  waiting   {view.reason}")
    click.echo(
        f"  revision {run.revision}  epoch {run.epoch}  events {run.last_event_seq}"
        f"  lease {run.lease_owner or '-'}"
    )
    if run.budget_used:
        click.echo(f"  budget    {json.dumps(run.budget_used, sort_keys=True)}")
    if view.model_cost:
        click.echo(f"  cost      {format_cost(view.model_cost)} (model calls)")
    outputs = run.context.get("outputs")
    if outputs:
        click.echo(f"  outputs   {json.dumps(outputs, sort_keys=True)}")


def _event_text(event: Event, width: int) -> str:
    """One event for people: a summary line, then its whole payload wrapped (never cut)."""
    at = event.at.isoformat(timespec="milliseconds")
    head = f"{event.seq:>5}  {at}  {event.type:<22} {event.actor:<20} {summarize(event)}"
    payload = json.dumps(plain(event.payload), sort_keys=True, ensure_ascii=False)
    body = textwrap.wrap(
        payload, width=max(width - 7, 40), initial_indent="       ", subsequent_indent="       ",
        break_on_hyphens=False, break_long_words=False,
    )  # fmt: skip
    return "\n".join([head.rstrip(), *body])


@runs.command("events")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--after", type=click.IntRange(0), default=0, help="Only events after this sequence.")
@click.option("--follow", is_flag=True, help="Keep printing new events until the run ends.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=1000, show_default=True)
def events(home: Path, output: str, run_id: str, after: int, follow: bool, limit: int) -> None:
    """A run's events in sequence order, each with its whole payload.

    Text shows a summary line per event and its payload wrapped below it; `--output json`
    prints one JSON object per line, `--output yaml` one YAML document per event.

    \b
    Examples:
        openseal runs events 0191f0 --after 10
        openseal runs events 0191f0 --follow --output json
    """
    width = shutil.get_terminal_size((100, 24)).columns
    with opened(home) as store:
        run_id = service.complete_id(store, "run", run_id)
        stream = (
            service.follow_events(store, run_id, after=after)
            if follow
            else iter(service.run_events(store, run_id, after=after, limit=limit))
        )
        for event in stream:
            if output == "text":
                click.echo(_event_text(event, width))
            else:
                echo_item(event, output)


#: refuse the command if the run changed since the caller read it (``runs show`` prints it)
expected_revision_option = click.option(
    "--expected-revision",
    type=click.IntRange(0),
    default=None,
    help="Refuse (stale_revision) unless the run is still at this revision.",
)


def _changed(run: Run, output: str, verb: str) -> None:
    if output != "text":
        echo_data(run, output)
    else:
        click.echo(f"run {run.id} {verb}: now {run.status}")


@runs.command("pause")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--reason", default=None)
@expected_revision_option
def pause(
    home: Path, output: str, run_id: str, reason: str | None, expected_revision: int | None
) -> None:
    """Stop a run where it is (an in-flight turn is fenced off).

    \b
    Examples:
        openseal runs pause 0191f0 --reason "vendor outage"
    """
    with opened(home) as store:
        _changed(
            service.pause_run(
                store,
                service.RunCommand(
                    service.complete_id(store, "run", run_id), reason, expected_revision
                ),
                service.CLI,
            ),
            output,
            "paused",
        )


@runs.command("resume")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--reason", default=None)
@expected_revision_option
def resume(
    home: Path, output: str, run_id: str, reason: str | None, expected_revision: int | None
) -> None:
    """Undo a pause.

    \b
    Examples:
        openseal runs resume 0191f0
    """
    with opened(home) as store:
        _changed(
            service.resume_run(
                store,
                service.RunCommand(
                    service.complete_id(store, "run", run_id), reason, expected_revision
                ),
                service.CLI,
            ),
            output,
            "resumed",
        )


@runs.command("cancel")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--reason", default=None)
@expected_revision_option
def cancel(
    home: Path, output: str, run_id: str, reason: str | None, expected_revision: int | None
) -> None:
    """Cancel a run durably; the event says what it was doing.

    \b
    Examples:
        openseal runs cancel 0191f0 --reason "no longer needed"
    """
    with opened(home) as store:
        _changed(
            service.cancel_run(
                store,
                service.RunCommand(
                    service.complete_id(store, "run", run_id), reason, expected_revision
                ),
                service.CLI,
            ),
            output,
            "canceled",
        )


@runs.command("intervene")
@store_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--reason", required=True, help="Why (kept in the run's events).")
@click.option("--state", default=None, help="Continue from this state.")
@click.option("--value", default=None, help="JSON output for the run's current state.")
@expected_revision_option
def intervene(
    home: Path,
    output: str,
    run_id: str,
    reason: str,
    state: str | None,
    value: str | None,
    expected_revision: int | None,
) -> None:
    """Repair a paused run or one that needs attention (with neither option: retry it).

    \b
    Examples:
        openseal runs intervene 0191f0 --reason "picked by hand" --value '{"pick": 9}'
        openseal runs intervene 0191f0 --reason "skip research" --state draft
    """
    parsed = parse_value(value, "--value") if value is not None else None
    with opened(home) as store:
        request = service.Intervention(
            service.complete_id(store, "run", run_id), reason, state, parsed, expected_revision
        )
        run = service.intervene(store, request, service.CLI)
    _changed(run, output, "changed")
