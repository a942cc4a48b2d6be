"""The compiler, stage by stage: load → resolve → typecheck → build → check → emit.

Every stage is a pure function; diagnostics are collected across stages and a
project is emitted only when none of them is an error. Projects (see
:mod:`openseal.compiler.load`) are compiled independently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openseal.compiler.build import build
from openseal.compiler.checks import CHECKS
from openseal.compiler.decode import Definition
from openseal.compiler.diagnostics import Diagnostic, has_errors, sort_key
from openseal.compiler.emit import CompiledDocument, emit
from openseal.compiler.load import LoadResult, load_definitions
from openseal.compiler.resolve import resolve
from openseal.compiler.typecheck import typecheck


@dataclass
class CompileResult:
    loaded: LoadResult
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: ``kind.name`` → compiled document, across all projects
    documents: dict[str, CompiledDocument] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def compile_project(
    definitions: Sequence[Definition],
) -> tuple[dict[str, CompiledDocument], list[Diagnostic]]:
    """Compile the definitions of one project."""
    analysis, diagnostics = resolve(definitions)
    diagnostics += typecheck(analysis)
    graphs = build(analysis)
    for check in CHECKS:
        diagnostics += check(analysis, graphs)
    if has_errors(diagnostics):
        return {}, diagnostics
    return emit(analysis, graphs), diagnostics


def compile_paths(paths: Sequence[Path]) -> CompileResult:
    loaded = load_definitions(paths)
    result = CompileResult(loaded, list(loaded.diagnostics))
    by_project: dict[str, list[Definition]] = {}
    for definition in loaded.definitions:
        project = loaded.projects.get(definition.span.file, "")
        by_project.setdefault(project, []).append(definition)
    for project in sorted(by_project):
        documents, diagnostics = compile_project(by_project[project])
        result.diagnostics += diagnostics
        for key, document in documents.items():
            existing = result.documents.setdefault(key, document)
            if existing.digest != document.digest:
                result.diagnostics.append(_conflict(key, existing, document))
    result.diagnostics = sorted(set(result.diagnostics), key=sort_key)
    if not result.ok:
        result.documents = {}
    return result


def _conflict(key: str, first: CompiledDocument, second: CompiledDocument) -> Diagnostic:
    from openseal.compiler.diagnostics import Related, error

    return error(
        "OS105",
        f"`{key}` is defined differently in two projects; a bundle holds one version per name",
        second.span,
        related=[Related(first.span, "the other definition")],
    )
