"""The front half of the pipeline: find files, load them, fold and decode them.

``load_definitions(paths)`` is what ``openseal validate`` runs and what the
compiler's later stages start from. It never raises for bad input: everything
wrong is a diagnostic in the result.

Names are unique within a *project*. A directory holding a file named
``openseal.project`` is the root of its own project (so one repository can hold
several independent sets of definitions); other files belong to the path they
were found under.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openseal.compiler.cache import cached_load
from openseal.compiler.decode import Definition, decode
from openseal.compiler.diagnostics import Diagnostic, Related, error, sort_key
from openseal.compiler.load_hcl import load_hcl_file
from openseal.compiler.load_yaml import load_yaml_file
from openseal.compiler.plain import fold
from openseal.compiler.source import DEFINITION_SUFFIXES, HCL_SUFFIXES, read_source
from openseal.compiler.spans import Span
from openseal.compiler.tree import Document


@dataclass
class LoadResult:
    definitions: list[Definition] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: file name → text, for rendering source lines under diagnostics
    sources: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: file name → the project it belongs to
    projects: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def discover(paths: Iterable[Path]) -> tuple[dict[Path, Path], list[Diagnostic]]:
    """Definition files under ``paths`` (directories searched recursively) → their project."""
    found: dict[Path, Path] = {}
    diagnostics: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            matches = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in DEFINITION_SUFFIXES and p.is_file() and not _hidden(p, path)
            )
            if not matches:
                diagnostics.append(
                    error(
                        "OS009",
                        f"no definition files (.hcl, .yaml, .yml) in {path}",
                        Span.whole_file(str(path)),
                    )
                )
            found.update((match, project_of(match, path)) for match in matches)
        elif path.suffix in DEFINITION_SUFFIXES or not path.exists():
            found[path] = project_of(path, path.parent)
        else:
            diagnostics.append(
                error(
                    "OS010",
                    f"{path} is not a definition file; expected .hcl, .yaml or .yml",
                    Span.whole_file(str(path)),
                )
            )
    return found, diagnostics


PROJECT_MARKER = "openseal.project"


def project_of(file: Path, base: Path) -> Path:
    """The nearest directory from ``file`` up to ``base`` with a project marker, else ``base``."""
    for parent in file.parents:
        if (parent / PROJECT_MARKER).is_file():
            return parent
        if parent == base:
            break
    return base


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def load_document(path: Path) -> tuple[Document | None, list[Diagnostic]]:
    syntax = "hcl" if path.suffix in HCL_SUFFIXES else "yaml"
    loader = load_hcl_file if syntax == "hcl" else load_yaml_file
    return cached_load(path, syntax, loader)  # an unchanged file is not parsed again


def load_definitions(paths: Sequence[Path]) -> LoadResult:
    files, diagnostics = discover(paths)
    result = LoadResult(diagnostics=diagnostics)
    for path, project in files.items():
        result.files.append(str(path))
        result.projects[str(path)] = str(project)
        document, found = load_document(path)
        result.diagnostics.extend(found)
        if document is None:
            # Keep the text (when it is text) so diagnostics can show the source line.
            source, _ = read_source(path)
            if source is not None:
                result.sources[source.file] = source.text
            continue
        result.sources[document.file] = document.text
        folded, found = fold(document.body)
        result.diagnostics.extend(found)
        definitions, found = decode(folded, document.file)
        result.diagnostics.extend(found)
        result.definitions.extend(definitions)
    result.diagnostics.extend(_duplicate_names(result.definitions, result.projects))
    result.diagnostics = sorted(set(result.diagnostics), key=sort_key)
    return result


def _duplicate_names(
    definitions: Iterable[Definition], projects: dict[str, str]
) -> list[Diagnostic]:
    seen: dict[tuple[str, str], Definition] = {}
    out: list[Diagnostic] = []
    for definition in definitions:
        project = projects.get(definition.span.file, "")
        first = seen.setdefault((project, definition.key), definition)
        if first is not definition:
            out.append(
                error(
                    "OS105",
                    f"{definition.kind} `{definition.name}` is defined more than once",
                    definition.name_span,
                    related=[Related(first.name_span, "first defined here")],
                )
            )
    return out
