"""``openseal tokens create|list|revoke``: principals' bearer tokens for the HTTP API.

These commands administer the store directly (on the machine holding it, or with
``OPENSEAL_DATABASE_URL`` pointing at a shared PostgreSQL): they act as the local operator,
who holds the admin role. The server reads the tokens from the store at every request, so a
revoked or expired token stops working at once. Only the sha256 of a token is stored: the
secret ``create`` prints cannot be shown again.
"""

from __future__ import annotations

from pathlib import Path

import click

from openseal.cli.output import echo_data
from openseal.cli.runtime import opened, store_options
from openseal.errors import UsageError
from openseal.runtime import service


@click.group()
def tokens() -> None:
    """Bearer tokens: who may call the HTTP API, with which roles, in which scopes."""


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    from openseal.compiler.definitions.field_types import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--expires-in: {exc}") from None


@tokens.command("create")
@store_options
@click.argument("principal")
@click.option(
    "--role", "roles", multiple=True, required=True, metavar="ROLE",
    help=f"A role the token holds (repeatable): {', '.join(service.ROLES)}.",
)  # fmt: skip
@click.option(
    "--scope", "scopes", multiple=True, metavar="SCOPE",
    help="A scope it may read and act in (repeatable; `*` is every scope) [default: default].",
)  # fmt: skip
@click.option("--expires-in", default=None, help="Expire after this long (e.g. 30d, 12h).")
@click.option("--note", default=None, help="What the token is for.")
def create(
    home: Path,
    output: str,
    principal: str,
    roles: tuple[str, ...],
    scopes: tuple[str, ...],
    expires_in: str | None,
    note: str | None,
) -> None:
    """Make a token for PRINCIPAL (user:alice, service:ci) and print it, once.

    \b
    Examples:
        openseal tokens create user:alice --role operator --role approver
        openseal tokens create service:ci --role author --scope '*' --expires-in 90d
    """
    request = service.NewToken(principal, roles, scopes or ("default",), _seconds(expires_in), note)
    with opened(home, create=True) as store:
        issued = service.tokens.create_token(store, request, service.CLI)
        view = service.tokens.token_view(store, issued.token)
    if output != "text":
        echo_data({"token": view, "secret": issued.secret}, output)
        return
    click.echo(issued.secret)
    expires = view["expires_at"] or "never"
    click.echo(
        f"token {view['id']} for {principal}: roles {', '.join(view['roles'])}; scopes "
        f"{', '.join(view['scopes'])}; expires {expires}. The token above is shown only now.",
        err=True,
    )


@tokens.command("list")
@store_options
@click.option("--principal", default=None, help="Only this principal's tokens.")
def list_tokens(home: Path, output: str, principal: str | None) -> None:
    """Every token, oldest first, with its state (active, expired, revoked); never a secret.

    \b
    Examples:
        openseal tokens list --principal user:alice
    """
    with opened(home) as store:
        found = service.tokens.list_tokens(store, service.CLI, principal=principal)
        views = [service.tokens.token_view(store, token) for token in found]
    if output != "text":
        echo_data({"tokens": views}, output)
        return
    for view in views:
        click.echo(
            f"{view['id']}  {view['state']:<8} {view['principal']:<20} "
            f"roles {','.join(view['roles'])}  scopes {','.join(view['scopes'])}  "
            f"expires {view['expires_at'] or 'never'}"
        )


@tokens.command("revoke")
@store_options
@click.argument("token_id", metavar="ID")
def revoke(home: Path, output: str, token_id: str) -> None:
    """Revoke a token by id (or unique prefix): it stops working at once.

    \b
    Examples:
        openseal tokens revoke 0193a2
    """
    with opened(home) as store:
        token = service.tokens.revoke_token(store, token_id, service.CLI)
        view = service.tokens.token_view(store, token)
    if output != "text":
        echo_data({"token": view}, output)
        return
    click.echo(f"token {view['id']} of {view['principal']} revoked at {view['revoked_at']}")
