"""``openseal schema``: write the JSON Schemas generated from the models."""

from __future__ import annotations

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
def schema(out_dir: Path) -> None:
    """Write JSON Schemas for every definition kind (and whole definition files) to OUT."""
    for path in write_schemas(out_dir):
        click.echo(str(path))
