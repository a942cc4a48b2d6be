"""``openseal tokens create|list|revoke``: principals' bearer tokens for the HTTP API.

Without ``--server`` these commands administer the store directly (on the machine holding it,
or with ``OPENSEAL_DATABASE_URL`` pointing at a shared PostgreSQL): they act as the local
operator, who holds the admin role everywhere. With ``--server`` they ask that server, whose
token must be ``admin`` in every scope. The server reads the tokens from the store at every
request, so a revoked or expired token stops working at once. Only the sha256 of a token is
stored: the secret ``create`` prints cannot be shown again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal.cli.client import Connection, connected, server_options
from openseal.cli.output import echo_data, echo_table, handle, when
from openseal.cli.runtime import complete_ids, store_options
from openseal.errors import UsageError
from openseal.runtime import service

if TYPE_CHECKING:
    from openseal.runtime.store import Store


@click.group()
def tokens() -> None:
    """Bearer tokens: who may call the HTTP API, with which roles, in which scopes.

    Without --server they act on the store under --home as the local operator; with --server
    (or OPENSEAL_SERVER) they ask that server, with a token that is admin in every scope."""


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    from openseal.compiler import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--expires-in: {exc}") from None


def _created(at: Connection[Store], request: service.NewToken) -> dict[str, Any]:
    """``{"token": view, "secret": ...}`` from the store or the server."""

    def local(store: Store) -> dict[str, Any]:
        issued = service.tokens.create_token(store, request, service.CLI)
        return {"token": service.tokens.token_view(store, issued.token), "secret": issued.secret}

    body = {
        "principal": request.principal, "roles": list(request.roles),
        "scopes": list(request.scopes), "expiresIn": request.expires_in, "note": request.note,
    }  # fmt: skip
    return at.ask(
        local, "tokens.create", "tokens", method="POST", body=body,
        read=lambda answer: {"token": answer["token"], "secret": answer["secret"]},
    )  # fmt: skip


@tokens.command("create")
@store_options
@server_options
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
    server: str | None,
    token_file: Path | None,
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
    with connected(home, server, token_file, create=True) as at:
        created = _created(at, request)
    if output != "text":
        echo_data(created, output)
        return
    view = created["token"]
    click.echo(created["secret"])
    click.echo(
        f"token {view['id']} for {view['principal']}: roles {', '.join(view['roles'])}; scopes "
        f"{', '.join(view['scopes'])}; expires {_expiry(view)}. The token above is shown only now.",
        err=True,
    )


@tokens.command("list")
@store_options
@server_options
@click.option("--principal", default=None, help="Only this principal's tokens.")
def list_tokens(
    home: Path, output: str, server: str | None, token_file: Path | None, principal: str | None
) -> None:
    """Every token, oldest first, with its state (active, expired, revoked); never a secret.

    \b
    Examples:
        openseal tokens list --principal user:alice
    """

    def local(store: Store) -> list[dict[str, Any]]:
        found = service.tokens.list_tokens(store, service.CLI, principal=principal)
        return [service.tokens.token_view(store, token) for token in found]

    with connected(home, server, token_file, read_only=True) as at:
        views = at.ask(
            local, "tokens.list", "tokens", params={"principal": principal},
            read=lambda answer: list(answer["tokens"]),
        )  # fmt: skip
    if output != "text":
        echo_data({"tokens": views}, output)
        return
    rows = [
        [handle(view["id"]), view["state"], view["principal"], ",".join(view["roles"]),
         ",".join(view["scopes"]), _expiry(view)]
        for view in views
    ]  # fmt: skip
    headers = ["handle", "state", "principal", "roles", "scopes", "expires"]
    echo_table(headers, rows, shrink=["scopes"], empty="no tokens")


def _expiry(view: dict[str, Any]) -> str:
    return when(view["expires_at"]) if view["expires_at"] else "never"


@tokens.command("revoke")
@store_options
@server_options
@click.argument("token_id", metavar="ID", shell_complete=complete_ids("token"))
def revoke(
    home: Path, output: str, server: str | None, token_id: str, token_file: Path | None
) -> None:
    """Revoke a token by id (or unique prefix): it stops working at once.

    \b
    Examples:
        openseal tokens revoke 0193a2
    """

    def local(store: Store) -> dict[str, Any]:
        token = service.tokens.revoke_token(store, token_id, service.CLI)
        return service.tokens.token_view(store, token)

    with connected(home, server, token_file) as at:
        view = at.ask(
            local, "tokens.revoke", "tokens", token_id, "revoke", method="POST",
            read=lambda answer: dict(answer["token"]),
        )  # fmt: skip
    if output != "text":
        echo_data({"token": view}, output)
        return
    click.echo(f"token {view['id']} of {view['principal']} revoked at {when(view['revoked_at'])}")
