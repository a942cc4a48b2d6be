"""``openseal validate``: load and check definition files, print diagnostics."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics
from openseal.compiler.load import load_definitions


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["human", "json", "sarif", "github"]),
    default="human",
    show_default=True,
    help="How to print diagnostics.",
)
@click.option(
    "--output",
    "output",
    type=click.Choice(["human", "json"]),
    default=None,
    help="Alias: `--output json` is `--format json`.",
)
def validate(paths: tuple[Path, ...], fmt: str, output: str | None) -> None:
    """Check definition files (HCL or YAML) and report every problem with its location.

    PATHS are files or directories (searched recursively). Exits 0 when clean,
    1 when any error is found, 2 on usage errors.
    """
    if output == "json":
        fmt = "json"
    result = load_definitions(list(paths))
    emit_diagnostics(result.diagnostics, result.sources, len(result.files), fmt, __version__)
    if not result.ok:
        sys.exit(1)
