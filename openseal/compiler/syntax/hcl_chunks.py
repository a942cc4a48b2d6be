"""Where a big HCL file can be cut between top-level attributes and blocks.

Parsing a file gives a lark tree about 150 times the size of its text (5 MB of HCL made a
700 MiB tree), and the loader needs only one top-level item's tree at a time. So a big file
is parsed a chunk at a time, each chunk a run of whole top-level items, and each chunk's tree
is dropped once its items are converted (:mod:`openseal.compiler.syntax.load_hcl`).

The scan below only has to find line starts outside every bracket, string, heredoc and
comment, where the next top-level item begins. It is cautious: on anything it does not
follow (an unclosed string, a bracket closed by the wrong kind), it gives up and the file is
parsed whole, so a chunked parse never reads text differently from a whole one.
"""

from __future__ import annotations

import re

#: Chunks are at least this long (a lark parse per top-level item would cost more calls).
CHUNK_SIZE = 64 * 1024

_CODE = re.compile(r'["#/{}\[\]()\n<]')
_STRING = re.compile(r'["\\\n$%]')
_HEREDOC = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")
_OPENERS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = frozenset("}])")
#: a top-level item starts with a name (an attribute or a block type)
_ITEM_START = re.compile(r"[A-Za-z_]|[^\x00-\x7f\s]")


def chunk_starts(source: str, size: int = CHUNK_SIZE) -> list[int] | None:
    """Offsets where chunks of ``source`` start (the first is 0), each chunk at least ``size``
    characters of whole top-level items; None when the scan is unsure of the text."""
    starts = [0]
    stack: list[str] = []  # "{", "[", "(", '"' (a string) and "${" (a template's expression)
    i, n = 0, len(source)
    while i < n:
        in_string = bool(stack) and stack[-1] == '"'
        found = (_STRING if in_string else _CODE).search(source, i)
        if found is None:
            break
        i = found.start()
        ch = source[i]
        i = (_in_string if in_string else _in_code)(source, i, ch, stack)
        if i < 0:
            return None
        if ch == "\n" and not stack and i - starts[-1] >= size and _ITEM_START.match(source, i):
            starts.append(i)
    return starts if not stack else None


def _in_string(source: str, i: int, ch: str, stack: list[str]) -> int:
    """Past ``ch`` at ``i`` inside a quoted string; -1 when the string is not closed."""
    if ch == "\\":
        return i + 2
    if ch == '"':
        stack.pop()
        return i + 1
    if ch == "\n":
        return -1
    if source.startswith(ch * 2 + "{", i):  # `$${` and `%%{` are literal text
        return i + 3
    if source.startswith("{", i + 1):
        stack.append("${")
        return i + 2
    return i + 1


def _in_code(source: str, i: int, ch: str, stack: list[str]) -> int:
    """Past ``ch`` at ``i`` outside strings: brackets, strings, comments, heredocs."""
    if ch == '"':
        stack.append('"')
        return i + 1
    if ch == "#" or source.startswith("//", i):
        end = source.find("\n", i)
        return -1 if end < 0 else end
    if source.startswith("/*", i):
        end = source.find("*/", i + 2)
        return -1 if end < 0 else end + 2
    if ch == "<":
        return _past_heredoc(source, i)
    if ch in _OPENERS:
        stack.append(ch)
    elif ch in _CLOSERS:
        if not stack:
            return -1
        opened = stack.pop()
        if _OPENERS.get(opened, "}") != ch:  # a template's `${` closes with `}`
            return -1
    return i + 1


def _past_heredoc(source: str, i: int) -> int:
    """Past a heredoc that starts at ``i`` (or past a lone `<`)."""
    header = _HEREDOC.match(source, i)
    if header is None:
        return i + 1
    marker = header.group(1)
    line_start = header.end()
    while line_start < len(source):
        line_end = source.find("\n", line_start)
        if line_end < 0:
            return -1
        if source[line_start:line_end].strip() == marker:
            return line_end
        line_start = line_end + 1
    return -1
