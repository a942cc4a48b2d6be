"""A big HCL file is parsed a chunk of top-level items at a time, and reads exactly as the
whole file does: the same document, the same diagnostics at the same places — checked with
every top-level item a chunk of its own, over the HCL corpus, the golden definitions and the
examples; and the cutter gives up, rather than cutting, where it cannot follow the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.syntax import load_hcl as loading
from openseal.compiler.syntax.hcl_chunks import chunk_starts
from openseal.compiler.syntax.hcl_parser import prepare

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(
    path
    for folder in ("tests/corpus/hcl", "tests/golden", "definitions", "tests/runtime")
    for pattern in ("*.hcl", "*.tf")
    for path in (ROOT / folder).rglob(pattern)
)


def whole(text: str) -> tuple[object, object]:
    return loading._load(text, "f.hcl", chunk_size=10**9)


def chunked(text: str) -> tuple[object, object]:
    return loading._load(text, "f.hcl", chunk_size=1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_file_cut_at_every_top_level_item_reads_as_the_whole(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert chunked(text) == whole(text)


def test_most_files_are_read_in_chunks_not_whole_after_all(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = 0
    parse = loading.parse

    def counted(text: str) -> object:
        nonlocal parses
        parses += 1
        return parse(text)

    monkeypatch.setattr(loading, "parse", counted)
    read_in_chunks = 0
    for path in FILES:
        parses = 0
        text = path.read_text(encoding="utf-8", errors="replace")
        document, _ = chunked(text)
        starts = chunk_starts(prepare(text), 1) or [0]
        read_in_chunks += document is not None and len(starts) > 1 and parses == len(starts)
    assert read_in_chunks >= 30


def test_the_corpus_has_files_that_are_cut() -> None:
    cut = [
        p for p in FILES if len(chunk_starts(prepare(p.read_text(errors="replace")), 1) or []) > 2
    ]
    assert len(cut) >= 20


SAMPLES = {
    "items": 'a = 1\nb "x" {\n  c = "}"\n}\nd = [\n  1,\n]\n',
    "template": 'a = "${ {x = "}"}.x }"\nb = 2\n',
    "heredoc": "a = <<EOT\n}\nb = {\nEOT\nc = 3\n",
    "comments": "# {\n// [\n/* (\n*/\na = 1\nb = 2\n",
    "duplicates": "a = 1\nb = 2\na = 3\n",
    "error late": "a = 1\nb = 2\nc = = 3\n",
    "no final newline": "a = 1\nb = <<EOT\nx\nEOT",
    "crlf": "a = 1\r\nb = 2\r\n",
}


@pytest.mark.parametrize("name", SAMPLES)
def test_samples_read_the_same_cut_or_whole(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    parse = loading.parse
    monkeypatch.setattr(loading, "parse", lambda text: parsed.append(text) or parse(text))
    assert chunked(SAMPLES[name]) == whole(SAMPLES[name])
    if name != "error late":  # cut and parsed a chunk at a time, not parsed whole after all
        starts = chunk_starts(prepare(SAMPLES[name]), 1) or []
        assert len(starts) >= 2 and len(parsed) == len(starts) + 1  # the chunks, then whole


def test_cuts_fall_only_between_top_level_items() -> None:
    source = prepare(SAMPLES["items"] + SAMPLES["heredoc"] + SAMPLES["comments"])
    starts = chunk_starts(source, 1)
    assert starts is not None
    assert [source[i : i + 2] for i in starts] == ["a ", "b ", "d ", "a ", "c ", "a ", "b "]


@pytest.mark.parametrize(
    "text",
    ['a = "open\nb = 1\n', "a = [1, 2)\nb = 1\n", "a = 1\n}\nb = 2\n", "a = <<EOT\nx\n"],
)
def test_text_the_cutter_cannot_follow_is_not_cut(text: str) -> None:
    assert chunk_starts(prepare(text), 1) is None
