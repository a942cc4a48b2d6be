"""What a compile holds: documents as their canonical bytes deflated, no graph left for the
collector, one int per source line shared by the spans on it."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import networkx as nx
import pytest

from openseal.canonical import canonical_bytes, sha256_digest
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax.hcl_parser import Positions
from tests.compiler.compile_support import (
    compile_texts,
    project_text,
    workflow_text,
    write_project,
)


def test_a_document_is_read_back_from_its_bytes_when_first_asked(tmp_path: Path) -> None:
    result = compile_texts(tmp_path, {"main.hcl": project_text()})
    for document in result.documents.values():
        assert document._document is None  # only the canonical bytes are held
        decoded = document.document
        assert decoded == json.loads(document.canonical)
        assert document.document is decoded  # read back once
        assert decoded["name"] == document.name


def test_documents_are_held_deflated_against_one_dictionary_per_kind(tmp_path: Path) -> None:
    copies = [workflow_text().replace('"answer"', f'"answer_{i}"') for i in range(3)]
    result = compile_texts(tmp_path, {"main.hcl": "\n".join([project_text(), *copies])})
    assert result.ok
    by_kind: dict[str, set[int]] = {}
    for document in result.documents.values():
        canonical = document.canonical
        assert canonical == canonical_bytes(document.document)
        assert document.digest == sha256_digest(canonical)
        assert len(document.packed) < len(canonical)
        by_kind.setdefault(document.kind, set()).add(id(document.dictionary))
    assert all(len(dictionaries) == 1 for dictionaries in by_kind.values())
    workflows = [d for d in result.documents.values() if d.kind == "workflow"]
    assert len(workflows) == 4
    # a workflow after the first is written mostly as references into the first one
    assert all(len(d.packed) * 5 < len(d.canonical) for d in workflows[1:])


@pytest.fixture
def collector_paused():  # type: ignore[no-untyped-def]
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    yield
    gc.set_debug(0)
    gc.garbage.clear()
    if was:
        gc.enable()


@pytest.mark.usefixtures("collector_paused")
def test_compiling_leaves_no_graph_for_the_collector(tmp_path: Path) -> None:
    # networkx caches views on a graph that refer back to it: a graph a stage drops would
    # be held, with the collector paused, until the next collection. The graphs kept in the
    # result (its workflows' state graphs) are alive here, so none is garbage.
    project = write_project(tmp_path, {"main.hcl": project_text()})
    result = compile_paths([project], analysis=True)
    assert result.ok and result.projects
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    left = [thing for thing in gc.garbage if isinstance(thing, nx.Graph)]
    assert left == []


def test_spans_on_one_line_share_its_number() -> None:
    text = "a\n" * 300 + "x = 1 + 2\n"
    positions = Positions("f.hcl", text, first_line=40)
    start = text.index("x")
    first, second = positions.span(start, start + 1), positions.span(start + 4, start + 9)
    assert (first.line, first.column, first.end_line, first.end_column) == (340, 1, 340, 2)
    assert first.line is second.line is second.end_line
