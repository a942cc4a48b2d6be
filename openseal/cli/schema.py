"""``openseal schema``: write the JSON Schemas generated from the models."""

from __future__ import annotations

import json
from pathlib import Path

import click

from openseal.compiler.schemas import write_schemas


@click.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("schemas"),
    show_default=True,
    help="Directory to write into.",
)
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def schema(out_dir: Path, output: str) -> None:
    """Write JSON Schemas for every definition kind, whole definition files, compiled
    documents and the bundle manifest to OUT."""
    written = [str(path) for path in write_schemas(out_dir)]
    if output == "json":
        click.echo(json.dumps({"written": written}, indent=2))
    else:
        for path in written:
            click.echo(path)
