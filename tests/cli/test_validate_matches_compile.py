"""`openseal validate` reports exactly what `openseal compile --check` reports.

Both ask the one compiler driver for their stages (validate stops before emit),
so over every golden input and over generated definitions their diagnostics and
exit codes agree; `--syntax-only` stops after loading.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openseal.cli.main import cli
from tests.compiler.compile_support import (
    AGENT,
    BINDING,
    MODEL,
    SKILL,
    WORKFLOW_ITEMS,
    workflow_text,
    write_project,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CHECKED_INPUTS = sorted(
    path
    for stage in ("resolve", "typecheck", "graph", "policy")
    for path in (GOLDEN / stage / "inputs").iterdir()
    if path.suffix in (".hcl", ".yaml")
)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENSEAL_CACHE", "off")
    yield


def _report(*args: str) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)["diagnostics"]


def _validate_and_compile(path: Path) -> tuple[tuple[int, Any], tuple[int, Any]]:
    return _report("validate", str(path)), _report("compile", "--check", str(path))


@pytest.mark.parametrize("path", CHECKED_INPUTS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_validate_reports_what_compile_reports(path: Path) -> None:
    validated, compiled = _validate_and_compile(path)
    assert validated == compiled
    if path.stem.startswith("os"):
        code = path.stem.split("_", 1)[0].upper()
        assert code in {d["code"] for d in validated[1]}


def test_a_name_defined_differently_in_two_projects_fails_validate(tmp_path: Path) -> None:
    agent = 'model "m" {{\n  provider = "scripted"\n  model = "x"\n}}\n' + (
        'agent "a" {{\n  model = model.m\n  instructions = "{}"\n}}\n'
    )
    write_project(tmp_path / "one", {"a.hcl": agent.format("one")})
    write_project(tmp_path / "two", {"a.hcl": agent.format("two")})
    validated, compiled = _validate_and_compile(tmp_path)
    assert validated == compiled
    assert validated[0] == 1 and "OS105" in {d["code"] for d in validated[1]}


def test_syntax_only_stops_after_loading(tmp_path: Path) -> None:
    unresolved = GOLDEN / "resolve" / "inputs" / "os201_unresolved.hcl"
    assert _report("validate", "--syntax-only", str(unresolved)) == (0, [])
    assert _report("validate", str(unresolved))[0] == 1

    broken = tmp_path / "broken.hcl"
    broken.write_text('skill "s" {\n  description = "d"\n  efect = "read"\n}\n')
    code, diagnostics = _report("validate", "--syntax-only", str(broken))
    assert code == 1
    assert "OS101" in {d["code"] for d in diagnostics}


def test_examples_validate_and_compile_cleanly() -> None:
    root = Path(__file__).resolve().parents[2] / "definitions"
    validated, compiled = _validate_and_compile(root)
    assert validated[0] == compiled[0] == 0


# --------------------------------------------------------------------------- generated definitions

#: Edits a careless author makes; each may or may not break the project.
EDITS = [
    ("agent.helper", "agent.helpr"),
    ("state.check", "state.chek"),
    ("state.done", "state.think"),
    ('end = "completed"', 'end = "complete"'),
    ('effect      = "read"', 'effect      = "external"'),
    ('max_risk     = "read"', 'max_risk     = "write"'),
    ("skills = [skill.lookup]", "skills = []"),
    ("skill = skill.lookup", "skill = skill.missing"),
    ('"Answer the question."', '"Use sk-proj-AbCdEf0123456789AbCdEf0123456789 to answer."'),
    ("${input.question}", "${input.questio}"),
    ('answer != ""', "answer + 1"),
    ("answer = string", "answer = number"),
    ('timeout     = "10s"', 'timeout     = "soon"'),
    ("max_risk", "max_risc"),
    ('provider = "scripted"', "provider = 1e400"),
    ('model    = "scripted-small"', 'model    = "scripted-small"\n  parameters = { t = 1e400 }'),
    ('answer != ""', "answer != 9007199254740993"),
]


@st.composite
def projects(draw: st.DrawFn) -> str:
    items = draw(st.lists(st.sampled_from(WORKFLOW_ITEMS), unique=True, min_size=1))
    parts = [MODEL, SKILL, AGENT, BINDING, workflow_text(items)]
    kept = draw(st.lists(st.sampled_from(parts), unique=True, min_size=1))
    text = "\n".join(kept)
    for old, new in draw(st.lists(st.sampled_from(EDITS), unique=True, max_size=4)):
        text = text.replace(old, new)
    return text


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=projects())
def test_validate_fails_whenever_compile_check_fails(tmp_path: Path, text: str) -> None:
    root = write_project(tmp_path / "project", {"main.hcl": text})
    validated, compiled = _validate_and_compile(root)
    assert validated[0] == compiled[0], (text, validated, compiled)
    assert validated[1] == compiled[1]
