"""``openseal schema``: write the JSON Schemas generated from the models."""

from __future__ import annotations

from pathlib import Path

import click

from openseal.cli.output import echo_data, output_option


@click.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("schemas"),
    show_default=True,
    help="Directory to write into.",
)
@output_option()
def schema(out_dir: Path, output: str) -> None:
    """Write JSON Schemas for every definition kind, whole definition files, compiled
    documents and the bundle manifest to OUT.

    \b
    Examples:
        openseal schema --out schemas/
    """
    from openseal.compiler import write_schemas

    written = [str(path) for path in write_schemas(out_dir)]
    echo_data({"written": written}, output, lambda: click.echo("\n".join(written)))
