"""The compiler driver: one stage list, run as far as each command asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler.definitions.decode import Definition
from openseal.compiler.driver import STAGES, Stage, compile_definitions
from openseal.compiler.load import load_definitions
from openseal.compiler.output import emit as emit_module
from openseal.errors import CompileError
from tests.compiler.compile_support import project_text, write_project


@pytest.fixture()
def definitions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Definition]:
    monkeypatch.setenv("OPENSEAL_CACHE", "off")
    loaded = load_definitions([write_project(tmp_path / "p", {"all.hcl": project_text()})])
    assert loaded.ok
    return loaded.definitions


def test_the_stage_list_is_in_order_and_ends_with_emit() -> None:
    stages = [stage for stage, _ in STAGES]
    assert stages == sorted(stages)
    assert stages[-1] is Stage.EMIT and Stage.LOAD not in stages


def test_each_stop_runs_exactly_its_prefix(definitions: list[Definition]) -> None:
    loaded = compile_definitions(definitions, through=Stage.LOAD)
    assert loaded.analysis is None and loaded.graphs is None
    resolved = compile_definitions(definitions, through=Stage.RESOLVE)
    assert resolved.analysis is not None and resolved.graphs is None
    checked = compile_definitions(definitions, through=Stage.CHECK)
    assert checked.graphs is not None and checked.documents == {}
    emitted = compile_definitions(definitions)
    assert emitted.analysis is not None
    assert set(emitted.documents) == set(emitted.analysis.definitions)
    assert checked.diagnostics == emitted.diagnostics == []


def test_nothing_is_emitted_after_a_loading_error(definitions: list[Definition]) -> None:
    project = compile_definitions(definitions, load_failed=True)
    assert project.documents == {} and project.graphs is not None


def test_a_value_emit_cannot_write_is_a_located_error(
    definitions: list[Definition],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(document: object) -> bytes:
        raise CompileError("value cannot be written as canonical JSON: nan")

    monkeypatch.setattr(emit_module, "canonical_bytes", refuse)
    project = compile_definitions(definitions)
    (found,) = project.diagnostics
    assert found.code == "OS104" and found.span.line >= 1
    assert "canonical JSON" in found.message
    assert project.documents == {}
