"""Loading stays linear in the size of a file: no per-definition scan over the whole file.

These count work instead of timing it: the number of passes over every recorded
key must not grow with the number of definitions (decode used to filter all keys
once per definition), and repeated unlabelled blocks must never re-key the
spans recorded so far (fold used to scan them all for every such block).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from openseal.compiler import load
from openseal.compiler.definitions.decode import decode
from openseal.compiler.syntax import fold as fold_module
from openseal.compiler.syntax.fold import fold
from openseal.compiler.syntax.load_hcl import load_hcl
from tests.compiler.compile_support import workflow_text

BRANCHES = """workflow "w{i}" {{
  owner = agent.a
  start = state.fan
  state "fan" {{
    parallel {{
      branch {{
        agent = agent.a
        goal  = "one"
      }}
      branch {{
        agent = agent.a
        goal  = "two"
      }}
      branch {{
        agent = agent.a
        goal  = "three"
      }}
    }}
    next = state.done
  }}
  state "done" {{
    end = "completed"
  }}
}}
"""


class CountingDict(dict[Any, Any]):
    passes = 0

    def items(self) -> Any:
        CountingDict.passes += 1
        return super().items()


def passes_over_keys(definitions: int) -> int:
    text = "\n".join(workflow_text().replace('"answer"', f'"w{i}"') for i in range(definitions))
    document, diagnostics = load_hcl(text, "many.hcl")
    assert document is not None and diagnostics == []
    folded, _ = fold(document.body)
    folded.keys = CountingDict(folded.keys)
    CountingDict.passes = 0
    found, _ = decode(folded, "many.hcl")
    assert len(found) == definitions
    return CountingDict.passes


def test_decoding_passes_over_the_keys_a_fixed_number_of_times() -> None:
    assert passes_over_keys(2) == passes_over_keys(40)


@pytest.mark.parametrize("definitions", [1, 30])
def test_repeated_blocks_are_folded_without_moving_spans(
    definitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_move(*args: object) -> None:
        raise AssertionError("spans re-keyed after the fact")

    monkeypatch.setattr(fold_module._Folder, "_move", no_move)
    text = "\n".join(BRANCHES.format(i=i) for i in range(definitions))
    document, diagnostics = load_hcl(text, "branches.hcl")
    assert document is not None and diagnostics == []
    folded, found = fold(document.body)
    assert found == []
    branches = folded.data["workflow"]["w0"]["state"]["fan"]["parallel"]["branch"]  # type: ignore[index]
    assert [b["goal"] for b in branches] == ["one", "two", "three"]
    path = ("workflow", "w0", "state", "fan", "parallel", "branch")
    assert [folded.keys[(*path, i)].line for i in range(3)] == [6, 10, 14]
    assert folded.keys[(*path, 1, "goal")].line == 12
    assert folded.span_for((*path, 2, "goal")) is not None


def test_a_block_type_that_is_also_an_attribute_keeps_the_general_path() -> None:
    document, _ = load_hcl("b = 1\nb {\n}\nb {\n}\n", "mixed.hcl")
    assert document is not None
    folded, found = fold(document.body)
    assert found == [] and folded.data == {"b": [1, {}, {}]}  # as before: one list


def test_a_file_is_loaded_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Full collections over a large file's many objects made its cost super-linear.
    seen: list[bool] = []
    real = load.decode

    def recording(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(load, "decode", recording)
    monkeypatch.setenv("OPENSEAL_CACHE", "off")
    (tmp_path / "a.hcl").write_text(workflow_text(), encoding="utf-8")
    was_enabled = gc.isenabled()
    load.load_definitions([tmp_path])
    assert seen == [False]
    assert gc.isenabled() == was_enabled
