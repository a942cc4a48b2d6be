"""Where each key inside a definition was written, packed.

A definition keeps the place of every key written in it, for diagnostics about parts of it
that hold no span of their own. Kept as a dict of path → :class:`Span` they were the largest
part of a big file's definitions (a dict, a path tuple and a span object per key). Here one
definition holds four numbers per key in one array, and definitions written alike (the same
keys in the same order, as a file of many similar workflows has) share one index of their
paths; a :class:`Span` is made when one is asked for.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping

from openseal.compiler.syntax.fold import Path
from openseal.compiler.syntax.spans import Span

#: four unsigned 32-bit numbers per key (line, column, end line, end column): a definition
#: file is at most a few MiB, so none comes near 2**32
_TYPECODE = "I"


class KeyLayout:
    """The paths a definition's keys were written at, in order, with their index."""

    __slots__ = ("index", "paths")

    def __init__(self, paths: tuple[Path, ...]) -> None:
        self.paths = paths
        self.index = {path: i for i, path in enumerate(paths)}

    def __reduce__(self) -> tuple[object, ...]:
        # Pickled once however many definitions share it (pickle keeps shared objects shared).
        return (KeyLayout, (self.paths,))


class KeySpans(Mapping[Path, Span]):
    """A read-only mapping of path (relative to its definition) → where that key was written.

    >>> spans = pack_key_spans([(("owner",), Span("a.hcl", 2, 3, 2, 8))], {})
    >>> spans[("owner",)], spans.get(("start",))
    (Span(file='a.hcl', line=2, column=3, end_line=2, end_column=8), None)
    """

    __slots__ = ("_file", "_layout", "_positions")

    def __init__(self, file: str, layout: KeyLayout, positions: array[int]) -> None:
        self._file = file
        self._layout = layout
        self._positions = positions

    def __getitem__(self, path: Path) -> Span:
        i = 4 * self._layout.index[path]
        line, column, end_line, end_column = self._positions[i : i + 4]
        return Span(self._file, line, column, end_line, end_column)

    def __iter__(self) -> Iterator[Path]:
        return iter(self._layout.paths)

    def __len__(self) -> int:
        return len(self._layout.paths)

    def __contains__(self, path: object) -> bool:
        return path in self._layout.index

    def __repr__(self) -> str:
        return f"KeySpans({dict(self)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (KeySpans, (self._file, self._layout, self._positions))


def pack_key_spans(
    spans: Iterable[tuple[Path, Span]], layouts: dict[tuple[Path, ...], KeyLayout]
) -> Mapping[Path, Span]:
    """``spans`` packed into :class:`KeySpans`, sharing a layout from ``layouts`` (a cache the
    caller keeps for one file) with the definitions written alike. Spans of several files, or
    numbers an array cannot hold, stay a plain dict."""
    written = list(spans)
    if not written:
        return {}
    file = written[0][1].file
    if any(span.file != file for _, span in written):
        return dict(written)
    try:
        positions = array(
            _TYPECODE,
            [n for _, s in written for n in (s.line, s.column, s.end_line, s.end_column)],
        )
    except OverflowError:
        return dict(written)
    paths = tuple(path for path, _ in written)
    layout = layouts.get(paths)
    if layout is None:
        layout = layouts[paths] = KeyLayout(paths)
    return KeySpans(file, layout, positions)
