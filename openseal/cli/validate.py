"""``openseal validate``: every check ``compile`` makes, without writing anything."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics, max_diagnostics_option, output_option


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
@output_option("`json` or `yaml`: the diagnostics as one document on stdout (as --format json).")
@click.option(
    "--syntax-only",
    is_flag=True,
    help="Only read and decode the files (syntax, keys, values); skip references, "
    "types, graph and policy checks.",
)
@max_diagnostics_option
def validate(paths: tuple[Path, ...], fmt: str, output: str, syntax_only: bool, limit: int) -> None:
    """Check definition files (HCL or YAML) and report every problem with its location.

    Runs every check `openseal compile` runs and writes nothing: it exits 1
    exactly when `openseal compile --check` would. PATHS are files or
    directories (searched recursively). Exits 0 when clean, 1 when any error
    is found, 2 on usage errors.

    \b
    Examples:
        openseal validate definitions/
        openseal validate definitions/procurement/hcl --format github
        openseal validate definitions/ --output json
    """
    from openseal.compiler import Stage, compile_paths

    if output != "text":
        fmt = output
    # Through emit: a name defined differently in two projects shows only in the
    # documents' digests. Nothing is written.
    result = compile_paths(list(paths), through=Stage.LOAD if syntax_only else Stage.EMIT)
    loaded = result.loaded
    emit_diagnostics(result.diagnostics, loaded.sources, len(loaded.files), fmt, __version__, limit)
    if not result.ok:
        sys.exit(1)
