"""Compiling stays linear in the size of a file: no per-definition scan over the whole file.

These count work instead of timing it: the number of passes over every recorded
key must not grow with the number of definitions (decode used to filter all keys
once per definition), repeated unlabelled blocks must never re-key the spans
recorded so far (fold used to scan them all for every such block), and the stages
after loading must not walk every definition of the project for each state or
skill use (emit used to, to find the bindings of each use). Every stage runs with
the collector paused, with the compile cache on or off.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from openseal.compiler import driver, load
from openseal.compiler.analysis import resolve as resolve_module
from openseal.compiler.analysis.ir import Analysis
from openseal.compiler.definitions.decode import decode
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax import fold as fold_module
from openseal.compiler.syntax.fold import fold
from openseal.compiler.syntax.load_hcl import load_hcl
from tests.compiler.compile_support import (
    AGENT,
    BINDING,
    MODEL,
    SKILL,
    compile_texts,
    project_text,
    workflow_text,
    write_project,
)

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


class CountingDefinitions(dict[Any, Any]):
    """A project's symbol table that counts the walks over all of it."""

    walks = 0

    def __iter__(self) -> Any:
        CountingDefinitions.walks += 1
        return super().__iter__()

    def values(self) -> Any:
        CountingDefinitions.walks += 1
        return super().values()

    def items(self) -> Any:
        CountingDefinitions.walks += 1
        return super().items()


def walks_over_definitions(tmp_path: Path, workflows: int) -> int:
    real = resolve_module.resolve

    def counting(*args: Any, **kwargs: Any) -> Any:
        analysis, diagnostics = real(*args, **kwargs)
        table = CountingDefinitions(analysis.definitions)
        return Analysis(table, analysis.grants), diagnostics

    many = [workflow_text().replace('"answer"', f'"w{i}"') for i in range(workflows)]
    CountingDefinitions.walks = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(resolve_module, "resolve", counting)
        monkeypatch.setenv("OPENSEAL_CACHE", "off")
        text = "\n".join([MODEL, SKILL, AGENT, BINDING, *many])
        result = compile_texts(tmp_path / str(workflows), {"all.hcl": text})
    assert len(result.documents) == 4 + workflows
    return CountingDefinitions.walks


def test_the_stages_after_loading_walk_the_definitions_a_fixed_number_of_times(
    tmp_path: Path,
) -> None:
    assert walks_over_definitions(tmp_path, 2) == walks_over_definitions(tmp_path, 30)


def test_the_analysis_indexes_answer_as_the_scans_did(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"all.hcl": project_text()})
    result = compile_paths([root], analysis=True)
    (project,) = result.projects.values()
    analysis = project.analysis
    assert analysis is not None
    for kind in ("model", "skill", "agent", "binding", "workflow", "team"):
        scanned = [d for d in analysis.definitions.values() if d.kind == kind]
        assert analysis.of_kind(kind) == scanned
    for grant in analysis.grants:
        scanned_grants = [
            g for g in analysis.grants if g.grantee == grant.grantee and g.skill == grant.skill
        ]
        assert analysis.grants_for(grant.grantee, grant.skill) == scanned_grants
    written = analysis.bindings_written("skill.lookup", "agent.helper")
    assert [b.name for b in written] == ["helper_looks_up"]
    assert analysis.bindings_written("skill.lookup", "agent.other") == []


def _recording(name: str, run: Any, seen: list[tuple[str, bool]]) -> Any:
    def recording(project: Any) -> Any:
        seen.append((name, gc.isenabled()))
        return run(project)

    return recording


@pytest.mark.parametrize("cache", ["off", "on"])
def test_every_stage_of_a_compile_runs_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    # With the cache off, the stages after loading once ran with the collector on.
    seen: list[tuple[str, bool]] = []
    stages = tuple((stage, _recording(stage.name, run, seen)) for stage, run in driver.STAGES)
    monkeypatch.setattr(driver, "STAGES", stages)
    if cache == "off":
        monkeypatch.setenv("OPENSEAL_CACHE", "off")
    else:
        monkeypatch.delenv("OPENSEAL_CACHE", raising=False)
        monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(tmp_path / "cache"))
    was_enabled = gc.isenabled()
    compile_texts(tmp_path / "project", {"all.hcl": project_text()})
    assert seen == [(stage.name, False) for stage, _ in stages]
    assert gc.isenabled() == was_enabled
