"""``openseal capabilities``: what a server offers, and what it does not serve and why."""

from __future__ import annotations

import os
from pathlib import Path

import click

from openseal.cli.output import echo_data, output_option
from openseal.errors import OpenSealError

DEFAULT_URL = "http://127.0.0.1:8400"


class ServerUnavailable(OpenSealError):
    code = "unavailable"


@click.command()
@click.option(
    "--url",
    default=lambda: os.environ.get("OPENSEAL_URL", DEFAULT_URL),
    show_default=f"$OPENSEAL_URL or {DEFAULT_URL}",
    help="Base URL of an `openseal serve` server.",
)
@click.option(
    "--token",
    default=lambda: os.environ.get("OPENSEAL_TOKEN"),
    help="Bearer token, when the server requires one (default: $OPENSEAL_TOKEN).",
)
@click.option(
    "--home", type=click.Path(path_type=Path, file_okay=False), default=Path(".openseal"),
    show_default=True, envvar="OPENSEAL_HOME",
    help="Without a token, the local operator's secret of a server on this machine started "
    "over this home (`openseal serve --local-operator`) is used.",
)  # fmt: skip
@output_option()
def capabilities(url: str, token: str | None, home: Path, output: str) -> None:
    """List each capability of a server with its version, operations and availability.

    An unavailable capability's operations are not served (HTTP 501); the reason says
    what to configure.

    \b
    Examples:
        openseal capabilities
        openseal capabilities --url http://127.0.0.1:8400 --output json
    """
    import httpx

    from openseal.cli.client import local_operator_secret

    token = token or local_operator_secret(url, home)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    endpoint = url.rstrip("/") + "/api/v1/capabilities"
    try:
        response = httpx.get(endpoint, headers=headers, timeout=10)
    except httpx.HTTPError as exc:
        raise ServerUnavailable(f"cannot reach {endpoint}: {exc.__class__.__name__}") from None
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {response.status_code}"
        raise ServerUnavailable(f"{endpoint}: {message}")
    payload = response.json()
    if output != "text":
        echo_data(payload, output)
        return
    for item in payload.get("capabilities", []):
        state = "available" if item["available"] else "not served"
        version = str(item["version"])
        version = version if version.startswith("v") else f"v{version}"
        click.echo(f"{item['name']:<20} {version:<7} {state}")
        if item.get("reason"):
            click.echo(f"{'':<20} {item['reason']}")
        click.echo(f"{'':<20} {', '.join(item['operations'])}")
