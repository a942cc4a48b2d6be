"""Shared rendering for commands that report diagnostics."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import click

from openseal.compiler.diagnostics import Diagnostic
from openseal.compiler.render import (
    render_github,
    render_human,
    render_json,
    render_sarif,
    summary_line,
    use_color,
)

#: How many diagnostics the human and GitHub formats show unless told otherwise;
#: past this, a thousand errors are one mistake repeated, not a thousand things to read.
DEFAULT_LIMIT = 100

max_diagnostics_option = click.option(
    "--max-diagnostics",
    "limit",
    type=click.IntRange(0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Show at most this many diagnostics in the human and github formats (errors "
    "first), then how many more there are; 0 shows all. json and sarif always hold all.",
)


def emit_diagnostics(
    diagnostics: Sequence[Diagnostic],
    sources: Mapping[str, str],
    file_count: int,
    fmt: str,
    version: str,
    limit: int = DEFAULT_LIMIT,
) -> None:
    """Print ``diagnostics`` in ``fmt``: json, sarif and github on stdout, human on stderr.

    json and sarif are for machines and always hold every diagnostic; human and
    github show at most ``limit`` (0: all) and say how many more there are.
    """
    if fmt == "json":
        click.echo(render_json(diagnostics), nl=False)
    elif fmt == "sarif":
        click.echo(render_sarif(diagnostics, tool_version=version), nl=False)
    elif fmt == "github":
        click.echo(render_github(diagnostics, limit=limit), nl=False)
        click.echo(summary_line(diagnostics, file_count), err=True)
    else:
        color = use_color(sys.stderr)
        text = render_human(diagnostics, sources, color=color, file_count=file_count, limit=limit)
        click.echo(text, err=True, nl=False)
