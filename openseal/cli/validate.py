"""``openseal validate``: every check ``compile`` makes, without writing anything."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

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
@click.option(
    "--against",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A bundle (from `openseal compile --out`) holding earlier versions: check each "
    "workflow's `migrate` blocks against the version they name (OS6xx).",
)
@max_diagnostics_option
def validate(
    paths: tuple[Path, ...],
    fmt: str,
    output: str,
    syntax_only: bool,
    against: Path | None,
    limit: int,
) -> None:
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
        openseal validate definitions/procurement/hcl --against build/
    """
    from openseal.compiler import Stage, compile_paths

    if output != "text":
        fmt = output
    # Through emit: a name defined differently in two projects shows only in the
    # documents' digests. Nothing is written.
    through = Stage.LOAD if syntax_only else Stage.EMIT
    result = compile_paths(list(paths), through=through, earlier=earlier_versions(against))
    loaded = result.loaded
    emit_diagnostics(result.diagnostics, loaded.sources, len(loaded.files), fmt, __version__, limit)
    if not result.ok:
        sys.exit(1)


def earlier_versions(bundle: Path | None) -> Callable[[str], Mapping[str, Any]] | None:
    """The workflows of ``bundle`` by name, then digest: the versions ``migrate`` may name."""
    if bundle is None:
        return None
    from openseal.compiler import is_bundle, read_bundle
    from openseal.errors import UsageError

    if not is_bundle(bundle):
        raise UsageError(
            f"--against {bundle}: not a bundle (write one with `openseal compile --out`)"
        )
    by_name: dict[str, dict[str, Any]] = {}
    for entry in read_bundle(bundle).entries.values():
        if entry.kind == "workflow":
            by_name.setdefault(entry.name, {})[entry.digest] = entry.document
    return lambda name: by_name.get(name, {})
