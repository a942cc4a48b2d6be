"""A draft: the files a model proposed, checked as an answer and compiled with what exists.

The model answers with :data:`ANSWER_SCHEMA` — ``{"files": [{"path", "syntax", "content"}]}``
— and :func:`read_answer` turns that into :class:`DraftFile` records or into the problems to
send back (not JSON of that shape, a path outside the definitions, an existing file it may not
replace). :func:`compile_draft` runs the whole compiler pipeline over the existing definitions
with the draft laid over them in memory: nothing is written while a draft is checked.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema

from openseal.compiler import (
    CompiledDocument,
    CompileResult,
    Diagnostic,
    Related,
    Span,
    Stage,
    compile_paths,
    has_errors,
)

SYNTAXES = ("hcl", "yaml")
SUFFIXES = {"hcl": (".hcl",), "yaml": (".yaml", ".yml")}
MAX_FILES = 20
MAX_FILE_CHARS = 200_000

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "files": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_FILES,
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "maxLength": 200},
                    "syntax": {"type": "string", "enum": list(SYNTAXES)},
                    "content": {"type": "string", "minLength": 1, "maxLength": MAX_FILE_CHARS},
                },
                "required": ["path", "syntax", "content"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["files"],
    "additionalProperties": False,
}
_VALIDATOR = jsonschema.Draft202012Validator(ANSWER_SCHEMA)


@dataclass(frozen=True)
class DraftFile:
    """One proposed file; ``path`` is relative to the definitions it joins (POSIX form)."""

    path: str
    syntax: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "syntax": self.syntax, "content": self.content}


@dataclass(frozen=True)
class Answer:
    """A model's answer read: the files, or the problems that make it unusable."""

    files: tuple[DraftFile, ...] = ()
    problems: tuple[str, ...] = ()


def read_answer(
    output: object, *, syntax: str | None, existing: Path | None, overwrite: bool
) -> Answer:
    """Check the model's structured output; every problem found is listed, none raised."""
    if not isinstance(output, dict):
        return Answer(problems=("the answer is not a JSON object of the required shape",))
    errors = sorted(_VALIDATOR.iter_errors(output), key=lambda e: list(e.absolute_path))
    if errors:
        return Answer(problems=tuple(_schema_problem(e) for e in errors[:10]))
    files = tuple(DraftFile(f["path"], f["syntax"], f["content"]) for f in output["files"])
    problems: list[str] = []
    seen: set[str] = set()
    for draft in files:
        problems += _path_problems(draft, syntax, existing, overwrite)
        if draft.path in seen:
            problems.append(f"{draft.path}: the answer holds this path twice")
        seen.add(draft.path)
    return Answer(files, tuple(problems))


def _schema_problem(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    return f"{where}: {error.message[:200]}"


def _path_problems(
    draft: DraftFile, syntax: str | None, existing: Path | None, overwrite: bool
) -> list[str]:
    path = PurePosixPath(draft.path)
    if path.is_absolute() or "\\" in draft.path or any(p in ("", ".", "..") for p in path.parts):
        return [f"{draft.path}: a path is relative to the definitions and stays inside them"]
    if any(part.startswith(".") for part in path.parts):
        return [f"{draft.path}: hidden files and directories are not read by the compiler"]
    problems = []
    if syntax is not None and draft.syntax != syntax:
        problems.append(f"{draft.path}: write {syntax}, not {draft.syntax}")
    if path.suffix not in SUFFIXES[draft.syntax]:
        wanted = " or ".join(SUFFIXES[draft.syntax])
        problems.append(f"{draft.path}: a {draft.syntax} file's name ends in {wanted}")
    if existing is not None and not overwrite and (existing / path).exists():
        problems.append(
            f"{draft.path}: this file already exists; add a new file instead of replacing it"
        )
    return problems


@dataclass
class CompiledDraft:
    """A draft compiled with the definitions it joins; file names are as a user sees them."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: file name → text, for rendering diagnostics with their source lines
    sources: dict[str, str] = field(default_factory=dict)
    file_count: int = 0
    #: ``kind.name`` → document (empty unless the draft compiled)
    documents: dict[str, CompiledDocument] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def compile_existing(base: Path | None) -> CompiledDraft:
    """The definitions a draft joins, compiled as they are (nothing when ``base`` is None)."""
    if base is None or not base.exists():
        return CompiledDraft()
    return _compiled(compile_paths([base], through=Stage.EMIT), None, "")


def compile_draft(base: Path | None, files: Sequence[DraftFile]) -> CompiledDraft:
    """Compile ``files`` laid over the definitions under ``base`` (or alone), all stages."""
    with _root(base) as (root, hidden, shown):
        overlay = {root / Path(*PurePosixPath(f.path).parts): f.content.encode() for f in files}
        result = compile_paths([root], through=Stage.EMIT, overlay=overlay)
        return _compiled(result, hidden, shown)


@contextmanager
def _root(base: Path | None) -> Iterator[tuple[Path, str | None, str]]:
    """Where the draft's files are placed; the directory name to hide, and what to show."""
    if base is not None and base.is_dir():
        yield base, None, ""
        return
    # A draft that joins nothing (yet) is compiled in an empty directory of its own.
    with tempfile.TemporaryDirectory(prefix="openseal-draft-") as tmp:
        yield Path(tmp), tmp, "" if base is None else f"{base}/"


def _compiled(result: CompileResult, hidden: str | None, shown: str) -> CompiledDraft:
    rename = _renamer(hidden, shown)
    loaded = result.loaded
    return CompiledDraft(
        diagnostics=[_renamed(d, rename) for d in result.diagnostics],
        sources={rename(name): text for name, text in loaded.sources.items()},
        file_count=len(loaded.files),
        documents=dict(result.documents),
    )


def _renamer(hidden: str | None, shown: str) -> Callable[[str], str]:
    if hidden is None:
        return str
    prefix = hidden.rstrip("/") + "/"

    def rename(name: str) -> str:
        if name == hidden.rstrip("/"):
            return shown.rstrip("/") or "."
        return shown + name.removeprefix(prefix) if name.startswith(prefix) else name

    return rename


def _renamed(diagnostic: Diagnostic, rename: Callable[[str], str]) -> Diagnostic:
    def span(s: Span) -> Span:
        return dataclasses.replace(s, file=rename(s.file))

    return dataclasses.replace(
        diagnostic,
        span=span(diagnostic.span),
        related=tuple(Related(span(r.span), r.message) for r in diagnostic.related),
    )


def feedback(diagnostics: Sequence[Diagnostic], limit: int = 40) -> list[dict[str, Any]]:
    """The error diagnostics as the model reads them: code, span, message, suggestion."""
    errors = [d for d in diagnostics if d.is_error][:limit]
    return [
        {
            "code": d.code,
            "file": d.span.file,
            "line": d.span.line,
            "column": d.span.column,
            "message": d.message,
            **({"suggestion": d.suggestion} if d.suggestion else {}),
        }
        for d in errors
    ]
