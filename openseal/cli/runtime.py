"""``openseal db`` and ``openseal worker``, plus the store options every runtime command shares.

The store is SQLite under ``--home`` (default ``.openseal``) unless ``OPENSEAL_DATABASE_URL``
names a database (PostgreSQL: ``postgresql+psycopg://user@host/db``).
"""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from openseal.cli.lazy import LazyGroup
from openseal.cli.output import echo_data, output_option
from openseal.cli.retention_options import retention_from, retention_options
from openseal.errors import OpenSealError, StoreError, UsageError

if TYPE_CHECKING:
    from openseal.observability.metrics import MetricsServer
    from openseal.runtime.service import ArchiveRequest
    from openseal.runtime.service.workers import TurnLog
    from openseal.runtime.store import Reads, Store

F = TypeVar("F", bound=Callable[..., Any])


def store_options(command: F) -> F:
    """``--home`` and ``--output`` for a command that opens the store."""
    command = output_option()(command)
    return click.option(
        "--home", type=click.Path(path_type=Path), default=Path(".openseal"), show_default=True,
        envvar="OPENSEAL_HOME", help="Where the embedded SQLite store lives "
        "(ignored when OPENSEAL_DATABASE_URL is set).",
    )(command)  # fmt: skip


def context_option(help: str) -> Callable[[F], F]:
    """``--context``: the runtime context file (``OPENSEAL_CONTEXT``); ``help`` says what this
    command takes from it."""
    return click.option(
        "--context", "context_path", type=click.Path(path_type=Path, dir_okay=False),
        default=None, envvar="OPENSEAL_CONTEXT", help=help,
    )  # fmt: skip


def status_option(
    statuses: type[StrEnum], records: str, *, multiple: bool = False
) -> Callable[[F], F]:
    """``--status``: one of the statuses ``records`` (runs, approvals ...) can have, checked
    and completed by the shell as a choice; ``multiple`` takes it more than once."""
    names = [str(status) for status in statuses]
    again = " (repeatable)" if multiple else ""
    return click.option(
        "--status", "statuses" if multiple else "status", type=click.Choice(names),
        multiple=multiple, default=() if multiple else None, metavar="STATUS",
        help=f"Only {records} with this status{again}: {', '.join(names)}.",
    )  # fmt: skip


def list_options(statuses: type[StrEnum], records: str) -> Callable[[F], F]:
    """The flags every list shares (the API's list routes take the same): ``--status``,
    ``--workflow``, ``--since``, ``--limit`` and the cursor ``--after``."""

    def decorate(command: F) -> F:
        for option in reversed([
            status_option(statuses, records),
            click.option("--workflow", default=None, help="Only those of this workflow."),
            click.option(
                "--since", default=None, metavar="WHEN",
                help="Only those created since WHEN: an age (30m, 2h, 7d) or an ISO 8601 time.",
            ),
            click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True),
            click.option(
                "--after", default=None, metavar="ID",
                help="The next page: only those older than ID (the last one a page showed).",
            ),
        ]):  # fmt: skip
            command = option(command)
        return command

    return decorate


def more_hint(found: Sequence[Any], limit: int) -> None:
    """Under a full page of text, how to ask for the next one (on stderr: stdout stays the
    table)."""
    if found and len(found) >= limit:
        click.echo(f"(first {limit}; the next page: --after {found[-1].id})", err=True)


def complete_ids(kind: str) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """Shell completion for an id argument: the handles of the newest ``kind`` records in the
    store in use (what a person types), and their full ids once what is typed is the start of
    one.

    Completion never creates or writes a store (it opens one read-only): without one (or on
    any error) it offers nothing.
    """

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        from openseal.runtime import service

        home = Path(ctx.params.get("home") or os.environ.get("OPENSEAL_HOME") or ".openseal")
        if not os.environ.get("OPENSEAL_DATABASE_URL") and not (home / "openseal.db").exists():
            return []
        listers: dict[str, Callable[[Store], Any]] = {
            "run": lambda store: service.list_runs(store, limit=200),
            "objective": lambda store: service.list_objectives(store, limit=200),
            "approval": lambda store: service.list_approvals(store, limit=200),
            "action": lambda store: service.list_actions(store, limit=200),
            "agent request": lambda store: service.list_agent_requests(store, limit=200),
            "change proposal": lambda store: service.governance.list_proposals(store, limit=200),
            "token": lambda store: service.tokens.list_tokens(store, service.CLI)[-200:],
        }
        try:
            with opened(home, read_only=True) as store:
                ids = [item.id for item in listers[kind](store)]
        except Exception:  # completion must never print a traceback into the shell
            return []
        typed = incomplete.lower()
        handles = [h for h in map(service.handle, ids) if h.startswith(typed)]
        return handles + [i for i in ids if typed and i.startswith(typed)]

    return complete


class NoStore(OpenSealError):
    code = "not_found"


def check_database_url() -> None:
    """Refuse a PostgreSQL URL in the form SQLAlchemy does not take, saying which form it takes."""
    url = os.environ.get("OPENSEAL_DATABASE_URL") or ""
    if url.startswith("postgres://"):
        raise UsageError(
            "OPENSEAL_DATABASE_URL starts with postgres://; write the same URL with "
            "postgresql+psycopg:// instead"
        )


@contextmanager
def opened(
    home: Path, *, auto_migrate: bool | None = None, create: bool = False, read_only: bool = False
) -> Iterator[Store]:
    """The store under ``home`` (or at ``OPENSEAL_DATABASE_URL``).

    Only commands that set a store up (``create``) make a new one; any other names a missing
    store, so a mistyped ``--home`` is an error rather than an empty store.
    """
    store = open_checked(home, auto_migrate=auto_migrate, create=create, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


def open_checked(
    home: Path, *, auto_migrate: bool | None = None, create: bool = False, read_only: bool = False
) -> Store:
    """What :func:`opened` opens, to be closed by the caller; ``read_only``: for a command that
    only reads (SQLite opened read-only, never migrated or checkpointed into)."""
    from openseal.runtime.store import open_store

    check_database_url()
    in_database = bool(os.environ.get("OPENSEAL_DATABASE_URL"))
    if not create and not in_database and not (home / "openseal.db").exists():
        raise NoStore(
            f"no store at {home / 'openseal.db'}; create one with "
            f"`openseal db upgrade --home {home}` (or deploy to it), or set OPENSEAL_DATABASE_URL"
        )
    return open_store(home=home, auto_migrate=auto_migrate, read_only=read_only)


@contextmanager
def opened_for_reading(home: Path) -> Iterator[Reads]:
    """What a list of runs reads: on the embedded SQLite store at the newest schema, reads
    without SQLAlchemy (:func:`openseal.runtime.store.open_reads`, a faster start); else the
    store itself, as :func:`opened` opens it read-only (refusing or explaining as it does).
    Either way a SQLite file is only read: never migrated, written or checkpointed into."""
    from openseal.runtime.store import open_reads

    check_database_url()
    reads = None if os.environ.get("OPENSEAL_DATABASE_URL") else open_reads(home)
    if reads is None:
        with opened(home, read_only=True) as store:
            yield store
        return
    try:
        yield reads
    finally:
        reads.close()


# -- db --------------------------------------------------------------------------------


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "archive": "openseal.cli.db_archive:archive",
        "restore-archive": "openseal.cli.db_archive:restore_archive",
        "backup": "openseal.cli.db_backup:backup",
        "restore": "openseal.cli.db_backup:restore",
        "recovery": "openseal.cli.db_backup:recovery",
    },
)
def db() -> None:
    """Manage the runtime database: its schema, backups, restores and recovery mode."""


@db.command()
@store_options
@click.option(
    "--plan", "show_plan", is_flag=True,
    help="Only say which migrations are pending, what each does and what it locks.",
)  # fmt: skip
def upgrade(home: Path, output: str, show_plan: bool) -> None:
    """Migrate the database to the schema this openseal needs.

    \b
    Examples:
        openseal db upgrade --home .openseal
        openseal db upgrade --plan
        OPENSEAL_DATABASE_URL=postgresql+psycopg://openseal@db/openseal openseal db upgrade
    """
    if show_plan:
        from openseal.cli.db_upgrade_plan import show_plan as print_plan

        print_plan(home, output)
        return
    with opened(home, auto_migrate=True, create=True) as store:
        revision = store.schema_revision()
    echo_data(
        {"revision": revision}, output, lambda: click.echo(f"database at revision {revision}")
    )


# -- worker ----------------------------------------------------------------------------


@click.command()
@store_options
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Runs worked on at the same time (threads).",
)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(0.5),
    default=30.0,
    show_default=True,
    help="Lease length; the heartbeat renews it every third.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(0.01),
    default=1.0,
    show_default=True,
    help="Longest sleep between looks for work when idle.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 256),
    default=None,
    show_default="8; 4 on PostgreSQL",
    help="Most runs whose writes share one commit (1: every write commits alone).",
)
@click.option(
    "--batch-window-ms",
    type=click.FloatRange(0, 1000),
    default=2.0,
    show_default=True,
    help="Longest wait of a shared commit for the other busy threads' writes.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="One line per turn (and per log record) on stderr, as text or JSON; secrets redacted.",
)
@click.option("--once", "mode", flag_value="once", help="Work on one run, then exit.")
@click.option(
    "--until-idle", "mode", flag_value="until_idle", help="Exit when nothing is runnable."
)
@click.option("--worker-id", default=None, help="Name in leases and events (default host:pid).")
@click.option(
    "--drain-seconds", type=click.FloatRange(0), default=20.0, show_default=True,
    help="Longest drain on SIGTERM/SIGINT; turns still going then are left to their leases.",
)  # fmt: skip
@click.option(
    "--scripted-responses",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    envvar="OPENSEAL_SCRIPTED_RESPONSES",
    help="Responses file for models whose provider is `scripted`.",
)
@click.option(
    "--scripted-calls",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    envvar="OPENSEAL_SCRIPTED_CALLS",
    help="Append one line per scripted model call.",
)
@context_option(
    "Runtime context file: adapter config and credential sources "
    "(default .openseal/context.yaml if it exists)."
)
@click.option(
    "--metrics-port", type=click.IntRange(0, 65535), default=None,
    envvar="OPENSEAL_METRICS_PORT",
    help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port).",
)  # fmt: skip
@click.option(
    "--metrics-host", default="127.0.0.1", show_default=True,
    help="Address the metrics port listens on.",
)  # fmt: skip
@click.option(
    "--archive-every", default=None, metavar="PERIOD",
    help="Also archive ended runs whose retention passed, at start and every PERIOD "
    "(as `openseal db archive` does, with the retention options below); with --until-idle, "
    "every PERIOD and once when idle, before exiting.",
)  # fmt: skip
@click.option(
    "--archive-to", default=None, metavar="PATH|URL",
    help="Where --archive-every archives: a directory, or a URL such as s3://BUCKET/PREFIX "
    "(default: HOME/archive).",
)  # fmt: skip
@retention_options
def worker(
    home: Path,
    output: str,
    concurrency: int,
    lease_seconds: float,
    poll_interval: float,
    batch_size: int | None,
    batch_window_ms: float,
    log_format: str,
    mode: str | None,
    worker_id: str | None,
    drain_seconds: float,
    scripted_responses: Path | None,
    scripted_calls: Path | None,
    context_path: Path | None,
    metrics_port: int | None,
    metrics_host: str,
    archive_every: str | None,
    archive_to: str | None,
    **policy: Any,
) -> None:
    """Execute runs: claim with a lease, run turns, drain on SIGTERM/SIGINT.

    \b
    Examples:
        openseal worker --concurrency 4
        openseal worker --concurrency 8 --batch-size 8 --batch-window-ms 2
        openseal worker --until-idle --scripted-responses responses.yaml
        openseal worker --archive-every 1h --keep-ended-runs 90d
    """
    from openseal.observability import logs, tracing
    from openseal.runtime import service
    from openseal.runtime.service.workers import (
        Engine,
        TurnLog,
        Worker,
        default_provider_factory,
        default_worker_id,
    )
    from openseal.skills.credentials import RuntimeContext
    from openseal.skills.secrets import SecretFilter

    scrub = SecretFilter()
    if log_format == "json":
        logs.configure("json", "info", filters=[scrub])
    context = RuntimeContext.load(context_path, log_filter=scrub)  # fail fast when malformed
    archiving = archive_request(home, archive_every, archive_to, policy)
    name = worker_id or default_worker_id()
    log = TurnLog(name, log_format)
    tracing.configure_from_env()
    reachable = _open_when_reachable(home, log)
    if reachable is None:  # stopped while the database was unreachable
        log.message("stopped")
        return
    with closing(reachable) as store:
        store.poll_interval = min(store.poll_interval, poll_interval)
        engine = Engine(
            store,
            default_provider_factory(
                scripted_responses, scripted_calls, credentials=context.credentials
            ),
            worker_id=name,
            lease_seconds=lease_seconds,
            on_turn=log,
            context=context,
            batch_size=batch_size,
            batch_window=batch_window_ms / 1000,
        )
        engine.notice = log.message
        runner = Worker(
            engine, concurrency=concurrency, poll_interval=poll_interval,
            mode=mode or "forever",  # type: ignore[arg-type]
            drain_seconds=drain_seconds,
        )  # fmt: skip
        runner.install_signal_handlers(log)
        exposed = _serve_metrics(store, metrics_host, metrics_port, log)
        schedule = None
        if archiving is not None:
            schedule = service.ArchiveSchedule(store, archiving[0], archiving[1], log.message)
            # a worker that exits when idle archives then (first here after a period)
            schedule.start(at_once=mode != "until_idle")
        freeze_start_up_heap()
        log.message(f"started (concurrency {concurrency}, lease {lease_seconds}s)")
        try:
            left = runner.run()
            if schedule is not None and mode == "until_idle" and not runner.draining:
                schedule.last_pass(drain_seconds, stop=lambda: runner.draining)
        finally:
            if schedule is not None:
                schedule.stop(drain_seconds)
            if exposed is not None:
                exposed.close()
            tracing.shutdown()
        if not left:  # a turn left going may still write: the file is checkpointed next time
            store.checkpoint()  # openseal.db alone is then a complete copy
        if left:
            log.message(
                f"the drain did not end within {drain_seconds:g}s: {left} turn(s) left to "
                "their leases"
            )
        log.message("stopped")


def archive_request(
    home: Path, every: str | None, to: str | None, policy: dict[str, Any]
) -> tuple[ArchiveRequest, float] | None:
    """What ``--archive-every`` asks for (checked before anything starts), and how often
    (``worker`` and ``serve``)."""
    from openseal.runtime import service

    retention = retention_from(policy)
    if every is None:
        return None
    seconds = service.parse_period(every, "--archive-every")
    if seconds <= 0:
        raise UsageError("--archive-every: give a period longer than 0s")
    location = service.locate_archive(to or home / "archive", "--archive-to")
    return service.ArchiveRequest(to=location, retention=retention), seconds


def _open_when_reachable(home: Path, log: TurnLog) -> Store | None:
    """The store, once its PostgreSQL answers: a worker started while the database is
    unreachable waits and retries with backoff (one line per attempt) instead of exiting.
    None when SIGTERM or SIGINT came first. Any other failure to open it is raised."""
    from openseal.runtime.service.workers import backoff

    stop = threading.Event()
    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    try:
        attempt = 0
        while True:
            try:
                return open_checked(home)
            except StoreError as exc:
                if exc.code != "unavailable" or not os.environ.get("OPENSEAL_DATABASE_URL"):
                    raise
                attempt += 1
                delay = backoff(attempt)
                log.message(f"{exc}; retrying in {delay:.1f}s")
                if stop.wait(delay):
                    return None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def freeze_start_up_heap() -> None:
    """Collect once, then leave everything start-up built (modules, compiled workflows, the
    store's statements: over 100,000 objects) out of later garbage collections, for a
    process that runs until stopped. A full collection walks every object the collector
    tracks while it holds every thread; with start-up left out, one takes milliseconds
    rather than tens of them. Objects it leaves out are still freed when nothing refers
    to them; only a reference cycle among them is kept."""
    gc.collect()
    gc.freeze()


def _serve_metrics(store: Store, host: str, port: int | None, log: TurnLog) -> MetricsServer | None:
    if port is None:
        return None
    from openseal.observability.metrics import MetricsServer
    from openseal.runtime.service.workers import StoreCollector

    try:
        exposed = MetricsServer(port, host, [StoreCollector(store)])
    except OSError as exc:
        raise UsageError(f"cannot serve metrics on {host}:{port}: {exc.strerror}") from None
    log.message(f"metrics on http://{host}:{exposed.port}/metrics")
    return exposed
