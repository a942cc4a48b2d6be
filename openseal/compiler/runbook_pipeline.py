"""From a runbook file on the command line to its executable plan, for ``openseal run``.

The result is a :class:`~openseal.compiler.analysis.runbook_plan.Plan`. A node/edge
``workflow`` file (the peer system's form) is loaded and lowered by
:mod:`~openseal.compiler.analysis.node_edge_plan`. Anything else goes through the compiler's
stages up to and including the checks (as ``openseal validate`` runs them, see
:mod:`openseal.compiler.driver`) over the file's whole project (the nearest
directory holding ``openseal.project``, so skills defined beside the runbook
resolve), and then the chosen runbook is planned.
Nothing runs here; a plan comes back only when there is no error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openseal.compiler.analysis.node_edge_plan import is_node_form, plan_nodes
from openseal.compiler.analysis.runbook_plan import Plan, plan_runbook
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.diagnostics import Diagnostic, did_you_mean, has_errors, sort_key
from openseal.compiler.driver import Stage
from openseal.compiler.load import PROJECT_MARKER
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax.file_text import HCL_SUFFIXES
from openseal.compiler.syntax.load_hcl import load_hcl_file
from openseal.errors import UsageError


@dataclass
class Prepared:
    plan: Plan | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: file name → text, to show source lines under diagnostics
    sources: dict[str, str] = field(default_factory=dict)
    file_count: int = 1

    @property
    def ok(self) -> bool:
        return self.plan is not None and not has_errors(self.diagnostics)


def prepare(path: Path, name: str | None = None) -> Prepared:
    """Compile and plan the runbook in ``path``; ``name`` picks one when there are several.

    Raises :class:`~openseal.errors.UsageError` when ``name`` is needed or unknown.
    """
    if path.is_file() and path.suffix in HCL_SUFFIXES:
        document, diagnostics = load_hcl_file(path)
        if document is not None and is_node_form(document):
            plan, more = plan_nodes(document)
            found = _dedupe([*diagnostics, *more])
            return Prepared(
                plan if not has_errors(found) else None, found, {document.file: document.text}
            )
    return _prepare_definitions(path, name)


def project_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a project marker."""
    start = path if path.is_dir() else path.parent
    for directory in (start.resolve(), *start.resolve().parents):
        if (directory / PROJECT_MARKER).is_file():
            return directory
    return None


def _prepare_definitions(path: Path, name: str | None) -> Prepared:
    root = project_root(path)
    # Compile the whole project so skills beside the runbook resolve (names stay relative).
    target = _relative(root) if root is not None and path.is_file() else path
    result = compile_paths([target], through=Stage.CHECK, analysis=True)
    loaded = result.loaded
    prepared = Prepared(None, list(result.diagnostics), loaded.sources, len(loaded.files))
    files = {f for f in loaded.files if _same_file(Path(f), path)} if path.is_file() else None
    project = loaded.projects.get(min(files)) if files else None
    compiled = [result.projects[project]] if project in result.projects else []
    if project is None:
        compiled = [result.projects[p] for p in sorted(result.projects)]
    definitions = [d for one in compiled for d in one.definitions]
    try:
        runbook = _choose(definitions, name, files)
    except UsageError:
        if has_errors(prepared.diagnostics):
            return prepared  # the file did not load; its diagnostics say why
        raise
    analysis = next(
        one.analysis for one in compiled if one.analysis is not None and runbook in one.definitions
    )
    plan, found = plan_runbook(runbook, analysis)
    prepared.diagnostics = _dedupe([*prepared.diagnostics, *found])
    prepared.plan = plan if not has_errors(prepared.diagnostics) else None
    return prepared


def _relative(root: Path) -> Path:
    try:
        return root.relative_to(Path.cwd().resolve())
    except ValueError:
        return root


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _choose(
    definitions: Sequence[Definition], name: str | None, files: set[str] | None
) -> Definition:
    runbooks = sorted((d for d in definitions if d.kind == "runbook"), key=lambda d: d.name)
    if name is not None:
        for definition in runbooks:
            if definition.name == name:
                return definition
        listing = ", ".join(d.name for d in runbooks) or "none"
        hint = did_you_mean(name, [d.name for d in runbooks])
        raise UsageError(
            f"no runbook `{name}` here (runbooks: {listing})" + (f"; {hint}" if hint else "")
        )
    local = [d for d in runbooks if files is None or d.span.file in files]
    if len(local) == 1:
        return local[0]
    if not local:
        raise UsageError(
            "no runbook is defined there; `openseal run` runs `runbook` definitions "
            "and node/edge `workflow` files"
        )
    listing = ", ".join(d.name for d in local)
    raise UsageError(f"several runbooks are defined there ({listing}); choose one with --name")


def _dedupe(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per code and place, the compiler's wording first: the executor's own
    guards (listed last) repeat some compiler checks."""
    seen: set[tuple[str, str, int, int]] = set()
    out: list[Diagnostic] = []
    for d in diagnostics:
        key = (d.code, d.span.file, d.span.line, d.span.column)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return sorted(out, key=sort_key)
