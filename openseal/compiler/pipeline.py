"""Compile definition files: find them, load them, and run each project down the stage list.

The stages and how far each command runs are :mod:`openseal.compiler.driver`'s;
this module reads the files, groups them into projects and caches each
project's result. Diagnostics are collected across stages and a project is
emitted only when none of them is an error. Projects (see
:mod:`openseal.compiler.load`) are compiled independently, and each project's
result is cached (:mod:`openseal.compiler.cache`): a project whose files, and
files read through ``file()``, are all unchanged costs one read and hash per
file and skips every stage.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from openseal.compiler import cache
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.diagnostics import Diagnostic, Related, error, has_errors, sort_key
from openseal.compiler.driver import ProjectResult, Stage, compile_definitions
from openseal.compiler.load import (
    LoadedFile,
    LoadResult,
    SourceFile,
    add_file,
    case_collision,
    discover,
    duplicate_names,
    load_file,
    project_of,
    read_file,
)
from openseal.compiler.output import bundle
from openseal.compiler.output.document import CompiledDocument
from openseal.compiler.syntax.gc_pause import gc_paused
from openseal.compiler.syntax.spans import Span


@dataclass
class CompileResult:
    loaded: LoadResult
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: ``kind.name`` → compiled document, across all projects
    documents: dict[str, CompiledDocument] = field(default_factory=dict)
    #: project → its analysis and graphs; only with ``compile_paths(..., analysis=True)``
    projects: dict[str, ProjectResult] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def compile_paths(
    paths: Sequence[Path],
    *,
    through: Stage = Stage.EMIT,
    analysis: bool = False,
    overlay: Mapping[Path, bytes] | None = None,
    earlier: EarlierVersions | None = None,
) -> CompileResult:
    """Compile every definition file under ``paths`` as far as ``through``; never raises
    for bad input.

    ``through=Stage.CHECK`` runs every check of each project but emits no
    document (``openseal graph``); ``Stage.LOAD`` only reads and decodes.
    With ``analysis`` each project's analysis and graphs are kept in
    ``result.projects`` (the project cache is then not used). With the cache on,
    an unchanged project is served whole from its entry; its
    ``result.loaded.definitions`` are then loaded (from the per-file cache) only
    when first read.

    ``overlay`` maps files under ``paths`` to contents that stand in for them, or add to
    them when they do not exist: a draft compiled together with the definitions it joins,
    with nothing written. The project cache is then not used.

    ``earlier`` gives, by workflow name, the compiled documents of its earlier versions
    (digest → document): each emitted workflow's ``migrate`` blocks are then checked against
    the version they name (``OS6xx``, at the block). Without it they are checked when deployed.
    """
    files, found = discover(paths)
    if overlay:
        files, found = _overlaid(paths, files, found, overlay)
    root = cache.cache_directory()
    by_project: dict[str, list[SourceFile]] = {}
    for path, project in files.items():
        source = (
            SourceFile(path, overlay[path])
            if overlay and path in overlay
            else read_file(path, digest=root is not None)
        )
        by_project.setdefault(str(project), []).append(source)
    fresh = analysis or bool(overlay)
    compiled = {
        project: _compile_fresh(sources, root, through)
        if fresh
        else _compile(project, sources, root, through)
        for project, sources in by_project.items()
    }

    loaded = LoadResult(diagnostics=found)
    later: list[Callable[[], Sequence[Definition]]] = []
    for path, project in files.items():
        outcome = compiled[str(project)]
        add_file(loaded, path, project, outcome.files[str(path)])
        later.append(outcome.definitions_of(str(path)))
    for outcome in compiled.values():
        loaded.diagnostics += outcome.duplicates
    loaded.diagnostics = sorted(set(loaded.diagnostics), key=sort_key)
    loaded.load_later = lambda: [d for definitions in later for d in definitions()]

    result = CompileResult(loaded, list(loaded.diagnostics))
    folded_keys: dict[str, str] = {}
    for name in sorted(compiled):
        outcome = compiled[name]
        if analysis and outcome.project is not None:
            result.projects[name] = outcome.project
        result.diagnostics += outcome.diagnostics
        for key, document in outcome.documents.items():
            existing = result.documents.setdefault(key, document)
            if existing.digest != document.digest:
                result.diagnostics.append(_conflict(key, existing, document))
            cased = folded_keys.setdefault(key.lower(), key)
            if cased != key:  # across projects: within one, loading reports it
                first = result.documents[cased]
                result.diagnostics.append(
                    case_collision(
                        key, document.span, cased, first.span, where=" of another project"
                    )
                )
    if earlier is not None and result.ok:
        result.diagnostics += _migration_diagnostics(result, earlier)
    result.diagnostics = sorted(set(result.diagnostics), key=sort_key)
    if not result.ok:
        result.documents = {}
    return result


#: a workflow's name → its earlier versions' compiled documents, by digest
EarlierVersions = Callable[[str], Mapping[str, Mapping[str, Any]]]


def _migration_diagnostics(result: CompileResult, earlier: EarlierVersions) -> list[Diagnostic]:
    from openseal.compiler.analysis.migration import check_migrations

    written = {d.key: d for d in result.loaded.definitions}
    found: list[Diagnostic] = []
    for key, document in sorted(result.documents.items()):
        if document.kind == "workflow" and document.document["spec"].get("migrate"):
            versions = earlier(document.name)
            found += check_migrations(document.document, versions, written.get(key))
    return found


def write_bundle(result: CompileResult, out_dir: Path, root: Path | None = None) -> dict[str, Any]:
    """Write ``result``'s documents into the bundle ``out_dir`` and return its manifest, which
    names each source file (relative to ``root``, the working directory by default) with its
    digest. Every file is written whole or not at all (:func:`.output.bundle.write_bundle`)."""
    loaded = result.loaded
    sources = bundle.source_digests(loaded.files, loaded.sources, root or Path.cwd())
    return bundle.write_bundle(result.documents, out_dir, sources)


def _overlaid(
    paths: Sequence[Path],
    files: dict[Path, Path],
    found: list[Diagnostic],
    overlay: Mapping[Path, bytes],
) -> tuple[dict[Path, Path], list[Diagnostic]]:
    """``files`` with the overlay's files added to their projects; a directory the overlay
    adds files to no longer reports that it holds none."""
    files = dict(files)
    filled: set[str] = set()
    for path in sorted(overlay):
        base = next((p for p in paths if p in path.parents), path.parent)
        files[path] = project_of(path, base)
        filled.add(str(base))
    kept = [d for d in found if not (d.code == "OS009" and d.span.file in filled)]
    return dict(sorted(files.items())), kept


# --------------------------------------------------------------------------- one project


@dataclass
class _Outcome:
    """One project compiled (or served from its entry)."""

    #: file name → its loaded form (definitions left out on a cache hit)
    files: dict[str, LoadedFile]
    #: diagnostics about names defined twice in the project
    duplicates: list[Diagnostic]
    #: resolve … emit diagnostics
    diagnostics: list[Diagnostic]
    documents: dict[str, CompiledDocument]
    #: set on a cache hit: the files, to load their definitions when asked for
    sources: dict[str, SourceFile] | None = None
    root: Path | None = None
    #: set when compiled fresh: the analysis and graphs behind the result
    project: ProjectResult | None = None

    def definitions_of(self, name: str) -> Callable[[], Sequence[Definition]]:
        if self.sources is None:
            return lambda: self.files[name].definitions
        source, root = self.sources[name], self.root
        return lambda: load_file(source, root).definitions


@dataclass(frozen=True, slots=True)
class _Stored:
    """A compiled document as a project entry keeps it: its canonical bytes as deflated."""

    kind: str
    name: str
    packed: bytes
    digest: str
    span: Span
    #: shared by many documents, so pickled once per entry
    dictionary: bytes

    def document(self) -> CompiledDocument:
        # The document is by definition what its canonical bytes read back as; it is read
        # back when first asked for (json.loads is many times faster than unpickling dicts).
        return CompiledDocument(
            self.kind, self.name, self.packed, self.digest, self.span, self.dictionary
        )


@dataclass(frozen=True, slots=True)
class _ProjectEntry:
    #: per file, in order: (diagnostics, text) — the parts of LoadedFile a result needs
    files: tuple[tuple[tuple[Diagnostic, ...], str | None], ...]
    duplicates: tuple[Diagnostic, ...]
    diagnostics: tuple[Diagnostic, ...]
    documents: tuple[_Stored, ...]
    reads: tuple[cache.Read, ...]


@functools.cache
def _compile_libraries() -> str:
    """Libraries whose output is part of a compiled result (graphs, canonical JSON).

    Read from their installed metadata, not by importing them: a project served
    from its entry runs no stage that needs them.
    """
    return "\0".join(f"{name}={_installed_version(name)}" for name in ("networkx", "rfc8785"))


def _installed_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def _compile(
    project: str, sources: list[SourceFile], root: Path | None, through: Stage
) -> _Outcome:
    digests = [(s.name, s.digest) for s in sources if s.digest is not None]
    if root is None or len(digests) != len(sources):
        return _compile_fresh(sources, None, through)  # no cache, or a file that cannot be keyed
    # Each stop has its own slot, so `validate` and `compile` of one project keep both.
    stop = through.name
    key = cache.key_of(
        "project", _compile_libraries(), stop, project, *cache.sequence_keys(digests)
    )
    entry = cache.entry_path(root, "projects", cache.key_of("project slot", stop, project))
    # Rebuilding the documents allocates many small objects and no cycles.
    with gc_paused():
        stored = cache.read_entry(entry, key)
        hit = _from_entry(stored, sources, root) if isinstance(stored, _ProjectEntry) else None
    if hit is not None:
        return hit
    outcome = _compile_fresh(sources, root, through)
    if all(loaded.cacheable for loaded in outcome.files.values()):
        cache.write_entry(entry, key, _to_entry(outcome, sources))
    return outcome


def _compile_fresh(sources: list[SourceFile], root: Path | None, through: Stage) -> _Outcome:
    # Every stage allocates many small objects and few cycles; with the collector running,
    # its full collections over a large project's trees made the cost grow faster than it.
    # Paused here, so a compile with the cache off or with analysis kept is paused too.
    with gc_paused():
        return _compile_stages(sources, root, through)


def _compile_stages(sources: list[SourceFile], root: Path | None, through: Stage) -> _Outcome:
    files = {source.name: load_file(source, root) for source in sources}
    definitions = [d for loaded in files.values() for d in loaded.definitions]
    broken = [key for loaded in files.values() for key in loaded.broken]
    # Every file of a project shares one project, so all names are compared.
    duplicates = duplicate_names(definitions, {})
    failed = has_errors(d for loaded in files.values() for d in loaded.diagnostics)
    failed = failed or has_errors(duplicates)
    project = compile_definitions(definitions, through=through, broken=broken, load_failed=failed)
    outcome = _Outcome(files, duplicates, project.diagnostics, project.documents)
    outcome.project = project
    return outcome


def _to_entry(outcome: _Outcome, sources: list[SourceFile]) -> _ProjectEntry:
    files = [outcome.files[s.name] for s in sources]
    return _ProjectEntry(
        files=tuple((loaded.diagnostics, loaded.text) for loaded in files),
        duplicates=tuple(outcome.duplicates),
        diagnostics=tuple(outcome.diagnostics),
        documents=tuple(
            _Stored(d.kind, d.name, d.packed, d.digest, d.span, d.dictionary)
            for d in outcome.documents.values()
        ),
        reads=tuple(read for loaded in files for read in loaded.reads),
    )


def _from_entry(stored: _ProjectEntry, sources: list[SourceFile], root: Path) -> _Outcome | None:
    """The outcome an entry describes, or ``None`` if it is malformed or a read changed."""
    try:
        if len(stored.files) != len(sources):
            return None
        files = {
            source.name: LoadedFile((), tuple(diagnostics), text)
            for source, (diagnostics, text) in zip(sources, stored.files, strict=True)
        }
        parts = (stored.duplicates, stored.diagnostics, *(f.diagnostics for f in files.values()))
        well_formed = (
            all(cache.is_sequence_of(part, Diagnostic) for part in parts)
            and all(f.text is None or isinstance(f.text, str) for f in files.values())
            and cache.is_sequence_of(stored.documents, _Stored)
            and cache.is_sequence_of(stored.reads, cache.Read)
        )
        if not well_formed or not cache.all_unchanged(stored.reads):
            return None
        documents = {f"{d.kind}.{d.name}": d.document() for d in stored.documents}
    except Exception:  # a damaged entry of the right type is still only a miss
        return None
    by_name = {source.name: source for source in sources}
    outcome = _Outcome(files, list(stored.duplicates), list(stored.diagnostics), documents)
    outcome.sources, outcome.root = by_name, root
    return outcome


def _conflict(key: str, first: CompiledDocument, second: CompiledDocument) -> Diagnostic:
    return error(
        "OS105",
        f"`{key}` is defined differently in two projects; a bundle holds one version per name",
        second.span,
        related=[Related(first.span, "the other definition")],
    )
