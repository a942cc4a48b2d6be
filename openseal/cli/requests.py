"""``openseal requests ...``: agent requests one run made of another agent, and their steps.

People and outside systems take part here: the callee's side accepts, declines, asks a
question or completes; the caller's side answers a question or reviews a completion. Each
step is recorded with ``--actor`` (default: the local operator) as who took it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from openseal.cli.output import echo_data, plain
from openseal.cli.runs import parse_value
from openseal.cli.runtime import opened, store_options
from openseal.runtime import service
from openseal.runtime.store import AgentRequest

actor_option = click.option(
    "--actor", envvar="OPENSEAL_ACTOR", default=service.LOCAL_OPERATOR, show_default=True,
    help="Who takes the step, e.g. user:alice (recorded on the caller run's event; env "
    "OPENSEAL_ACTOR).",
)  # fmt: skip


@click.group()
def requests() -> None:
    """Agent requests: list and show them, accept, decline, clarify, complete, review."""


def _line(request: AgentRequest) -> str:
    meta = request.request if isinstance(request.request, dict) else {}
    goal = str(meta.get("goal") or "")
    goal = goal if len(goal) <= 50 else goal[:49] + "…"
    return (
        f"{request.id}  {request.status:<23} {request.callee:<20} "
        f"run {request.caller_run_id}  {goal}"
    )


def _show(request: AgentRequest) -> None:
    meta = request.request if isinstance(request.request, dict) else {}
    click.echo(f"agent request {request.id}: {request.status}")
    click.echo(f"  callee     {request.callee}")
    click.echo(
        f"  caller     run {request.caller_run_id} ({meta.get('workflow')}.{meta.get('state')})"
    )
    click.echo(f"  goal       {meta.get('goal')}")
    if meta.get("input"):
        click.echo(f"  input      {json.dumps(meta['input'], sort_keys=True)}")
    if request.child_run_id:
        click.echo(f"  child run  {request.child_run_id}")
    if request.deadline:
        click.echo(f"  deadline   {request.deadline.isoformat(timespec='seconds')}")
    if meta.get("review"):
        click.echo("  review     requested")
    for round_ in request.clarification or []:
        click.echo(f"  question   {round_.get('question')}  (by {round_.get('asked_by')})")
        if round_.get("answered_by"):
            answer = json.dumps(round_.get("answer"))
            click.echo(f"  answer     {answer}  (by {round_.get('answered_by')})")
    for review in request.review or []:
        reason = f": {review['reason']}" if review.get("reason") else ""
        click.echo(f"  reviewed   {review.get('verdict')} by {review.get('by')}{reason}")
    if request.response is not None:
        click.echo(f"  response   {json.dumps(request.response, sort_keys=True)}")


@requests.command("list")
@store_options
@click.option("--status", default=None, help="Only requests with this status (e.g. accepted).")
@click.option("--callee", default=None, help="Only requests to this agent or team.")
@click.option("--run", "run_id", default=None, help="Only requests this run made.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_requests(
    home: Path, output: str, status: str | None, callee: str | None, run_id: str | None,
    limit: int,
) -> None:  # fmt: skip
    """Newest agent requests first.

    \b
    Examples:
        openseal requests list --status clarification_requested
    """
    with opened(home) as store:
        found = service.list_agent_requests(
            store, status=status, callee=callee, run_id=run_id, limit=limit
        )

    def text() -> None:
        for request in found:
            click.echo(_line(request))

    echo_data(plain(found), output, text)


@requests.command("show")
@store_options
@click.argument("request_id")
def show(home: Path, output: str, request_id: str) -> None:
    """One request: goal, inputs, child run, questions and answers, reviews, response.

    \b
    Examples:
        openseal requests show 01a2
    """
    with opened(home) as store:
        found = service.show_agent_request(store, request_id)
    echo_data(plain(found), output, lambda: _show(found))


def _step(home: Path, output: str, actor: str, request_id: str, step: str, **fields: Any) -> None:
    with opened(home) as store:
        done = service.step_agent_request(
            store, service.AgentRequestStep(request_id, step, **fields),
            service.Caller(actor, local=True),
        )  # fmt: skip
    echo_data(plain(done), output, lambda: click.echo(f"agent request {done.id}: {done.status}"))


@requests.command("accept")
@store_options
@actor_option
@click.argument("request_id")
def accept(home: Path, output: str, actor: str, request_id: str) -> None:
    """Take a requested request on (the callee's side).

    \b
    Examples:
        openseal requests accept 01a2 --actor user:fiona
    """
    _step(home, output, actor, request_id, "accept")


@requests.command("decline")
@store_options
@actor_option
@click.argument("request_id")
@click.option("--reason", required=True, help="Why the work will not be done.")
def decline(home: Path, output: str, actor: str, request_id: str, reason: str) -> None:
    """Decline a request; the caller leaves by `on "declined"`.

    \b
    Examples:
        openseal requests decline 01a2 --reason "the cost center is frozen"
    """
    _step(home, output, actor, request_id, "decline", reason=reason)


@requests.command("clarify")
@store_options
@actor_option
@click.argument("request_id")
@click.option("--question", default=None, help="Ask the caller (the callee's side).")
@click.option("--answer", default=None, help="Answer the open question (JSON or text).")
def clarify(
    home: Path, output: str, actor: str, request_id: str, question: str | None,
    answer: str | None,
) -> None:  # fmt: skip
    """Ask a question (--question) or answer the open one (--answer).

    \b
    Examples:
        openseal requests clarify 01a2 --question "Which cost center?" --actor agent:finance
        openseal requests clarify 01a2 --answer CC-7
    """
    if (question is None) == (answer is None):
        raise click.UsageError("give exactly one of --question and --answer")
    if question is not None:
        _step(home, output, actor, request_id, "ask", text=question)
    else:
        _step(
            home, output, actor, request_id, "clarify", value=parse_value(str(answer), "--answer")
        )


@requests.command("complete")
@store_options
@actor_option
@click.argument("request_id")
@click.option("--response", "response", required=True, help="The answer, as JSON.")
def complete(home: Path, output: str, actor: str, request_id: str, response: str) -> None:
    """Complete an accepted request; the response must match the expected output type.

    \b
    Examples:
        openseal requests complete 01a2 --response '{"approved": true, "remaining": 900}'
    """
    _step(home, output, actor, request_id, "complete", value=parse_value(response, "--response"))


@requests.command("review")
@store_options
@actor_option
@click.argument("request_id")
@click.option("--accept", "verdict", flag_value="accept", help="Accept the completion.")
@click.option("--send-back", "verdict", flag_value="send_back", help="Reopen it (needs --reason).")
@click.option("--reason", default=None)
def review(
    home: Path, output: str, actor: str, request_id: str, verdict: str | None, reason: str | None
) -> None:
    """Review a completion the caller asked to review.

    \b
    Examples:
        openseal requests review 01a2 --accept
        openseal requests review 01a2 --send-back --reason "count the spares too"
    """
    if verdict is None:
        raise click.UsageError("give --accept or --send-back")
    _step(home, output, actor, request_id, "review", verdict=verdict, reason=reason)
