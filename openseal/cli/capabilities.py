"""``openseal capabilities``: what a server offers, and what it does not serve and why."""

from __future__ import annotations

import json
import os

import click

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
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def capabilities(url: str, token: str | None, output: str) -> None:
    """List each capability of a server with its version, operations and availability.

    An unavailable capability's operations are not served (HTTP 501); the reason says
    what to configure.
    """
    import httpx

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
    if output == "json":
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
        return
    for item in payload.get("capabilities", []):
        state = "available" if item["available"] else "not served"
        click.echo(f"{item['name']:<20} v{item['version']:<6} {state}")
        if item.get("reason"):
            click.echo(f"{'':<20} {item['reason']}")
        click.echo(f"{'':<20} {', '.join(item['operations'])}")
