"""``openseal compile``: compile definitions into a bundle of versioned documents."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics, max_diagnostics_option, output_option, render
from openseal.compiler import render_json


@click.command("compile")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build"),
    show_default=True,
    help="Bundle directory to write.",
)
@click.option("--check", is_flag=True, help="Compile and report, but write nothing.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["human", "json", "sarif", "github"]),
    default="human",
    show_default=True,
    help="How to print diagnostics.",
)
@output_option("`json` or `yaml`: one document (diagnostics, digests, bundle) on stdout.")
@click.option(
    "--against",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="A bundle (from an earlier `openseal compile --out`) holding earlier versions: "
    "check each workflow's `migrate` blocks against the version they name (OS6xx).",
)
@max_diagnostics_option
def compile_command(
    paths: tuple[Path, ...],
    out_dir: Path,
    check: bool,
    fmt: str,
    output: str,
    against: Path | None,
    limit: int,
) -> None:
    """Compile definition files (HCL or YAML) into a bundle of versioned JSON documents.

    PATHS are files or directories (searched recursively). Each definition
    becomes OUT/<kind>/<name>.json, named in OUT/manifest.json by the sha256
    digest of its canonical JSON. The same inputs always give the same bytes.
    With --check nothing is written. With --against, `migrate` blocks are
    checked against the earlier versions in that bundle, located at the block
    as written. Exits 0 when compiled, 1 on any error diagnostic, 2 on usage
    errors.

    \b
    Examples:
        openseal compile definitions/procurement/hcl --out build/
        openseal compile definitions/ --check --format sarif > openseal.sarif
        openseal compile definitions/procurement/hcl --against build/ --out build-next/
    """
    from openseal.cli.validate import earlier_versions
    from openseal.compiler import compile_paths, write_bundle

    # the earlier versions are read before anything is written (--out may be the same bundle)
    result = compile_paths(list(paths), earlier=earlier_versions(against))
    loaded = result.loaded
    written: Path | None = None
    if result.ok and not check:
        write_bundle(result, out_dir)
        written = out_dir
    if output != "text":
        click.echo(render(_json_report(result, written), output), nl=False)
    else:
        emit_diagnostics(
            result.diagnostics, loaded.sources, len(loaded.files), fmt, __version__, limit
        )
        if result.ok:
            _print_summary(result.documents, written, to_stderr=fmt != "human")
    if not result.ok:
        sys.exit(1)


def _json_report(result: Any, written: Path | None) -> dict[str, Any]:
    diagnostics = json.loads(render_json(result.diagnostics))
    return {
        "ok": result.ok,
        "diagnostics": diagnostics["diagnostics"],
        "summary": diagnostics["summary"],
        "definitions": {
            key: {"kind": doc.kind, "name": doc.name, "digest": doc.digest}
            for key, doc in sorted(result.documents.items())
        },
        "bundle": str(written) if written is not None else None,
    }


def _print_summary(documents: dict[str, Any], written: Path | None, *, to_stderr: bool) -> None:
    width = max((len(key) for key in documents), default=0)
    for key in sorted(documents):
        click.echo(f"{key.ljust(width)}  {documents[key].digest}", err=to_stderr)
    count = f"{len(documents)} definition{'s' if len(documents) != 1 else ''}"
    where = (
        f"; bundle written to {written}" if written is not None else " (--check: nothing written)"
    )
    click.echo(f"compiled {count}{where}", err=to_stderr)
