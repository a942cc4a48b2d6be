"""``openseal ask PROMPT --team T | --agent A``: the team's or agent's model picks the workflow
that fits the prompt and fills its inputs; the person confirms, then the objective starts with
the prompt as its goal. See ``docs/ask.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from openseal.cli.client import connected, record, server_options
from openseal.cli.output import echo_data
from openseal.cli.runtime import context_option, store_options


@click.command("ask")
@store_options
@server_options
@click.argument("prompt")
@click.option("--team", default=None, help="The team to ask (its first role's agent plans).")
@click.option("--agent", default=None, help="The agent to ask.")
@click.option(
    "--yes", is_flag=True, help="Start the plan without asking to confirm it (for scripts)."
)
@click.option("--project", default="default", show_default=True)
@click.option("--scope", default=None, help="Where the objective lives (default: your scope).")
@click.option(
    "--request-key", default=None, help="Idempotency key: the same key returns the same objective."
)
@context_option(
    "Runtime context file that resolves the model profile's credential "
    "(default .openseal/context.yaml; with --server the server's is used)."
)
def ask_command(
    home: Path, output: str, server: str | None, token_file: Path | None, prompt: str,
    team: str | None, agent: str | None, yes: bool, project: str, scope: str | None,
    request_key: str | None, context_path: Path | None,
) -> None:  # fmt: skip
    """Start the deployed workflow that fits PROMPT, picked by a team's or an agent's model.

    The model of --team (its first role's agent) or --agent picks one of the workflows it may
    start (those it owns; an agent's delegated workflow too) and fills its inputs from PROMPT,
    checked against the workflow's input types (one repair round). You see the workflow and
    the inputs and type `yes` to start it (--yes: without asking). The objective's goal is
    PROMPT. A prompt that fits no workflow starts nothing (exit 1).

    \b
    Examples:
        openseal ask "write the release note for 2.4, changes since 2.3" --agent release_writer
        openseal ask "buy 3 monitors for design, 900 in all" --team procurement --yes
    """
    from openseal.runtime import service

    request = service.Ask(prompt, team, agent, project, scope)
    body: dict[str, Any] = {"prompt": prompt, "team": team, "agent": agent, "project": project}
    if scope is not None:
        body["scope"] = scope
    with connected(home, server, token_file) as at:
        plan = at.ask(
            lambda store: service.plan_ask(store, request, service.CLI, _factory(context_path)),
            "asks.plan", "asks", method="POST", body=body,
            read=lambda answer: service.AskPlan(**_plan_fields(answer["plan"])),
        )  # fmt: skip
        if output == "text" or not yes:
            _show(plan, err=output != "text")  # a -o json answer stays one document
        if not yes:
            _confirm()
        created = at.ask(
            lambda store: service.start_ask(store, plan, service.CLI, request_key),
            "asks.confirm", "asks", "confirm", method="POST",
            body={**body, "workflow": plan.workflow, "inputs": plan.inputs},
            headers={"Idempotency-Key": request_key} if request_key else None,
            read=_created,
        )  # fmt: skip
    if output != "text":
        echo_data(
            {"plan": plan.to_dict(), "objective": created.objective, "run": created.run,
             "created": created.created},
            output,
        )  # fmt: skip
        return
    verb = "created" if created.created else "already exists:"
    started = "a draft" if created.run is None else f"run {created.run.id}"
    click.echo(f"objective {created.objective.id} {verb} {started} ({plan.workflow})")


def _factory(context_path: Path | None) -> Any:
    from openseal.runtime.service.workers import default_provider_factory
    from openseal.skills.credentials import RuntimeContext

    return default_provider_factory(credentials=RuntimeContext.load(context_path).credentials)


def _plan_fields(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "candidates": tuple(answer.get("candidates") or ())}


def _created(answer: dict[str, Any]) -> Any:
    from openseal.runtime.store import NewObjective

    return record(NewObjective, answer)


def _show(plan: Any, *, err: bool = False) -> None:
    lines = [f"{plan.owner} picked workflow {plan.workflow}"]
    if plan.reason:
        lines.append(f"  why: {plan.reason}")
    lines.append("  inputs:")
    lines += [f"    {line}" for line in _json(plan.inputs).splitlines()]
    lines.append(f"  goal: {plan.prompt}")
    click.echo("\n".join(lines), err=err)


def _json(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


def _confirm() -> None:
    """Only a typed ``yes`` starts the plan; anything else, or the end of input, does not."""
    try:
        typed = click.prompt("start it? type yes", default="", show_default=False, err=True)
    except click.Abort:
        typed = ""
    if str(typed).strip().lower() != "yes":
        click.echo("not confirmed; nothing was started", err=True)
        raise click.exceptions.Exit(1)
