"""``openseal requests ...``: agent requests one run made of another agent, and their steps.

People and outside systems take part here: the callee's side accepts, declines, asks a
question or completes; the caller's side answers a question or reviews a completion. On the
store each step is recorded with ``--actor`` (default: the local operator) as who took it; with
``--server`` the token's principal takes it, and the server decides whether it may.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from openseal.cli.client import connected, many, one, server_options
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.runs import parse_value
from openseal.cli.runtime import complete_ids, status_option, store_options
from openseal.runtime import service
from openseal.runtime.service import AgentRequestStatus
from openseal.runtime.store import AgentRequest

F = TypeVar("F", bound=Callable[..., Any])

actor_option = click.option(
    "--actor", envvar="OPENSEAL_ACTOR", default=service.LOCAL_OPERATOR, show_default=True,
    help="Who takes the step, e.g. user:alice (recorded on the caller run's event; env "
    "OPENSEAL_ACTOR).",
)  # fmt: skip


@click.group()
def requests() -> None:
    """Agent requests: list and show them, accept, decline, clarify, complete, review.

    Without --server they act on the store under --home as the local operator; with --server
    URL (or OPENSEAL_SERVER) they ask that server, as the token's principal.
    """


def _row(request: AgentRequest) -> list[str]:
    meta = request.request if isinstance(request.request, dict) else {}
    return [handle(request.id), str(request.status), request.callee, handle(request.caller_run_id),
            str(meta.get("goal") or "-")]  # fmt: skip


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
        click.echo(f"  deadline   {when(request.deadline)}")
    if meta.get("budget"):
        click.echo(
            f"  budget     {json.dumps(meta['budget'], sort_keys=True)} (carved from the caller's)"
        )
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
@server_options
@status_option(AgentRequestStatus, "requests")
@click.option("--callee", default=None, help="Only requests to this agent or team.")
@click.option(
    "--run",
    "run_id",
    default=None,
    help="Only requests this run made.",
    shell_complete=complete_ids("run"),
)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
def list_requests(
    home: Path, output: str, server: str | None, token_file: Path | None, status: str | None,
    callee: str | None, run_id: str | None, limit: int,
) -> None:  # fmt: skip
    """Newest agent requests first.

    \b
    Examples:
        openseal requests list --status clarification_requested
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            lambda store: service.list_agent_requests(
                store, status=status, callee=callee, run_id=run_id, limit=limit
            ),
            "agent_requests.list", "agent-requests", read=many(AgentRequest, "agent_requests"),
            params={"status": status, "callee": callee, "run": run_id, "limit": limit},
        )  # fmt: skip

    def text() -> None:
        headers = ["handle", "status", "callee", "run", "goal"]
        rows = [_row(request) for request in found]
        echo_table(headers, rows, shrink=["goal"], empty="no agent requests")

    echo_data(found, output, text)


@requests.command("show")
@store_options
@server_options
@click.argument("request_id", shell_complete=complete_ids("agent request"))
def show(
    home: Path, output: str, server: str | None, token_file: Path | None, request_id: str
) -> None:
    """One request: goal, inputs, child run, questions and answers, reviews, response.

    \b
    Examples:
        openseal requests show 01a2
    """
    with connected(home, server, token_file, read_only=True) as at:
        found = at.ask(
            lambda store: service.show_agent_request(store, request_id),
            "agent_requests.show", "agent-requests", request_id,
            read=one(AgentRequest, "agent_request"),
        )  # fmt: skip
    echo_data(found, output, lambda: _show(found))


#: each step's API body: its field → the step's field of the same value
_BODIES: dict[str, dict[str, str]] = {
    "accept": {}, "decline": {"reason": "reason"}, "ask": {"question": "text"},
    "clarify": {"answer": "value"}, "complete": {"response": "value"},
    "review": {"verdict": "verdict", "reason": "reason"},
}  # fmt: skip


def _step(asked: Step, step: str, **fields: Any) -> None:
    with connected(asked.home, asked.server, asked.token_file) as at:
        caller = at.acting(asked.actor)
        done = at.ask(
            lambda store: service.step_agent_request(
                store, service.AgentRequestStep(asked.request_id, step, **fields), caller
            ),
            f"agent_requests.{step}", "agent-requests", asked.request_id, step, method="POST",
            body={key: fields[name] for key, name in _BODIES[step].items()},
            read=one(AgentRequest, "agent_request"),
        )  # fmt: skip
    echo_data(done, asked.output, lambda: click.echo(f"agent request {done.id}: {done.status}"))


@dataclass(frozen=True)
class Step:
    """Where a step is taken, by whom, on which request."""

    home: Path
    output: str
    server: str | None
    token_file: Path | None
    actor: str
    request_id: str


def step_options(command: F) -> F:
    """The store or a server, who acts on the store, and the request's id."""
    command = click.argument("request_id", shell_complete=complete_ids("agent request"))(command)
    return store_options(server_options(actor_option(command)))


@requests.command("accept")
@step_options
def accept(**asked: Any) -> None:
    """Take a requested request on (the callee's side).

    \b
    Examples:
        openseal requests accept 01a2 --actor user:fiona
    """
    _step(Step(**asked), "accept")


@requests.command("decline")
@step_options
@click.option("--reason", required=True, help="Why the work will not be done.")
def decline(reason: str, **asked: Any) -> None:
    """Decline a request; the caller leaves by `on "declined"`.

    \b
    Examples:
        openseal requests decline 01a2 --reason "the cost center is frozen"
    """
    _step(Step(**asked), "decline", reason=reason)


@requests.command("clarify")
@step_options
@click.option("--question", default=None, help="Ask the caller (the callee's side).")
@click.option("--answer", default=None, help="Answer the open question (JSON or text).")
def clarify(question: str | None, answer: str | None, **asked: Any) -> None:
    """Ask a question (--question) or answer the open one (--answer).

    \b
    Examples:
        openseal requests clarify 01a2 --question "Which cost center?" --actor agent:finance
        openseal requests clarify 01a2 --answer CC-7
    """
    if (question is None) == (answer is None):
        raise click.UsageError("give exactly one of --question and --answer")
    if question is not None:
        _step(Step(**asked), "ask", text=question)
    else:
        _step(Step(**asked), "clarify", value=parse_value(str(answer), "--answer"))


@requests.command("complete")
@step_options
@click.option("--response", "response", required=True, help="The answer, as JSON.")
def complete(response: str, **asked: Any) -> None:
    """Complete an accepted request; the response must match the expected output type.

    \b
    Examples:
        openseal requests complete 01a2 --response '{"approved": true, "remaining": 900}'
    """
    _step(Step(**asked), "complete", value=parse_value(response, "--response"))


@requests.command("review")
@step_options
@click.option("--accept", "verdict", flag_value="accept", help="Accept the completion.")
@click.option("--send-back", "verdict", flag_value="send_back", help="Reopen it (needs --reason).")
@click.option("--reason", default=None)
def review(verdict: str | None, reason: str | None, **asked: Any) -> None:
    """Review a completion the caller asked to review.

    \b
    Examples:
        openseal requests review 01a2 --accept
        openseal requests review 01a2 --send-back --reason "count the spares too"
    """
    if verdict is None:
        raise click.UsageError("give --accept or --send-back")
    _step(Step(**asked), "review", verdict=verdict, reason=reason)
