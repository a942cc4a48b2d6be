"""``openseal simulator``: run local stand-ins for external services in the foreground."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import click

from openseal.cli.output import output_option, render
from openseal.errors import UsageError


@click.group()
def simulator() -> None:
    """Local stand-ins for the services the examples call (loopback only)."""


@simulator.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1; 0 picks a free one.",
)
@click.option(
    "--credential-env",
    metavar="VAR",
    help="Require `Authorization: Bearer <token>` with the token read from VAR.",
)
@output_option("How to print the URL.")
@click.option("--quiet", is_flag=True, help="Do not log requests to stderr.")
def procurement(port: int, credential_env: str | None, output: str, quiet: bool) -> None:
    """Run the procurement simulator until Ctrl-C or SIGTERM; prints its URL first.

    \b
    Examples:
        openseal simulator procurement --port 8765
        openseal simulator procurement --credential-env PROCUREMENT_TOKEN --output json
    """
    from openseal.simulator import ProcurementSimulator

    credential = _credential(credential_env)
    log = None if quiet else _log
    with ProcurementSimulator(port=port, credential=credential, log=log) as sim:
        if output != "text":
            click.echo(render({"url": sim.url, "credential_env": credential_env}, output), nl=False)
        else:
            click.echo(sim.url)
            click.echo("procurement simulator running; Ctrl-C to stop", err=True)
        _wait_for_stop()


@simulator.command()
@click.option(
    "--script", "script", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="YAML or JSON file: the answers, in order (see docs/simulator.md).",
)  # fmt: skip
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True,
    help="Port on 127.0.0.1; 0 picks a free one.",
)  # fmt: skip
@click.option(
    "--credential-env", metavar="VAR",
    help="Require `Authorization: Bearer <key>` with the key read from VAR.",
)  # fmt: skip
@output_option("How to print the URL.")
@click.option("--quiet", is_flag=True, help="Do not log requests to stderr.")
def model(script: Path, port: int, credential_env: str | None, output: str, quiet: bool) -> None:
    """Run a scripted chat-completions endpoint until Ctrl-C or SIGTERM; prints its base URL.

    Each `POST /v1/chat/completions` gets the script's next answer, so `openseal author` can
    be tried without a model account.

    \b
    Examples:
        openseal simulator model --script drafts.yaml --port 8000
        openseal simulator model --script drafts.yaml --credential-env MODEL_GATEWAY_KEY
    """
    from openseal.simulator import ModelSimulator, load_answers

    credential = _credential(credential_env)
    log = None if quiet else _model_log
    with ModelSimulator(load_answers(script), port=port, credential=credential, log=log) as sim:
        if output != "text":
            click.echo(render({"url": sim.url, "credential_env": credential_env}, output), nl=False)
        else:
            click.echo(sim.url)
            click.echo("model simulator running; Ctrl-C to stop", err=True)
        _wait_for_stop()


def _credential(credential_env: str | None) -> str | None:
    if not credential_env:
        return None
    credential = os.environ.get(credential_env)
    if not credential:
        raise UsageError(f"environment variable {credential_env} is not set")
    return credential


def _model_log(message: str) -> None:
    click.echo(f"model simulator: {message}", err=True)


def _log(message: str) -> None:
    click.echo(f"procurement simulator: {message}", err=True)


def _wait_for_stop() -> None:
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        # a timeout keeps Ctrl-C responsive on every platform
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
