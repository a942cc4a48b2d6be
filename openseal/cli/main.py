"""The ``openseal`` command. Commands are thin: parse options, call a stage, render.

Exit codes: 0 success, 1 failure or error diagnostics, 2 usage errors; an error's exit code
is the one the error registry (:mod:`openseal.error_codes`) declares for its code. With
``--output json`` (or ``yaml``) a failure also prints the API's error object on stdout.
No Python traceback reaches a user; set ``OPENSEAL_DEBUG=1`` to see one.
"""

from __future__ import annotations

import os
import sys

import click

from openseal import __version__
from openseal.cli.lazy import LazyGroup
from openseal.cli.output import echo_error, forget_format
from openseal.error_codes import USAGE, exit_code
from openseal.errors import ClaimLost, InvalidInput, OpenSealError, UsageError

#: command name → "module:attribute"; modules are imported only when their
#: command runs, so `openseal validate` in a pre-commit hook starts quickly.
COMMANDS = {
    "validate": "openseal.cli.validate:validate",
    "compile": "openseal.cli.compile:compile_command",
    "graph": "openseal.cli.graph:graph",
    "diff": "openseal.cli.diff:diff_command",
    "schema": "openseal.cli.schema:schema",
    "capabilities": "openseal.cli.capabilities:capabilities",
    "simulator": "openseal.cli.simulator:simulator",
    "run": "openseal.cli.run:run_command",
    "db": "openseal.cli.runtime:db",
    "worker": "openseal.cli.runtime:worker",
    "objectives": "openseal.cli.runs:objectives",
    "runs": "openseal.cli.runs:runs",
    "deploy": "openseal.cli.deploy:deploy",
    "proposals": "openseal.cli.governance:proposals",
    "replay": "openseal.cli.replay:replay",
    "deployments": "openseal.cli.deployments:deployments",
    "approvals": "openseal.cli.approvals:approvals",
    "actions": "openseal.cli.actions:actions",
    "requests": "openseal.cli.requests:requests",
    "quickstart": "openseal.cli.quickstart:quickstart",
    "serve": "openseal.cli.serve:serve",
    "completion": "openseal.cli.completion:completion",
    "author": "openseal.cli.author:author_command",
    "ask": "openseal.cli.ask:ask_command",
    "models": "openseal.cli.models:models",
    "tokens": "openseal.cli.tokens:tokens",
    "triggers": "openseal.cli.triggers:triggers",
    "agents": "openseal.cli.flow:agents",
    "teams": "openseal.cli.flow:teams",
    "scopes": "openseal.cli.flow:scopes",
}


#: each command's first help paragraph, for `openseal --help` without importing the commands
#: (a test holds each to the command's own help)
SUMMARIES = {
    "agents": (
        "Agents: pause and resume one, and show what it is doing now (runs, requests, "
        "concurrency slots)."
    ),
    "teams": (
        "Teams: pause and resume one, and show what it is doing now (runs, requests, "
        "concurrency slots)."
    ),
    "scopes": (
        "Scopes' flow control: concurrency caps, quotas per day or month, ready-queue depths."
    ),
    "actions": (
        "Governed actions: their status, key, result, and what to do when the outcome is unknown."
    ),
    "approvals": (
        "Approvals: see the exact proposal and its hash, then approve, reject or request changes."
    ),
    "ask": "Start the deployed workflow that fits PROMPT, picked by a team's or an agent's model.",
    "author": "Draft definitions from PROMPT with a model; the compiler checks every draft.",
    "capabilities": (
        "List each capability of a server with its version, operations and availability."
    ),
    "compile": "Compile definition files (HCL or YAML) into a bundle of versioned JSON documents.",
    "completion": "Print the completion script for SHELL: commands, options and their choices.",
    "db": "Manage the runtime database: its schema, backups, restores and recovery mode.",
    "deploy": "Store the definitions at PATH and file a change proposal for what changed.",
    "deployments": "Deployments: which version each workflow, runbook and governance name runs.",
    "diff": "Show the semantic changes from OLD to NEW and flag the ones that widen authority.",
    "graph": "Draw the state graph of a workflow, or the step DAG of a runbook.",
    "models": "Model profiles: check that an endpoint works before a run needs it.",
    "objectives": "Create and inspect objectives (each starts a run of a deployed workflow).",
    "proposals": "Review, decide and activate change proposals filed by `openseal deploy`.",
    "replay": "Re-drive recorded runs through their own pinned versions and compare.",
    "quickstart": (
        "Run the procurement example end to end on this machine, with nothing to configure."
    ),
    "requests": "Agent requests: list and show them, accept, decline, clarify, complete, review.",
    "run": "Run a runbook in this process: compile FILE, then execute its steps as a DAG.",
    "runs": "Watch and steer runs: show, events, pause, resume, cancel, intervene, migrate.",
    "schema": (
        "Write JSON Schemas for every definition kind, whole definition files, compiled documents"
        " and the bundle manifest to OUT."
    ),
    "serve": "Serve the HTTP API: deployments, objectives, runs, approvals, actions, events.",
    "simulator": "Local stand-ins for the services the examples call (loopback only).",
    "tokens": "Bearer tokens: who may call the HTTP API, with which roles, in which scopes.",
    "triggers": "Triggers: schedules and inbound events that start workflows by themselves.",
    "validate": "Check definition files (HCL or YAML) and report every problem with its location.",
    "worker": "Execute runs: claim with a lease, run turns, drain on SIGTERM/SIGINT.",
}


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    summaries=SUMMARIES,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="openseal")
def cli() -> None:
    """Compile agent, team, skill and workflow definitions into versioned graphs and run them."""


def main(argv: list[str] | None = None) -> int:
    """Console entry point: runs the CLI and turns every failure into a one-line message."""
    forget_format()
    try:
        # Without standalone mode click returns ``ctx.exit(n)``'s code instead of exiting.
        code = cli.main(args=argv, prog_name="openseal", standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except click.exceptions.NoSuchCommand as exc:
        unknown = _with_nearest(exc)
        echo_error("usage_error", unknown.format_message())
        unknown.show()
        return USAGE
    except click.ClickException as exc:
        usage = isinstance(exc, click.UsageError)
        echo_error("usage_error" if usage else "openseal_error", exc.format_message())
        exc.show()
        return 2 if usage else exc.exit_code
    except UsageError as exc:
        _report(exc.code, str(exc))
        return exit_code(exc.code) if isinstance(exc, InvalidInput) else USAGE
    except (OpenSealError, ClaimLost) as exc:  # a lost claim escaping is still one line
        _report(exc.code, str(exc))
        return exit_code(exc.code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    except OSError as exc:  # a path the command was given cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        _report("file_error", f"{where}{exc.strerror or exc.__class__.__name__}")
        return exit_code("file_error")
    except Exception as exc:  # the last line of defence: never print a traceback
        if os.environ.get("OPENSEAL_DEBUG"):
            raise
        if type(exc).__module__.startswith("sqlalchemy"):
            return _database_error(exc)
        message = f"{exc.__class__.__name__}: {exc}"
        echo_error("internal_error", message)
        click.echo(f"internal error: {message} (set OPENSEAL_DEBUG=1 for details)", err=True)
        return 1
    return 0


def _with_nearest(exc: click.exceptions.NoSuchCommand) -> click.UsageError:
    """A mistyped command (or subcommand), with the nearest one its group has."""
    from openseal.compiler import did_you_mean

    ctx = exc.ctx
    group = ctx.command if ctx is not None else None
    names = group.list_commands(ctx) if isinstance(group, click.Group) and ctx else []
    hint = did_you_mean(exc.command_name, names)
    message = f"No such command '{exc.command_name}'" + (f"; {hint}" if hint else ".")
    return click.UsageError(message, ctx=ctx)


def _report(code: str, message: str) -> None:
    """An error: the error object on stdout with ``--output json|yaml``; one line on stderr."""
    echo_error(code, message)
    click.echo(f"error: {message}", err=True)


def _database_error(exc: Exception) -> int:
    """A database error in one line, never its SQL text or parameters."""
    from openseal.runtime.store import describe_fault, transient

    if transient(exc):
        _report(
            "unavailable",
            f"the database is busy or unreachable ({describe_fault(exc)}); nothing was "
            "changed, try again",
        )
    else:
        echo_error("internal_error", describe_fault(exc))
        click.echo(
            f"internal error: {describe_fault(exc)} (set OPENSEAL_DEBUG=1 for details)", err=True
        )
    return 1


def run() -> None:
    sys.exit(main())
