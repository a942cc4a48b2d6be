"""Reading definition files as text, with every failure turned into a diagnostic.

Both loaders start here, so binary garbage, invalid UTF-8, a byte-order mark or
an oversized file are handled once, the same way, for HCL and YAML.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from openseal.compiler.diagnostics import Diagnostic, error
from openseal.compiler.syntax.spans import Span

#: Definition files larger than this are refused before parsing (bytes).
MAX_FILE_BYTES = 8 * 1024 * 1024

HCL_SUFFIXES = frozenset({".hcl"})
YAML_SUFFIXES = frozenset({".yaml", ".yml"})
DEFINITION_SUFFIXES = HCL_SUFFIXES | YAML_SUFFIXES

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SourceText:
    file: str
    text: str


def decode(data: bytes, file: str) -> tuple[SourceText | None, list[Diagnostic]]:
    """Decode file contents as UTF-8 (a leading BOM is dropped)."""
    if len(data) > MAX_FILE_BYTES:
        return None, [_too_large(file)]
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [
            _not_text(file, data, exc.start, f"invalid UTF-8 byte 0x{data[exc.start]:02x}")
        ]
    nul = data.find(b"\x00")
    if nul != -1:
        return None, [_not_text(file, data, nul, "NUL byte; this looks like a binary file")]
    return SourceText(file, text), []


class NotRegularFile(OSError):
    """A path that names a pipe, a device, a directory or a socket, not a regular file."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages (``a named pipe``)."""
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _refuse(mode: int) -> NotRegularFile:
    return NotRegularFile(0, f"not a regular file ({file_kind(mode)})")


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``: at most ``limit + 1`` of them.

    A result longer than ``limit`` means the file is over the limit; nothing
    more is read. Pseudo-files that read longer than their size (``/proc``) are
    refused too. Pipes, devices, directories and sockets (also through a
    symlink) raise :class:`NotRegularFile` before a byte is read, and the file
    is opened without blocking, so a named pipe with no writer cannot hang the
    caller. ``stat().st_size`` alone is no guard: it is 0 for ``/dev/zero``.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _refuse(mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        opened = os.fstat(fd)  # what was opened, which may differ from what was checked
        if not stat.S_ISREG(opened.st_mode):
            raise _refuse(opened.st_mode)
        chunks: list[bytes] = []
        size = min(limit, opened.st_size)
        left = size + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > opened.st_size:
            # Kernel pseudo-files (/proc, /sys) are "regular" with a size of 0 and
            # content made up on reading; a real file never reads longer than it is.
            raise NotRegularFile(0, "not an ordinary file: it reads longer than its size")
        return data
    finally:
        os.close(fd)


class OutsideProject(OSError):
    """A definition file that is a symbolic link (or lies under one) to a file outside the
    project, which ``file("...")`` would refuse too."""

    def __init__(self) -> None:
        super().__init__(0, "it is a symbolic link to a file outside the project")


def read_definition(path: Path) -> bytes:
    """The bytes of the definition file ``path`` (see :func:`read_bounded`).

    A definition file follows the rule ``file("...")`` follows: what it resolves
    to lies under the project root of where it is written (:func:`project_root`),
    so a link cannot bring a file from elsewhere into the definitions, nor its
    lines into diagnostics. Raises :class:`OutsideProject` before a byte is read.
    """
    written = Path(os.path.abspath(path))  # where it is written: links not followed
    if not path.resolve().is_relative_to(_root_of(written).resolve()):
        raise OutsideProject
    return read_bounded(path, MAX_FILE_BYTES)


def read_source(
    path: Path, display_name: str | None = None
) -> tuple[SourceText | None, list[Diagnostic]]:
    """Read and decode one file; any I/O problem becomes an ``OS001`` diagnostic."""
    file = display_name or str(path)
    try:
        data = read_definition(path)
    except OSError as exc:
        return None, [cannot_read(file, exc)]
    return decode(data, file)


def cannot_read(file: str, exc: OSError) -> Diagnostic:
    reason = exc.strerror or exc.__class__.__name__
    hint = _OUTSIDE_HINT if isinstance(exc, OutsideProject) else None
    return error("OS001", f"cannot read file: {reason}", Span.whole_file(file), suggestion=hint)


# --------------------------------------------------------------------------- the project root


@functools.lru_cache(maxsize=1024)
def _repository_root(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


@functools.lru_cache(maxsize=1024)
def _marked_project(directory: Path) -> Path:
    for candidate in (directory, *directory.parents):
        if (candidate / "openseal.project").is_file():
            return candidate
    return directory


def project_root(file: Path) -> Path:
    """The directory ``file("...")`` reads under, for a definition file at ``file``.

    The first of: the root of the git repository holding the definition file
    (the nearest directory above it with a ``.git``); the current directory,
    when the file lies under it; the nearest directory above the file marked
    by ``openseal.project``; the file's own directory. Resolved (no symlinks).
    """
    return _root_of(file.resolve())


def _root_of(file: Path) -> Path:
    root = _repository_root(file.parent)
    if root is not None:
        return root
    cwd = Path.cwd().resolve()
    return cwd if file.is_relative_to(cwd) else _marked_project(file.parent)


def _too_large(file: str) -> Diagnostic:
    return error(
        "OS003",
        f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, "
        "the limit for definition files",
        Span.whole_file(file),
        suggestion="split the definitions into several files",
    )


def _not_text(file: str, data: bytes, offset: int, what: str) -> Diagnostic:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return error(
        "OS002",
        f"file is not UTF-8 text: {what} at byte {offset}",
        Span(file, line, column, line, column + 1),
        suggestion="save the file as UTF-8",
    )


#: Largest file ``file("...")`` reads into a definition (bytes).
MAX_INCLUDED_BYTES = 1024 * 1024


class IncludeError(Exception):
    """``file("...")`` refused a path; ``reason`` completes "file(...) cannot be read: "."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


_OUTSIDE_HINT = (
    "definition files, like file(), are read only inside the project: the git repository "
    "holding them (see docs/language.md); copy the file into the project instead of linking it"
)
_RELATIVE_HINT = "paths are relative to the file that names them"
_ROOT_HINT = (
    "file() reads only files inside the project: the git repository holding the "
    "definitions (see docs/language.md)"
)


def read_included(path: Path, defining_file: Path) -> str:
    """The text ``file("...")`` inlines: a regular UTF-8 file under the project root.

    Raises :class:`IncludeError` for a path outside :func:`project_root` (also
    through a symlink), anything but a regular file, a file over
    :data:`MAX_INCLUDED_BYTES`, and text that is not UTF-8.
    """
    root = project_root(defining_file)
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise IncludeError(str(exc), _RELATIVE_HINT) from exc
    if not resolved.is_relative_to(root):
        raise IncludeError("it is outside the project", _ROOT_HINT)
    try:
        data = read_bounded(resolved, MAX_INCLUDED_BYTES)
    except OSError as exc:
        raise IncludeError(exc.strerror or exc.__class__.__name__, _RELATIVE_HINT) from exc
    if len(data) > MAX_INCLUDED_BYTES:
        limit = f"{MAX_INCLUDED_BYTES // 1024} KiB"
        raise IncludeError(f"it is larger than {limit}, the limit for file()", _RELATIVE_HINT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IncludeError("not UTF-8 text", "save the file as UTF-8") from exc
