"""``openseal graph``: draw a workflow or runbook as Mermaid, Graphviz DOT or SVG."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics, output_option, render
from openseal.errors import OpenSealError, UsageError

if TYPE_CHECKING:
    from openseal.compiler import CompileResult, Drawable


@dataclass(frozen=True, slots=True)
class _Found:
    kind: str
    graph: Drawable

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.graph.name}"


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot", "svg"]),
    default="mermaid",
    show_default=True,
    help="Drawing format. SVG needs Graphviz's `dot` program.",
)
@click.option(
    "--name",
    "-n",
    default=None,
    help="The workflow or runbook to draw (`NAME`, `workflow.NAME` or `runbook.NAME`); "
    "needed when PATHS define more than one.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the drawing to this file instead of standard output.",
)
@output_option("`json` or `yaml`: diagnostics, or the drawing wrapped in a document, on stdout.")
def graph(
    paths: tuple[Path, ...], fmt: str, name: str | None, out: Path | None, output: str
) -> None:
    """Draw the state graph of a workflow, or the step DAG of a runbook.

    PATHS are definition files or directories. Approval states (human
    checkpoints) are highlighted. The definitions are checked as `openseal
    validate` checks them; with any error they are reported, not drawn
    (exit 1). Examples:

    \b
        openseal graph definitions/procurement/hcl
        openseal graph definitions/ --name release_note --format dot
        openseal graph definitions/procurement/yaml --format svg --out procure.svg
    """
    from openseal.compiler import Stage, compile_paths, has_errors

    result = compile_paths(list(paths), through=Stage.CHECK, analysis=True)
    if has_errors(result.diagnostics):
        loaded = result.loaded
        fmt_diagnostics = "human" if output == "text" else output
        emit_diagnostics(
            result.diagnostics, loaded.sources, len(loaded.files), fmt_diagnostics, __version__
        )
        sys.exit(1)
    found = _graphs(result)
    chosen = _choose(found, name)
    drawing = _draw(chosen.graph, fmt)
    if output != "text":
        document = {"kind": chosen.kind, "name": chosen.graph.name, "format": fmt}
        document["drawing"] = drawing.decode("utf-8")
        drawing = render(document, output, sort_keys=False).encode("utf-8")
    _write(drawing, out)


def _graphs(result: CompileResult) -> list[_Found]:
    """Every workflow and runbook graph, project by project."""
    found: list[_Found] = []
    for name in sorted(result.projects):
        graphs = result.projects[name].graphs
        if graphs is not None:
            found += [_Found("workflow", g) for g in graphs.workflows.values()]
            found += [_Found("runbook", g) for g in graphs.runbooks.values()]
    return found


def _choose(found: list[_Found], name: str | None) -> _Found:
    """The one graph to draw. The same name in two projects (e.g. HCL and YAML twins) is
    fine when both draw the same; otherwise the user must narrow the paths."""
    from openseal.compiler import to_dot

    matches = [f for f in found if name is None or name in (f.graph.name, f.key)]
    distinct: dict[tuple[str, str], _Found] = {}
    for match in matches:
        distinct.setdefault((match.key, to_dot(match.graph)), match)
    keys = sorted({f.key for f in distinct.values()})
    if not keys:
        available = ", ".join(sorted({f.key for f in found})) or "none"
        wanted = f"named `{name}`" if name else "at all"
        raise UsageError(f"no workflow or runbook {wanted} in the given paths (found: {available})")
    if len(keys) > 1:
        raise UsageError(
            f"the given paths define {len(keys)} graphs ({', '.join(keys)}); choose one with --name"
        )
    if len(distinct) > 1:
        raise UsageError(
            f"`{keys[0]}` is defined differently in more than one project; "
            "pass the path of the one to draw"
        )
    return next(iter(distinct.values()))


def _draw(graph: Drawable, fmt: str) -> bytes:
    from openseal.compiler import to_dot, to_mermaid, to_svg

    if fmt == "svg":
        return to_svg(graph)
    text = to_dot(graph) if fmt == "dot" else to_mermaid(graph)
    return text.encode("utf-8")


def _write(drawing: bytes, out: Path | None) -> None:
    if out is None:
        click.echo(drawing, nl=False)  # bytes go to the binary stream untouched
        return
    try:
        out.write_bytes(drawing)
    except OSError as exc:
        raise OpenSealError(f"cannot write {out}: {exc.strerror or exc}") from exc
