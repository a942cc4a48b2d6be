"""``openseal author PROMPT``: a model drafts definitions, the compiler checks them, the model
repairs them; the result is written for git (``--into``) or filed as a change proposal
(``--propose``) — never activated. See ``docs/authoring.md``.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from openseal import __version__
from openseal.cli.governance import actor_option
from openseal.cli.output import echo_data, echo_error
from openseal.cli.runtime import context_option, store_options
from openseal.errors import UsageError


@click.command("author")
@store_options
@actor_option
@click.argument("prompt")
@click.option(
    "--into", type=click.Path(path_type=Path, file_okay=False), default=None,
    help="Write the draft's files into this definitions directory (the draft joins the "
    "definitions already there). An existing file is never replaced without --force.",
)  # fmt: skip
@click.option(
    "--definitions", type=click.Path(path_type=Path, file_okay=False), default=None,
    help="The definitions the draft joins and the model profile is defined in "
    "(default: --into).",
)  # fmt: skip
@click.option(
    "--syntax", type=click.Choice(["hcl", "yaml"]), default="hcl", show_default=True,
    help="The syntax the draft is written in.",
)  # fmt: skip
@click.option(
    "--model", "profile", default=None, envvar="OPENSEAL_AUTHORING_MODEL",
    help="The model profile to author with (a `model` definition among the definitions; "
    "env OPENSEAL_AUTHORING_MODEL).",
)  # fmt: skip
@click.option(
    "--propose", is_flag=True,
    help="File the draft as a change proposal (reviewed, decided and activated as any change).",
)  # fmt: skip
@click.option(
    "--max-repairs", type=click.IntRange(0, 10), default=2, show_default=True,
    help="How many times the compiler's diagnostics go back to the model for a repair.",
)  # fmt: skip
@click.option(
    "--token-budget", type=click.IntRange(1), default=200_000, show_default=True,
    help="Tokens (sent and received, all calls) the session may use.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="With --into: replace existing files.")
@context_option(
    "Runtime context file that resolves the profile's credential (default .openseal/context.yaml)."
)
def author_command(
    home: Path,
    output: str,
    actor: str,
    prompt: str,
    into: Path | None,
    definitions: Path | None,
    syntax: str,
    profile: str | None,
    propose: bool,
    max_repairs: int,
    token_budget: int,
    force: bool,
    context_path: Path | None,
) -> None:
    """Draft definitions from PROMPT with a model; the compiler checks every draft.

    The compiler's diagnostics go back to the model for up to --max-repairs repair rounds.
    A draft that still does not compile is shown with its diagnostics and nothing is written
    (exit 1). Changes that widen authority (a new grant, a higher risk ceiling, a removed
    approval, a higher budget) are listed first, exactly as `openseal diff` flags them.
    Needs a complete model profile: base URL, model and a credential reference.

    \b
    Examples:
        openseal author "add an auditor agent" --into definitions/procurement/hcl --model authoring
        openseal author "let the researcher check budgets" --model authoring --propose \\
            --definitions definitions/procurement/hcl
    """
    from openseal.authoring import AuthoringRequest, AuthoringSetup
    from openseal.cli.runtime import opened
    from openseal.skills.credentials import RuntimeContext

    if force and into is None:
        raise UsageError("--force replaces files written with --into; give --into DIR")
    if into is not None and definitions is not None and into.resolve() != definitions.resolve():
        raise UsageError(
            "--into and --definitions name different directories; a draft is written where "
            "it was compiled, so give --into alone"
        )
    base = definitions or into
    setup = AuthoringSetup(base, profile, RuntimeContext.load(context_path))
    request = AuthoringRequest(
        prompt, base, syntax=syntax, max_repairs=max_repairs, overwrite=force,
        token_budget=token_budget,
    )  # fmt: skip
    with ExitStack() as stack:
        # Filing needs the store; its active governance is the policy the draft is written for.
        store = stack.enter_context(opened(home, create=True)) if propose else None
        result = _draft(setup, request, store, output)
        written = _write(result, into, force)
        filed = None if store is None else _propose(store, result, actor, prompt)
    if output != "text":
        echo_data(authored_json(result, written, filed), output)
        return
    _show(result, written, shown=into is None and not propose)
    if filed is not None:
        from openseal.cli.deploy import print_filed

        print_filed(filed)


def authored_json(result: Any, written: list[Path], filed: Any) -> dict[str, Any]:
    """The API's answer (``draft``, ``proposal``, ``created``, ``unchanged``, ``note``) with
    the files ``--into`` ``written``: one shape whether written or proposed, here or there."""
    from openseal.authoring import outcome

    return {**outcome(result, filed), "written": [str(p) for p in written]}


def _draft(setup: Any, request: Any, store: Any, output: str) -> Any:
    """The draft, or exit 1 with what is wrong with it (nothing written, nothing filed)."""
    from openseal.authoring import active_governance, draft
    from openseal.authoring.service import DefinitionsDoNotCompile

    if store is not None:
        request = replace(request, active_governance=active_governance(store))
    try:
        result = draft(setup, request, _progress if sys.stderr.isatty() else None)
    except DefinitionsDoNotCompile as exc:
        _broken(exc.compiled)
        raise
    if not result.ok:
        _failed(result, output)
        raise click.exceptions.Exit(1)
    return result


def _write(result: Any, into: Path | None, force: bool) -> list[Path]:
    from openseal.authoring import write

    return [] if into is None else write(result, into, overwrite=force)


def _propose(store: Any, result: Any, actor: str, prompt: str) -> Any:
    from openseal.authoring import propose

    return propose(store, result, actor, prompt)


def _show(result: Any, written: list[Path], *, shown: bool) -> None:
    """Widening first, then the files, the semantic diff, and what was written."""
    from openseal.cli.diff import render_report
    from openseal.compiler import use_color

    color = use_color(sys.stdout)
    widening = result.widening
    if widening:
        widen = "widens" if len(widening) == 1 else "widen"
        click.echo(
            _paint(f"risk widening: {_count(len(widening), 'change')} {widen} authority", color)
        )
        for change in widening:
            click.echo(f"  ! {change.message}")
        click.echo("")
    click.echo(
        f"draft compiled in {_count(len(result.rounds), 'round')} "
        f"({_count(len(result.calls), 'model call')}, {result.tokens} tokens, "
        f"model profile {result.profile})"
    )
    for file in result.files:
        click.echo(f"  {file.path}")
    if shown:
        for file in result.files:
            click.echo(f"\n--- {file.path} ({file.syntax})")
            click.echo(file.content.rstrip("\n"))
    click.echo("")
    click.echo(render_report(result.diff, color=color), nl=False, color=color)
    for path in written:
        click.echo(f"wrote {path}")


def _broken(compiled: Any) -> None:
    """Diagnostics of definitions that do not compile, for people (on stderr)."""
    from openseal.cli.output import emit_diagnostics

    emit_diagnostics(
        compiled.diagnostics, compiled.sources, compiled.file_count, "human", __version__
    )


def _failed(result: Any, output: str) -> None:
    """The last draft with its diagnostics (or its problems), and that nothing was written."""
    if output != "text":
        # the error object the API answers (422 draft_failed), the draft in its details
        echo_error("draft_failed", f"{result.reason}; nothing written", result.to_dict())
    else:
        if result.compiled.diagnostics:
            _broken(result.compiled)
        for problem in result.problems:
            click.echo(f"problem: {problem}", err=True)
    click.echo(f"error: {result.reason}; nothing written", err=True)


def _progress(line: str) -> None:
    click.echo(line, err=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _paint(text: str, color: bool) -> str:
    return f"\x1b[1;31m{text}\x1b[0m" if color else text


__all__ = ["author_command"]
