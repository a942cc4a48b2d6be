"""``openseal serve``: the HTTP API (``/api/v1``) over the store, optionally with workers.

There is no TLS in the server: bind it to loopback, or put it behind a proxy that terminates
TLS. See ``docs/api.md``.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal.cli.output import output_option, render
from openseal.cli.retention_options import retention_options
from openseal.errors import OpenSealError, UsageError
from openseal.local_operator import LocalOperator, console_url, remove_secret, write_secret
from openseal.runtime.service import AUTHORITY_ENV

if TYPE_CHECKING:
    import uvicorn

    from openseal.api import ApiSettings
    from openseal.runtime.service import ArchiveRequest, ArchiveSchedule
    from openseal.runtime.store import Store


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8400, show_default=True)
@click.option(
    "--home", type=click.Path(path_type=Path), default=Path(".openseal"), show_default=True,
    envvar="OPENSEAL_HOME", help="Where the embedded SQLite store lives "
    "(ignored when OPENSEAL_DATABASE_URL is set).",
)  # fmt: skip
@click.option(
    "--authority", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar=AUTHORITY_ENV,
    help="Approval authority file (default <home>/approvals.yaml); without one, approval "
    "decisions are not served.",
)  # fmt: skip
@click.option(
    "--tokens", "tokens_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_API_TOKENS",
    help="Bearer tokens file (token sha256 -> principal); every request then needs a token.",
)  # fmt: skip
@click.option(
    "--trusted-proxy", "trusted_proxies", multiple=True, metavar="ADDRESS",
    envvar="OPENSEAL_TRUSTED_PROXIES",
    help="A proxy in front of the server (address or network; repeatable): its forwarding "
    "headers are honoured, and the local operator is off.",
)  # fmt: skip
@click.option(
    "--local-operator", is_flag=True,
    help="Serve the local operator (user:local) to this machine: a secret made at each start, "
    "in <home>/local-operator-<port>.token (mode 0600) and in the console URL printed once. "
    "Loopback only.",
)  # fmt: skip
@click.option(
    "--insecure-no-auth", is_flag=True,
    help="Listen beyond loopback without tokens: every caller acts as user:local. Unsafe.",
)  # fmt: skip
@click.option(
    "--workers", type=click.IntRange(0, 256), default=0, show_default=True,
    help="Engine workers to run in this process; run creation is served only with workers.",
)  # fmt: skip
@click.option(
    "--external-workers", is_flag=True,
    help="Declare that `openseal worker` processes serve this store (run creation is served).",
)  # fmt: skip
@click.option(
    "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_CONTEXT",
    help="Runtime context file for workers and action reconciliation.",
)  # fmt: skip
@click.option(
    "--scripted-responses", type=click.Path(path_type=Path, dir_okay=False), default=None,
    envvar="OPENSEAL_SCRIPTED_RESPONSES", help="Responses for `scripted` models (workers).",
)  # fmt: skip
@output_option("How to print the address: `json` or `yaml` print {url, tls} on stdout.")
@click.option(
    "--max-body-bytes", type=click.IntRange(1), default=None, envvar="OPENSEAL_MAX_BODY_BYTES",
    help="Larger request bodies are refused (413 body_too_large) [default: 1 MiB].",
)  # fmt: skip
@click.option(
    "--max-json-depth", type=click.IntRange(1, 10_000), default=None,
    envvar="OPENSEAL_MAX_JSON_DEPTH",
    help="JSON bodies nested deeper are refused (422 too_deep) [default: 64].",
)  # fmt: skip
@click.option(
    "--max-input-bytes", type=click.IntRange(1), default=None, envvar="OPENSEAL_MAX_INPUT_BYTES",
    help="Objectives whose inputs are larger (as compact JSON) are refused "
    "(422 inputs_too_large) [default: 256 KiB].",
)  # fmt: skip
@click.option(
    "--authoring-definitions", type=click.Path(path_type=Path, file_okay=False), default=None,
    envvar="OPENSEAL_AUTHORING_DEFINITIONS",
    help="Definitions that authored drafts join; the authoring model profile is defined there.",
)  # fmt: skip
@click.option(
    "--authoring-model", default=None, envvar="OPENSEAL_AUTHORING_MODEL",
    help="The model profile authoring uses; authoring is served only when it is complete.",
)  # fmt: skip
@click.option(
    "--authoring-token-budget", type=click.IntRange(1), default=200_000, show_default=True,
    envvar="OPENSEAL_AUTHORING_TOKEN_BUDGET",
    help="Tokens one authoring request may spend over all its model calls.",
)  # fmt: skip
@click.option(
    "--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Server log lines as text, or one JSON object per line (secrets redacted).",
)  # fmt: skip
@click.option(
    "--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info", show_default=True,
)  # fmt: skip
@click.option(
    "--archive-every", default=None, metavar="PERIOD",
    help="Also archive ended runs whose retention passed, at start and every PERIOD "
    "(as `openseal db archive` does, with the retention options below).",
)  # fmt: skip
@click.option(
    "--archive-to", default=None, metavar="PATH|URL",
    help="Where --archive-every archives: a directory, or a URL such as s3://BUCKET/PREFIX "
    "(default: HOME/archive).",
)  # fmt: skip
@retention_options
def serve(
    host: str,
    port: int,
    home: Path,
    authority: Path | None,
    tokens_path: Path | None,
    trusted_proxies: tuple[str, ...],
    local_operator: bool,
    insecure_no_auth: bool,
    workers: int,
    external_workers: bool,
    context_path: Path | None,
    scripted_responses: Path | None,
    max_body_bytes: int | None,
    max_json_depth: int | None,
    max_input_bytes: int | None,
    authoring_definitions: Path | None,
    authoring_model: str | None,
    authoring_token_budget: int,
    output: str,
    log_format: str,
    log_level: str,
    archive_every: str | None,
    archive_to: str | None,
    **policy: Any,
) -> None:
    """Serve the HTTP API: deployments, objectives, runs, approvals, actions, events.

    No TLS: use a proxy in front of it (--trusted-proxy) for anything but loopback. Callers
    identify with bearer tokens (`openseal tokens create`, --tokens FILE, the approval
    authority's). With --local-operator the person at this machine is served too, as
    user:local: the console URL printed at start carries this start's secret, and the CLI
    reads it from the home's local-operator-PORT.token; a relay or a web page alone gets
    nothing. Without tokens, listening beyond loopback is refused unless --insecure-no-auth.
    Exits 1 at once when the port is taken.

    \b
    Examples:
        openseal serve --local-operator --workers 2
        openseal serve --port 8400 --authority approvals.yaml --tokens tokens.yaml
        openseal serve --workers 2 --archive-every 1h --keep-ended-runs 90d
    """
    import uvicorn

    from openseal.api import ApiSettings, create_app
    from openseal.api.auth import TokenTable, load_tokens
    from openseal.api.limits import Limits
    from openseal.cli.runtime import archive_request, check_database_url, freeze_start_up_heap
    from openseal.observability import logs, tracing
    from openseal.runtime.service import load_authority
    from openseal.runtime.store import open_store
    from openseal.skills.credentials import RuntimeContext
    from openseal.skills.secrets import SecretFilter

    scrub = SecretFilter()
    if log_format == "json":
        logs.configure("json", log_level, filters=[scrub])

    check_database_url()
    archiving = archive_request(home, archive_every, archive_to, policy)
    loaded_authority = load_authority(authority, home=home)
    tokens = load_tokens(tokens_path) if tokens_path is not None else TokenTable()
    settings = ApiSettings(
        host=host, port=port, home=home, authority=loaded_authority, tokens=tokens,
        workers=workers, external_workers=external_workers,
        context=RuntimeContext.load(context_path, log_filter=scrub),
        scripted_responses=scripted_responses,
        limits=Limits.given(
            max_body_bytes=max_body_bytes, max_json_depth=max_json_depth,
            max_input_bytes=max_input_bytes,
        ),
        authoring_definitions=authoring_definitions, authoring_profile=authoring_model,
        authoring_token_budget=authoring_token_budget,
        trusted_proxies=_proxies(trusted_proxies), insecure_no_auth=insecure_no_auth,
        local_operator=LocalOperator.new() if local_operator else None,
    )  # fmt: skip
    _check_local_operator(settings)
    _check_bind(host, port)
    # Opened here, not at the application's start-up, so a store that cannot be opened is one
    # line naming it (and exit 1), not a start-up traceback.
    store = open_store(home=home)
    try:
        _check_exposure(settings, store.tokens.any())
    except UsageError:
        store.close()
        raise
    tracing.configure_from_env()
    announced = Announced(settings, output)
    schedule = _start_archiving(store, archiving, log_format)
    try:
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings, store=store),
                host=host,
                port=port,
                log_level=log_level,
                timeout_graceful_shutdown=5,
                server_header=False,
                # forwarding headers rewrite the client address only from configured proxies
                proxy_headers=bool(settings.trusted_proxies),
                forwarded_allow_ips=list(settings.trusted_proxies) or None,
                # with JSON logs the server's loggers go through the handler configured above
                log_config=None if log_format == "json" else uvicorn.config.LOGGING_CONFIG,
            )
        )
        logging.getLogger("uvicorn.error").addFilter(_quiet_lifecycle)
        announce = threading.Thread(target=announced.run, args=(server,), daemon=True)
        announce.start()
        freeze_start_up_heap()
        server.run()
    finally:
        if schedule is not None:
            schedule.stop()
        tracing.shutdown()
        store.close()
        announced.forget()


def _start_archiving(
    store: Store, archiving: tuple[ArchiveRequest, float] | None, log_format: str
) -> ArchiveSchedule | None:
    """``--archive-every``: archive in a thread of the server's, one line per pass on stderr
    (a log record with ``--log-format json``)."""
    if archiving is None:
        return None
    from openseal.runtime.service import ArchiveSchedule

    def log(message: str) -> None:
        if log_format == "json":
            logging.getLogger("openseal.archive").warning(message)
        else:
            click.echo(message, err=True)

    schedule = ArchiveSchedule(store, archiving[0], archiving[1], log)
    schedule.start()
    return schedule


#: what the server library says at start and stop; the banner says what matters instead
_LIFECYCLE = (
    "Started server process",
    "Waiting for application startup",
    "Application startup complete",
    "Uvicorn running on",
    "Shutting down",
    "Waiting for application shutdown",
    "Application shutdown complete",
    "Finished server process",
)


def _quiet_lifecycle(record: logging.LogRecord) -> bool:
    return record.levelno > logging.INFO or not str(record.msg).startswith(_LIFECYCLE)


def _proxies(values: tuple[str, ...]) -> tuple[str, ...]:
    found = []
    for value in values:
        for item in value.replace(",", " ").split():
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise UsageError(f"--trusted-proxy {item!r} is not an address or network") from None
            found.append(item)
    return tuple(found)


def _check_exposure(settings: ApiSettings, stored_tokens: bool) -> None:
    """Refuse to serve anonymous callers beyond this machine, unless told to, loudly."""
    from openseal.api.local import is_loopback

    if settings.all_tokens() or stored_tokens:
        return
    if is_loopback(settings.host) and not settings.trusted_proxies:
        if settings.local_operator is None and not settings.insecure_no_auth:
            # a log record, so that it is a JSON line with --log-format json
            logging.getLogger("openseal.serve").warning(
                "no tokens and no --local-operator: every API request is refused until a "
                "token exists (`openseal tokens create`)"
            )
        return
    where = f"on {settings.host}" if not is_loopback(settings.host) else "behind a proxy"
    if not settings.insecure_no_auth:
        raise UsageError(
            f"refusing to listen {where} without tokens: every caller would act as "
            "user:local; create tokens (`openseal tokens create`), pass --tokens FILE, or "
            "listen on 127.0.0.1 (--insecure-no-auth overrides this, unsafely)"
        )
    click.echo(
        f"WARNING: --insecure-no-auth: listening {where} WITHOUT AUTHENTICATION. Anyone who "
        "can reach this server acts as user:local: starts, cancels and steers runs, resolves "
        "actions, files deployments. Do not use this beyond a trusted test network.",
        err=True,
    )


def _check_local_operator(settings: ApiSettings) -> None:
    if settings.local_operator is None or settings.local:
        return
    raise UsageError(
        "--local-operator serves only this machine: listen on a loopback address "
        "(127.0.0.1, ::1, localhost) without --trusted-proxy"
    )


class Announced:
    """Once the server listens: the local operator's secret written (before anything is said,
    so a script that waits for the address finds it), then the address printed."""

    def __init__(self, settings: ApiSettings, output: str) -> None:
        self.settings = settings
        self.output = output
        self.secret: Path | None = None

    def run(self, server: uvicorn.Server) -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        sockets = server.servers[0].sockets if server.servers else ()
        port = sockets[0].getsockname()[1] if sockets else server.config.port
        host = self.settings.host
        url = f"http://{host}:{port}/api/v1"
        said: dict[str, object] = {"url": url, "tls": False}
        operator = self.settings.local_operator
        if operator is not None:
            self.secret = write_secret(self.settings.home, port, operator.secret)
            said["console"] = console_url(host, port, operator.secret)
            said["local_operator_secret"] = str(self.secret)
        if self.output != "text":
            click.echo(render(said, self.output), nl=False)
            return
        click.echo(f"openseal API on {url} (no TLS)", err=True)
        if operator is not None:
            click.echo(
                f"local operator (user:local): open {said['console']} — this start's secret, "
                f"also in {self.secret} for the CLI and scripts",
                err=True,
            )

    def forget(self) -> None:
        if self.secret is not None:
            remove_secret(self.secret)


class AddressInUse(OpenSealError):
    code = "unavailable"


def _check_bind(host: str, port: int) -> None:
    """Refuse in one line when ``host:port`` cannot be listened on (before any server starts)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        try:
            probe.bind(address)
        except OSError as exc:
            why = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise AddressInUse(f"cannot listen on {host}:{port}: {why}") from None
