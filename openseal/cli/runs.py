"""``openseal objectives ...`` and ``openseal runs ...``: start work and watch or steer runs."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal.cli.client import (
    MAX_PAGE,
    Connection,
    Remote,
    connected,
    listed,
    many,
    one,
    reading,
    record,
    records,
    server_options,
)
from openseal.cli.output import echo_data, echo_item, echo_table, handle, when
from openseal.cli.runtime import complete_ids, list_options, more_hint, store_options
from openseal.cli.steer import Steer, steer_by_id
from openseal.errors import UsageError
from openseal.runtime import service
from openseal.runtime.service import ObjectiveStatus, RunStatus, format_cost, summarize
from openseal.runtime.store import Event, NewObjective, Objective, Run
from openseal.wire import jsonable

if TYPE_CHECKING:
    from openseal.runtime.store import Reads, Store


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
    """Create and inspect objectives (each starts a run of a deployed workflow).

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


@objectives.command("create")
@store_options
@server_options
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
@click.option("--goal", default=None, help="What the objective is for, in your words.")
@click.option(
    "--priority",
    type=click.IntRange(-1000, 1000),
    default=None,
    help="Claim order of its runs among ready runs, higher first [default: the workflow's].",
)
@click.option(
    "--draft", is_flag=True, help="Create it as a draft: no run starts until it is activated."
)
def create(
    home: Path, output: str, server: str | None, token_file: Path | None, workflow: str,
    pairs: tuple[str, ...], input_file: Path | None, request_key: str | None, project: str,
    goal: str | None, priority: int | None, draft: bool,
) -> None:  # fmt: skip
    """Start WORKFLOW on its active version (with --draft: later, by `objectives activate`).

    \b
    Examples:
        openseal objectives create --workflow procure_laptops \\
        --input 'request={"item": "laptop", "quantity": 10, "budget": 10000}'
        openseal objectives create --workflow release_note --priority 10 \\
        --goal "Announce 2.4 before the freeze" --input-file release.json
        openseal objectives create --workflow release_note --draft --input-file release.json
    """
    inputs = parse_inputs(pairs, input_file)
    request = service.StartObjective(
        workflow, inputs, project, request_key, goal=goal, priority=priority, draft=draft
    )
    body: dict[str, Any] = {"workflow": workflow, "inputs": inputs, "project": project}
    body.update({k: v for k, v in (("goal", goal), ("priority", priority)) if v is not None})
    if draft:
        body["draft"] = True
    with connected(home, server, token_file) as at:
        created = at.ask(
            lambda store: service.create_objective(store, request, service.CLI),
            "objectives.create", "objectives", method="POST", body=body,
            headers={"Idempotency-Key": request_key} if request_key else None,
            read=lambda answer: record(NewObjective, answer),
        )  # fmt: skip
    if output != "text":
        echo_data(
            {"objective": created.objective, "run": created.run, "created": created.created}, output
        )
        return
    verb = "created" if created.created else "already exists:"
    started = "a draft" if created.run is None else f"run {created.run.id}"
    click.echo(f"objective {created.objective.id} {verb} {started} ({workflow})")


@objectives.command("list")
@store_options
@server_options
@list_options(ObjectiveStatus, "objectives")
def list_objectives(
    home: Path, output: str, server: str | None, token_file: Path | None, status: str | None,
    workflow: str | None, since: str | None, limit: int, after: str | None,
) -> None:  # fmt: skip
    """Newest objectives first.

    \b
    Examples:
        openseal objectives list --limit 10
        openseal objectives list --workflow procure_laptops --since 1d
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = listed(
            at, Objective, "objectives", service.list_objectives, status=status,
            workflow=workflow, since=since, limit=limit, after=after,
        )  # fmt: skip
    if output != "text":
        echo_data(found, output)
        return
    rows = [
        [
            handle(o.id),
            str(o.status),
            str(o.priority),
            o.workflow_name,
            when(o.created_at),
            o.goal or "-",
        ]
        for o in found
    ]
    headers = ["handle", "status", "priority", "workflow", "created", "goal"]
    echo_table(headers, rows, shrink=["goal"], empty="no objectives")
    more_hint(found, limit)


@objectives.command("show")
@store_options
@server_options
@click.argument("objective_id", shell_complete=complete_ids("objective"))
def show_objective(
    home: Path, output: str, server: str | None, token_file: Path | None, objective_id: str
) -> None:
    """An objective and its runs.

    \b
    Examples:
        openseal objectives show 0191f0
    """
    with connected(home, server, token_file, read_only=True) as at:
        objective_id = at.id("objective", objective_id)
        objective, runs = at.ask(
            lambda store: service.show_objective(store, objective_id),
            "objectives.show", "objectives", objective_id,
            read=lambda answer: (record(Objective, answer["objective"]),
                                 records(Run, answer["runs"])),
        )  # fmt: skip
    if output != "text":
        echo_data({"objective": objective, "runs": runs}, output)
        return
    _show_objective(objective, runs)


def _show_objective(objective: Objective, runs: tuple[Run, ...]) -> None:
    click.echo(f"objective {objective.id}  {objective.status}  workflow {objective.workflow_name}")
    if objective.goal:
        click.echo(f"  goal      {objective.goal}")
    click.echo(f"  owner     {objective.owner or '-'}")
    click.echo(f"  priority  {objective.priority}")
    retry = objective.retry or {}
    attempts = f"{objective.attempts} of {retry.get('max_attempts', 1)}"
    if retry.get("max_attempts", 1) > 1:
        attempts += f" (backoff {retry.get('backoff')}s, at most {retry.get('max_backoff')}s)"
    click.echo(f"  attempts  {attempts}")
    click.echo(f"  version   {objective.workflow_digest}")
    click.echo(f"  inputs    {json.dumps(objective.inputs, sort_keys=True)}")
    rows = [
        [str(r.attempt), handle(r.id), str(r.status), when(r.created_at), _run_note(r)]
        for r in sorted(runs, key=lambda r: (r.attempt, r.id))
        if r.parent_run_id is None
    ]
    click.echo("runs:")
    echo_table(
        ["attempt", "run", "status", "created", "note"], rows, shrink=["note"], empty="no runs"
    )


def _run_note(run: Run) -> str:
    """Why a run did not satisfy its objective, or what it waits for."""
    if run.context.get("unsatisfied"):
        return "unsatisfied"
    if run.status in service.TERMINAL_RUN_STATUSES:
        return ""
    return service.waiting_reason(run) or ""


# -- runs ------------------------------------------------------------------------------


@click.group()
def runs() -> None:
    """Watch and steer runs: show, events, pause, resume, cancel, intervene, migrate.

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


@runs.command("list")
@store_options
@server_options
@list_options(RunStatus, "runs")
def list_runs(
    home: Path, output: str, server: str | None, token_file: Path | None, status: str | None,
    workflow: str | None, since: str | None, limit: int, after: str | None,
) -> None:  # fmt: skip
    """Newest runs first.

    \b
    Examples:
        openseal runs list --status waiting_for_approval
        openseal runs list --workflow procure_laptops --since 2h
        openseal runs list --output json
    """
    with reading(home, server, token_file) as at:
        found = listed(
            at, Run, "runs", service.list_runs, status=status, workflow=workflow, since=since,
            limit=limit, after=after,
        )  # fmt: skip
        names = {digest: _name(at, digest) for digest in {r.workflow_digest for r in found}}
    if output != "text":
        echo_data(found, output)
        return
    rows = [
        [
            handle(r.id),
            str(r.status),
            names[r.workflow_digest],
            r.current_state or "-",
            when(r.created_at),
        ]
        for r in found
    ]
    echo_table(
        ["handle", "status", "workflow", "state", "created"],
        rows,
        shrink=["state"],
        empty="no runs",
    )
    more_hint(found, limit)


def _name(at: Connection[Reads], digest: str) -> str:
    """The name of the definition version ``digest``."""
    return at.ask(
        lambda store: service.get_version(store, digest).name,
        "definitions.get", "definitions", digest, read=lambda answer: str(answer["name"]),
    )  # fmt: skip


@runs.command("show")
@store_options
@server_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option(
    "--archive", default=None, metavar="PATH|URL",
    help="Read the run from this archive (openseal db archive: a directory or a URL) instead "
    "of the live store.",
)  # fmt: skip
def show(
    home: Path, output: str, server: str | None, token_file: Path | None, run_id: str,
    archive: str | None,
) -> None:  # fmt: skip
    """A run's status, what it waits for and where it is in its graph.

    \b
    Examples:
        openseal runs show 0191f0
        openseal runs show 0191f0 --output yaml
        openseal runs show 0191f0c3... --archive .openseal/archive
    """
    if archive is not None:
        from openseal.cli.db_archive import show_archived

        show_archived(archive, run_id, output)
        return
    with connected(home, server, token_file, read_only=True) as at:
        run_id = at.id("run", run_id)
        view = at.ask(
            lambda store: service.show_run(store, run_id),
            "runs.show", "runs", run_id, read=lambda answer: record(service.RunView, answer),
        )  # fmt: skip
    if output != "text":
        document = jsonable(view)
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
    if run.parent_run_id:
        click.echo(f"  parent    {run.parent_run_id}")
    if view.children:
        click.echo("  children")
        _echo_tree(view.children, "    ")


def _echo_tree(children: tuple[service.ChildRun, ...], indent: str) -> None:
    for child in children:
        at = f" at {child.current_state}" if child.current_state else ""
        click.echo(f"{indent}{child.run_id}  {child.status}{at}  {child.workflow}  {child.via}")
        _echo_tree(child.children, indent + "  ")


def _event_text(event: Event, width: int) -> str:
    """One event for people: a summary line, then its whole payload wrapped (never cut)."""
    at = when(event.at, milliseconds=True)
    head = f"{event.seq:>5}  {at}  {event.type:<22} {event.actor:<20} {summarize(event)}"
    payload = json.dumps(jsonable(event.payload), sort_keys=True, ensure_ascii=False)
    body = textwrap.wrap(
        payload, width=max(width - 7, 40), initial_indent="       ", subsequent_indent="       ",
        break_on_hyphens=False, break_long_words=False,
    )  # fmt: skip
    return "\n".join([head.rstrip(), *body])


@runs.command("events")
@store_options
@server_options
@click.argument("run_id", shell_complete=complete_ids("run"))
@click.option("--after", type=click.IntRange(0), default=0, help="Only events after this sequence.")
@click.option("--follow", is_flag=True, help="Keep printing new events until the run ends.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=1000, show_default=True)
def events(
    home: Path, output: str, server: str | None, token_file: Path | None, run_id: str, after: int,
    follow: bool, limit: int,
) -> None:  # fmt: skip
    """A run's events in sequence order, each with its whole payload.

    Text shows a summary line per event and its payload wrapped below it; `--output json`
    prints one JSON object per line, `--output yaml` one YAML document per event.

    \b
    Examples:
        openseal runs events 0191f0 --after 10
        openseal runs events 0191f0 --follow --output json
    """
    width = shutil.get_terminal_size((100, 24)).columns
    with connected(home, server, token_file, read_only=True) as at:
        run_id = at.id("run", run_id)
        for event in _events(at, run_id, after, None if follow else limit):
            if output == "text":
                click.echo(_event_text(event, width))
            else:
                echo_item(event, output)


def _events(at: Connection[Store], run_id: str, after: int, limit: int | None) -> Iterator[Event]:
    """The run's events after ``after``: at most ``limit``, or (None) as they come until the
    run ends (the server's event stream)."""
    if at.remote is None:
        if limit is None:
            return service.follow_events(at.local, run_id, after=after)
        return iter(service.run_events(at.local, run_id, after=after, limit=limit))
    if limit is None:
        path = ("runs", run_id, "events", "stream")
        frames = at.remote.stream(path, operation="runs.events_stream", params={"after": after})
        return (record(Event, data) for kind, data in frames if kind != "end")
    return _pages(at.remote, run_id, after, limit)


def _pages(remote: Remote, run_id: str, after: int, limit: int) -> Iterator[Event]:
    """At most ``limit`` events, a page of the API's largest at a time."""
    while limit > 0:
        size = min(limit, MAX_PAGE)
        params = {"after": after, "limit": size}
        answer = remote.call(
            "GET", ("runs", run_id, "events"), operation="runs.events", params=params
        )
        page = records(Event, answer["events"])
        yield from page
        if len(page) < size:
            return
        after, limit = page[-1].seq, limit - size


@runs.command("turns")
@store_options
@server_options
@click.argument("run_id", shell_complete=complete_ids("run"))
def turns(
    home: Path, output: str, server: str | None, token_file: Path | None, run_id: str
) -> None:
    """A run's turns: state, started, ended, outcome, and each model and tool call with the
    model that answered and the tokens it used.

    \b
    Examples:
        openseal runs turns 0191f0
        openseal runs turns 0191f0 --output json
    """
    with connected(home, server, token_file, read_only=True) as at:
        run_id = at.id("run", run_id)
        found = at.ask(
            lambda store: service.run_turns(store, run_id),
            "runs.turns", "runs", run_id, "turns", read=many(service.TurnView, "turns"),
        )  # fmt: skip
    if output != "text":
        echo_data([{**jsonable(t), "tokens": t.tokens} for t in found], output)
        return
    if not found:
        click.echo("no turns yet")
    for turn in found:
        click.echo(_turn_text(turn))


def _turn_text(turn: service.TurnView) -> str:
    took = (
        f"{(turn.finished_at - turn.started_at).total_seconds():.3f}s" if turn.finished_at else "-"
    )
    tokens = turn.tokens
    lines = [
        f"turn {turn.seq}  {turn.state}  {turn.outcome}  {when(turn.started_at, milliseconds=True)}"
        f" -> {when(turn.finished_at, milliseconds=True)}  ({took})  "
        f"{tokens['input']}+{tokens['output']} tokens  "
        f"worker {turn.worker}"
    ]
    if turn.error:
        lines.append(f"  problem  {turn.error}")
    for call in turn.calls:
        if call.kind == "model":
            asked = ", ".join(call.requested) or "output"
            lines.append(
                f"  model  {call.activity_id}  {call.model or '?'}  "
                f"{call.input_tokens}+{call.output_tokens} tokens  -> {asked}"
            )
        else:
            answer = f"error: {call.error}" if call.error else "ok"
            lines.append(f"  {call.kind:<5}  {call.activity_id}  {call.tool or '?'}  {answer}")
    return "\n".join(lines)


def _changed(run: Run, output: str, verb: str) -> None:
    if output != "text":
        echo_data(run, output)
    else:
        click.echo(f"run {run.id} {verb}: now {run.status}")


def _steer(
    at: Connection[Store], step: str, run_id: str, body: dict[str, Any],
    local: Callable[[Store, str], Run],
) -> Run:  # fmt: skip
    """``local(store, run id)`` on the store, or ``POST /runs/{id}/{step}`` on a server."""
    run_id = at.id("run", run_id)
    return at.ask(
        lambda store: local(store, run_id), f"runs.{step}", "runs", run_id, step, method="POST",
        body=body, read=one(Run, "run"),
    )  # fmt: skip


def _steer_run(
    steer: Steer, step: str, act: Callable[[Store, service.RunCommand, service.Caller], Run],
    verb: str,
) -> None:  # fmt: skip
    """``act`` (``service.pause_run`` and the like) on the run, then the run as it is now."""
    with steer.connected() as at:
        run = _steer(
            at, step, steer.id, steer.body(),
            lambda store, ref: act(
                store, service.RunCommand(ref, steer.reason, steer.expected_revision), service.CLI
            ),
        )  # fmt: skip
    _changed(run, steer.output, verb)


def _steer_objective(steer: Steer, status: str) -> None:
    """The objective set to ``status`` with its runs, on the store or on a server."""

    def act(store: Store, objective_id: str) -> None:
        request = service.ObjectiveCommand(
            objective_id, status, steer.reason, steer.expected_revision
        )
        service.steer_objective(store, request, service.CLI)

    _objective_step(steer, "set_status", "status", act, {"status": status})


def _objective_step(
    steer: Steer, operation: str, step: str, act: Callable[[Store, str], None],
    body: dict[str, Any],
) -> None:  # fmt: skip
    """``act(store, objective id)`` on the store, or ``POST /objectives/{id}/{step}`` (with
    ``body``) on a server; then the objective with its runs."""
    with steer.connected() as at:
        objective_id = at.id("objective", steer.id)

        def local(store: Store) -> tuple[Objective, tuple[Run, ...]]:
            act(store, objective_id)
            return service.show_objective(store, objective_id)

        objective, runs = at.ask(
            local, f"objectives.{operation}", "objectives", objective_id, step, method="POST",
            body={**body, **steer.body()},
            read=lambda answer: (record(Objective, answer["objective"]),
                                 records(Run, answer["runs"])),
        )  # fmt: skip
    if steer.output != "text":
        echo_data({"objective": objective, "runs": runs}, steer.output)
        return
    _show_objective(objective, runs)


@objectives.command("pause")
@steer_by_id("objective")
def pause_objective(steer: Steer) -> None:
    """Pause an objective and its unfinished runs; no retry starts while it is paused.

    \b
    Examples:
        openseal objectives pause 0191f0 --reason "vendor outage"
    """
    _steer_objective(steer, "paused")


@objectives.command("resume")
@steer_by_id("objective")
def resume_objective(steer: Steer) -> None:
    """Resume a paused objective and its paused runs (a draft is refused: activate it).

    \b
    Examples:
        openseal objectives resume 0191f0
    """
    _steer_objective(steer, "active")


@objectives.command("activate")
@steer_by_id("objective")
def activate_objective(steer: Steer) -> None:
    """Activate a draft objective: its first run starts, on the workflow's active version.

    \b
    Examples:
        openseal objectives activate 0191f0
    """

    def act(store: Store, objective_id: str) -> None:
        request = service.ActivateObjective(objective_id, steer.reason, steer.expected_revision)
        service.activate_objective(store, request, service.CLI)

    _objective_step(steer, "activate", "activate", act, {})


@objectives.command("retire")
@steer_by_id("objective")
def retire_objective(steer: Steer) -> None:
    """Give an objective up: its unfinished runs are canceled and no retry starts.

    \b
    Examples:
        openseal objectives retire 0191f0 --reason "bought elsewhere"
    """
    _steer_objective(steer, "retired")


@runs.command("pause")
@steer_by_id("run")
def pause(steer: Steer) -> None:
    """Stop a run where it is (an in-flight turn is fenced off).

    \b
    Examples:
        openseal runs pause 0191f0 --reason "vendor outage"
    """
    _steer_run(steer, "pause", service.pause_run, "paused")


@runs.command("resume")
@steer_by_id("run")
def resume(steer: Steer) -> None:
    """Undo a pause.

    \b
    Examples:
        openseal runs resume 0191f0
    """
    _steer_run(steer, "resume", service.resume_run, "resumed")


@runs.command("cancel")
@steer_by_id("run")
def cancel(steer: Steer) -> None:
    """Cancel a run durably, and say what the cancellation prevented (approvals, unsent
    actions, agent requests) and what may already have happened (actions already sent, a
    worker in the middle of a turn).

    \b
    Examples:
        openseal runs cancel 0191f0 --reason "no longer needed"
    """
    with steer.connected() as at:
        run_id = at.id("run", steer.id)

        def local(store: Store) -> service.Canceled:
            request = service.RunCommand(run_id, steer.reason, steer.expected_revision)
            return service.cancel_run(store, request, service.CLI)

        canceled = at.ask(
            local, "runs.cancel", "runs", run_id, "cancel", method="POST", body=steer.body(),
            read=lambda answer: record(service.Canceled, answer),
        )  # fmt: skip
    if steer.output != "text":
        echo_data(canceled, steer.output)
        return
    run = canceled.run
    if not canceled.changed:
        click.echo(f"run {run.id} was canceled already (nothing changed)")
        return
    click.echo(f"run {run.id} canceled: now {run.status}")
    for line in cancel_lines(canceled.report):
        click.echo(f"  {line}")


def cancel_lines(report: dict[str, Any]) -> list[str]:
    """The ``run.canceled`` payload for people: what was prevented, what may have happened."""
    state = report.get("current_state")
    was = f"was {report.get('from_status')}" + (
        f" in state {state}" if state else ", before its first state"
    )
    prevented, happened = [], []
    for request_id in report.get("canceled_agent_requests") or ():
        prevented.append(f"agent request {request_id} canceled")
    for approval_id in report.get("canceled_approvals") or ():
        prevented.append(f"approval {approval_id} canceled (the action it guards is not sent)")
    for action in report.get("actions") or ():
        if action.get("sent"):
            happened.append(f"action {action.get('action_id')} ({action.get('key')}) "
                            f"{action.get('note')}")  # fmt: skip
        else:
            prevented.append(f"action {action.get('action_id')} ({action.get('key')}) not sent")
    worker = report.get("in_flight_worker")
    if worker:
        happened.append(f"worker {worker} was running a turn: what it did before its next "
                        "write may have happened (that write is refused)")  # fmt: skip
    lines = [was]
    lines += [f"prevented: {p}" for p in prevented] or ["prevented: nothing was pending"]
    lines += [f"may have happened: {h}" for h in happened] or ["may have happened: nothing"]
    return lines


@runs.command("intervene")
@steer_by_id(
    "run",
    reason=click.option("--reason", required=True, help="Why (kept in the run's events)."),
    options=[
        click.option("--state", default=None, help="Continue from this state."),
        click.option("--value", default=None, help="JSON output for the run's current state."),
    ],
)
def intervene(steer: Steer, state: str | None, value: str | None) -> None:
    """Repair a paused run or one that needs attention (with neither option: retry it).

    \b
    Examples:
        openseal runs intervene 0191f0 --reason "picked by hand" --value '{"pick": 9}'
        openseal runs intervene 0191f0 --reason "skip research" --state draft
    """
    parsed = parse_value(value, "--value") if value is not None else None
    body = {**steer.body(), "state": state}
    if value is not None:
        body["value"] = parsed
    reason = steer.reason or ""  # --reason is required
    with steer.connected() as at:
        run = _steer(
            at, "intervene", steer.id, body,
            lambda store, ref: service.intervene(
                store, service.Intervention(ref, reason, state, parsed, steer.expected_revision),
                service.CLI,
            ),
        )  # fmt: skip
    _changed(run, steer.output, "changed")


def _attach_migrate() -> None:
    from openseal.cli.migrate import migrate_command

    runs.add_command(migrate_command)


_attach_migrate()
