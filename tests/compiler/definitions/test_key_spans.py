"""A definition's key spans, packed: the same mapping a dict would be, shared layouts."""

from __future__ import annotations

import pickle
from pathlib import Path

from openseal.compiler.definitions.key_spans import KeySpans, pack_key_spans
from openseal.compiler.load import load_definitions
from openseal.compiler.syntax.spans import Span

WORKFLOWS = "".join(
    f"""
workflow "w{i}" {{
  owner = agent.a
  start = state.first
  state "first" {{
    transform {{
      output = {{ n = {i} }}
    }}
    next = state.done
  }}
  state "done" {{
    end = "completed"
  }}
}}
"""
    for i in range(3)
)


def test_packed_spans_read_as_the_dict_they_replace() -> None:
    written = [
        (("owner",), Span("a.hcl", 2, 3, 2, 8)),
        (("state", "first"), Span("a.hcl", 4, 9, 4, 16)),
        (("state", "first", "next"), Span("a.hcl", 90_000, 5, 90_000, 9)),
    ]
    spans = pack_key_spans(written, {})
    assert isinstance(spans, KeySpans)
    assert dict(spans) == dict(written)
    assert spans.get(("start",)) is None and ("start",) not in spans
    assert list(spans) == [path for path, _ in written] and len(spans) == 3


def test_spans_of_another_file_stay_a_dict() -> None:
    written = [(("a",), Span("a.hcl", 1, 1, 1, 2)), (("b",), Span("b.hcl", 1, 1, 1, 2))]
    spans = pack_key_spans(written, {})
    assert spans == dict(written) and not isinstance(spans, KeySpans)
    assert pack_key_spans([], {}) == {}


def test_definitions_written_alike_share_one_layout_also_after_pickling(tmp_path: Path) -> None:
    path = tmp_path / "many.hcl"
    path.write_text(WORKFLOWS, encoding="utf-8")
    result = load_definitions([path])
    assert result.diagnostics == []
    spans = [d.key_spans for d in result.definitions]
    assert all(isinstance(s, KeySpans) for s in spans)
    assert len({id(s._layout) for s in spans}) == 1  # type: ignore[attr-defined]
    assert [s[("state", "first", "next")].line for s in spans] == [9, 23, 37]
    restored = pickle.loads(pickle.dumps(spans))
    assert [dict(s) for s in restored] == [dict(s) for s in spans]
    assert len({id(s._layout) for s in restored}) == 1
