"""Reading definition files as text, with every failure turned into a diagnostic.

Both loaders start here, so binary garbage, invalid UTF-8, a byte-order mark or
an oversized file are handled once, the same way, for HCL and YAML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openseal.compiler.diagnostics import Diagnostic, error
from openseal.compiler.spans import Span

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
        return None, [_too_large(file, len(data))]
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


def read_source(
    path: Path, display_name: str | None = None
) -> tuple[SourceText | None, list[Diagnostic]]:
    """Read and decode one file; any I/O problem becomes an ``OS001`` diagnostic."""
    file = display_name or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            # Do not read a huge file into memory only to refuse it.
            return None, [_too_large(file, size)]
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        return None, [error("OS001", f"cannot read file: {reason}", Span.whole_file(file))]
    return decode(data, file)


def _too_large(file: str, size: int) -> Diagnostic:
    return error(
        "OS003",
        f"file is {size / (1024 * 1024):.1f} MiB; definition files are limited to "
        f"{MAX_FILE_BYTES // (1024 * 1024)} MiB",
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
