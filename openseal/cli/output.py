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


def emit_diagnostics(
    diagnostics: Sequence[Diagnostic],
    sources: Mapping[str, str],
    file_count: int,
    fmt: str,
    version: str,
) -> None:
    if fmt == "json":
        click.echo(render_json(diagnostics), nl=False)
    elif fmt == "sarif":
        click.echo(render_sarif(diagnostics, tool_version=version), nl=False)
    elif fmt == "github":
        click.echo(render_github(diagnostics), nl=False)
        click.echo(summary_line(diagnostics, file_count), err=True)
    else:
        color = use_color(sys.stderr)
        text = render_human(diagnostics, sources, color=color, file_count=file_count)
        click.echo(text, err=True, nl=False)
