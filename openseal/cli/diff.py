"""``openseal diff OLD NEW``: semantic changes between two compiled versions, risk first."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openseal import __version__
from openseal.cli.output import emit_diagnostics, output_option, render
from openseal.errors import OpenSealError, UsageError

if TYPE_CHECKING:
    from openseal.compiler import Change, DiffReport

Documents = dict[str, dict[str, Any]]


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--path",
    "defs_path",
    type=click.Path(path_type=Path),
    default=None,
    help="With git revisions: the definitions directory to compile at each revision.",
)
@output_option("How to print the changes.")
@click.option(
    "--exit-code",
    "exit_code",
    is_flag=True,
    help="Exit 1 when any change widens authority (for CI).",
)
def diff_command(old: str, new: str, defs_path: Path | None, output: str, exit_code: bool) -> None:
    """Show the semantic changes from OLD to NEW and flag the ones that widen authority.

    OLD and NEW are each a bundle directory (from `openseal compile`), a
    definitions directory or file (compiled on the fly), or a git revision —
    then --path names the definitions directory to compile at that revision,
    e.g. `openseal diff main HEAD --path definitions/procurement/hcl`.

    Exit 0 after printing the changes; with --exit-code, 1 when any change is
    risk-widening. 1 also when a side does not compile (with `--output json`, an error
    object on stdout), 2 on usage errors.

    \b
    Examples:
        openseal diff build-old/ build/
        openseal diff main HEAD --path definitions/procurement/hcl --exit-code
    """
    from openseal.compiler import diff_documents

    with ExitStack() as stack:
        before = stack.enter_context(_side(old, defs_path))
        after = stack.enter_context(_side(new, defs_path))
        report = diff_documents(before, after)
    if output != "text":
        click.echo(render(report.to_dict(), output), nl=False)
    else:
        from openseal.compiler import use_color

        color = use_color(sys.stdout)
        # click strips ANSI codes unless told the colour was chosen on purpose.
        click.echo(render_report(report, color=color), nl=False, color=color)
    if exit_code and report.risk_widening:
        sys.exit(1)


# --------------------------------------------------------------------------- sides


@contextmanager
def _side(spec: str, defs_path: Path | None) -> Iterator[Documents]:
    """The compiled documents that ``spec`` names (bundle, definitions path or git revision)."""
    from openseal.compiler import is_bundle, read_bundle

    path = Path(spec)
    if path.is_dir() and is_bundle(path):
        yield read_bundle(path).documents
    elif path.exists():
        yield _compile(path)
    elif _is_revision(spec):
        if defs_path is None:
            raise UsageError(f"`{spec}` is a git revision: name the definitions with --path DIR")
        with tempfile.TemporaryDirectory(prefix="openseal-diff-") as tmp:
            root = _extract_revision(spec, Path(tmp))
            yield _compile(root / _repo_relative(defs_path), label=f"{spec}:{defs_path}")
    else:
        raise UsageError(
            f"`{spec}` is neither a bundle directory, a definitions path nor a git revision"
        )


def _compile(path: Path, label: str | None = None) -> Documents:
    from openseal.compiler import Stage, compile_paths

    if not path.exists():
        raise UsageError(f"{label or path}: no such file or directory")
    result = compile_paths([path], through=Stage.EMIT)
    if not result.ok:
        loaded = result.loaded
        emit_diagnostics(
            result.diagnostics, loaded.sources, len(loaded.files), "human", __version__
        )
        raise OpenSealError(f"{label or path} does not compile; nothing to compare")
    return {key: doc.document for key, doc in result.documents.items()}


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], capture_output=True, check=False)
    except OSError as exc:
        raise OpenSealError(f"cannot run git: {exc.strerror or exc}") from exc


def _is_revision(spec: str) -> bool:
    if spec.startswith("-"):
        return False
    return _git("rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}").returncode == 0


def _repo_relative(path: Path) -> Path:
    """``path`` (relative to the working directory) relative to the repository root."""
    prefix = _git("rev-parse", "--show-prefix").stdout.decode().strip()
    relative = Path(prefix) / path
    if path.is_absolute() or ".." in relative.parts:
        raise UsageError(f"--path {path} must be inside the repository")
    return relative


def _extract_revision(revision: str, into: Path) -> Path:
    """Unpack the repository tree at ``revision`` into ``into``.

    The whole tree is extracted, not just --path, because definitions may read
    files next to them (``file("../prompts/x.md")``).
    """
    archived = _git("archive", "--format=tar", revision)
    if archived.returncode != 0:
        message = archived.stderr.decode(errors="replace").strip()
        raise OpenSealError(f"git archive {revision} failed: {message}")
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        tar.extractall(into, filter="data")
    # The tree's root stays the project root, as in the checkout: `file("../prompts/x.md")`
    # reads inside the repository, and the repository is found by its `.git`.
    (into / ".git").mkdir(exist_ok=True)
    return into


# --------------------------------------------------------------------------- rendering


def render_report(report: DiffReport, *, color: bool = False) -> str:
    """Human text: one block per changed definition, widening changes marked with ``!``."""

    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    lines: list[str] = []
    by_definition: dict[str, list[Change]] = {}
    for change in report.changes:
        by_definition.setdefault(change.definition, []).append(change)
    for key in sorted(by_definition):
        status = (
            "added" if key in report.added else "removed" if key in report.removed else "changed"
        )
        colour = {"added": "32", "removed": "31", "changed": "33"}[status]
        lines.append(paint(f"{key}  ({status})", f"1;{colour}"))
        for change in by_definition[key]:
            if change.kind in ("definition_added", "definition_removed"):
                continue
            mark = paint("!", "1;31") if change.widening else "~"
            suffix = paint("  [risk-widening]", "31") if change.widening else ""
            lines.append(f"  {mark} {change.message}{suffix}")
    if not report.changes:
        lines.append("no semantic changes")
    widening = sum(c.widening for c in report.changes)
    summary = (
        f"risk widening: yes ({widening} change{'s widen' if widening != 1 else ' widens'} "
        "authority)"
        if widening
        else "risk widening: no"
    )
    counts = (
        f"{len(report.added)} added, {len(report.removed)} removed, "
        f"{len(report.changed)} changed, {report.unchanged} unchanged"
    )
    lines.append("")
    lines.append(f"{counts}; " + (paint(summary, "1;31") if widening else summary))
    return "\n".join(lines) + "\n"
