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

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openseal.compiler import cache
from openseal.compiler.definitions.decode import Definition, decode, written_keys
from openseal.compiler.definitions.field_types import FILE_READS
from openseal.compiler.definitions.labels import block_labels
from openseal.compiler.diagnostics import Diagnostic, Related, error, sort_key, warning
from openseal.compiler.syntax import file_text as src
from openseal.compiler.syntax.file_text import DEFINITION_SUFFIXES, HCL_SUFFIXES
from openseal.compiler.syntax.fold import fold
from openseal.compiler.syntax.gc_pause import gc_paused
from openseal.compiler.syntax.load_hcl import load_hcl
from openseal.compiler.syntax.load_yaml import load_yaml
from openseal.compiler.syntax.spans import Span


@dataclass
class LoadResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: file name → text, for rendering source lines under diagnostics
    sources: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    #: file name → the project it belongs to
    projects: dict[str, str] = field(default_factory=dict)
    #: when set, :attr:`definitions` are loaded on first use (a compile served from
    #: the project cache needs no definitions unless a caller asks for them)
    load_later: Callable[[], list[Definition]] | None = field(default=None, repr=False)
    _definitions: list[Definition] = field(default_factory=list, repr=False)

    @property
    def definitions(self) -> list[Definition]:
        if self.load_later is not None:
            self._definitions, self.load_later = self.load_later(), None
        return self._definitions

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def discover(paths: Iterable[Path]) -> tuple[dict[Path, Path], list[Diagnostic]]:
    """Definition files under ``paths`` (directories searched recursively) → their project."""
    found: dict[Path, Path] = {}
    diagnostics: list[Diagnostic] = []
    for path in paths:
        if path.is_dir():
            candidates = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in DEFINITION_SUFFIXES and not _hidden(p, path)
            )
            matches = [p for p in candidates if p.is_file()]
            diagnostics.extend(
                _skipped(p) for p in candidates if not p.is_file() and not p.is_dir()
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


def _skipped(path: Path) -> Diagnostic:
    """A warning for a file a directory scan found but does not read (a pipe, a device...)."""
    try:
        what = src.file_kind(path.stat().st_mode)
    except OSError:
        what = "a broken symbolic link" if path.is_symlink() else "unreadable"
    return warning(
        "OS012",
        f"skipped {path}: not a regular file ({what})",
        Span.whole_file(str(path)),
        suggestion="definition files must be regular files, not pipes, devices or links to them",
    )


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


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A definition file's bytes, read once for both the cache key and the parse."""

    path: Path
    #: ``None`` when the file cannot be read or is over the size limit; the loader
    #: then reads it again to report why, and nothing about it is cached
    data: bytes | None
    #: sha256 hex of ``data``, when asked for (only the cache needs it)
    digest: str | None = None

    @property
    def name(self) -> str:
        """The file as spans and diagnostics name it."""
        return str(self.path)

    @property
    def syntax(self) -> str:
        return "hcl" if self.path.suffix in HCL_SUFFIXES else "yaml"


def read_file(path: Path, *, digest: bool = False) -> SourceFile:
    try:
        data = src.read_definition(path)
    except OSError:
        return SourceFile(path, None)
    if len(data) > src.MAX_FILE_BYTES:
        return SourceFile(path, None)  # refused; see read_source
    return SourceFile(path, data, hashlib.sha256(data).hexdigest() if digest else None)


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """One file loaded, folded and decoded: what the per-file cache stores."""

    definitions: tuple[Definition, ...]
    diagnostics: tuple[Diagnostic, ...]
    #: the decoded text, for showing source lines (``None`` when it is not text)
    text: str | None
    #: files read through ``file("...")`` while decoding
    reads: tuple[cache.Read, ...] = ()
    #: ``False`` when a result must not be cached (a ``file()`` read failed, so
    #: the diagnostic's reason could go stale, or the file itself was unreadable)
    cacheable: bool = True
    #: ``kind.name`` of definitions written in the file that did not decode
    broken: tuple[str, ...] = ()


def load_file(source: SourceFile, root: Path | None = None) -> LoadedFile:
    """Load one file, from the per-file cache under ``root`` when it holds this content.

    ``root`` is the cache directory (``None``: no cache). A hit skips parsing,
    folding and decoding; it is served only while every file the definitions
    read through ``file()`` still reads the same.
    """
    if root is None or source.data is None:
        return _load_uncached(source)
    digest = source.digest or hashlib.sha256(source.data).hexdigest()
    # file("...") reads under the project root, so where that is belongs to the key.
    reads_from = str(src.project_root(source.path))
    key = cache.key_of("file", source.name, source.syntax, digest, reads_from)
    entry = cache.entry_path(root, "files", key)
    hit = cache.read_entry(entry, key)
    if isinstance(hit, LoadedFile) and _well_formed(hit) and cache.all_unchanged(hit.reads):
        return hit
    loaded = _load_uncached(source)
    if loaded.cacheable:
        cache.write_entry(entry, key, loaded)
    return loaded


def _well_formed(loaded: LoadedFile) -> bool:
    return (
        cache.is_sequence_of(loaded.definitions, Definition)
        and cache.is_sequence_of(loaded.diagnostics, Diagnostic)
        and cache.is_sequence_of(loaded.reads, cache.Read)
        and (loaded.text is None or isinstance(loaded.text, str))
        and cache.is_sequence_of(loaded.broken, str)
    )


def _load_uncached(source: SourceFile) -> LoadedFile:
    # Loading builds a great many small objects and no cycles worth collecting;
    # with the collector running, its full collections made a large file's cost
    # grow faster than the file.
    with gc_paused():
        return _load_text(source)


def _load_text(source: SourceFile) -> LoadedFile:
    if source.data is None:
        # Read it again the careful way, which says why it cannot be used.
        text, diagnostics = src.read_source(source.path)
    else:
        text, diagnostics = src.decode(source.data, source.name)
    cacheable = source.data is not None
    if text is None:
        return LoadedFile((), tuple(diagnostics), None, cacheable=cacheable)
    parse = load_hcl if source.syntax == "hcl" else load_yaml
    document, found = parse(text.text, text.file)
    diagnostics += found
    if document is None:
        return LoadedFile((), tuple(diagnostics), text.text, cacheable=cacheable)
    folded, found = fold(document.body, block_labels)
    diagnostics += found
    # The folded data is all decoding reads: the tree is let go before the definitions
    # are built, so a large file never holds both at once.
    file, source_text = document.file, document.text
    del document
    reads: list[tuple[Path, str | None]] = []
    token = FILE_READS.set(reads)
    try:
        definitions, found = decode(folded, file)
    finally:
        FILE_READS.reset(token)
    diagnostics += found
    broken = written_keys(folded) - {d.key for d in definitions}
    return LoadedFile(
        tuple(definitions),
        tuple(diagnostics),
        source_text,
        tuple(cache.Read.of(path, read) for path, read in reads if read is not None),
        cacheable=cacheable and all(read is not None for _, read in reads),
        broken=tuple(sorted(broken)),
    )


def load_definitions(paths: Sequence[Path]) -> LoadResult:
    """Find, load and decode the definition files under ``paths`` (never raises)."""
    files, diagnostics = discover(paths)
    result = LoadResult(diagnostics=diagnostics)
    root = cache.cache_directory()
    for path, project in files.items():
        loaded = load_file(read_file(path), root)
        add_file(result, path, project, loaded)
        result.definitions.extend(loaded.definitions)
    result.diagnostics.extend(duplicate_names(result.definitions, result.projects))
    result.diagnostics = sorted(set(result.diagnostics), key=sort_key)
    return result


def add_file(result: LoadResult, path: Path, project: Path | str, loaded: LoadedFile) -> None:
    """Record one loaded file in ``result`` (all but its definitions)."""
    name = str(path)
    result.files.append(name)
    result.projects[name] = str(project)
    result.diagnostics.extend(loaded.diagnostics)
    if loaded.text is not None:
        result.sources[name] = loaded.text


def duplicate_names(
    definitions: Iterable[Definition], projects: dict[str, str]
) -> list[Diagnostic]:
    seen: dict[tuple[str, str], Definition] = {}
    #: by kind and name in lower case, across projects: one bundle holds them all
    folded: dict[tuple[str, str], Definition] = {}
    out: list[Diagnostic] = []
    for definition in definitions:
        project = projects.get(definition.span.file, "")
        same_file = folded.setdefault((definition.kind, definition.name.lower()), definition)
        if same_file.name != definition.name:
            out.append(
                case_collision(
                    definition.key, definition.name_span, same_file.key, same_file.name_span
                )
            )
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


def case_collision(
    key: str, span: Span, other: str, other_span: Span, *, where: str = ""
) -> Diagnostic:
    """``OS105`` for two names that differ only by case (``key`` at ``span``, ``other``
    ``where`` it is): one file of a bundle on a file system that ignores case (macOS,
    Windows), so one would silently replace the other."""
    return error(
        "OS105",
        f"`{key}` differs from `{other}`{where} only by case; their files in a bundle would "
        "be one file where case is ignored",
        span,
        related=[Related(other_span, f"`{other}` is defined here")],
        suggestion="give one of them a name that differs by more than case",
    )
