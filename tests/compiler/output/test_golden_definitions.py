"""Golden diagnostics for reading and decoding definitions: one input per code.

Regenerate with ``make golden`` (``OPENSEAL_UPDATE_GOLDEN=1``) and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openseal.compiler.diagnostics import CODES
from openseal.compiler.load import load_definitions
from openseal.compiler.output.render_diagnostics import render_human
from tests.golden_helper import GOLDEN, assert_golden

INPUTS = GOLDEN / "definitions" / "inputs"
FILE_CASES = sorted(p.name for p in INPUTS.iterdir() if p.suffix in (".hcl", ".yaml"))


@pytest.fixture(autouse=True)
def no_parse_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # The inputs directory must stay free of cache files.
    monkeypatch.setenv("OPENSEAL_CACHE", "off")


def rendered(paths: list[Path], base: Path) -> tuple[str, set[str]]:
    """Human diagnostics with paths relative to ``base`` so goldens do not name a machine."""
    cwd = Path.cwd()
    os.chdir(base)
    try:
        result = load_definitions([p.relative_to(base) for p in paths])
    finally:
        os.chdir(cwd)
    count = len(result.files)
    text = render_human(result.diagnostics, result.sources, color=False, file_count=count)
    return text, {d.code for d in result.diagnostics}


@pytest.mark.parametrize("name", FILE_CASES)
def test_golden_diagnostics_per_code(name: str) -> None:
    code = name.split("_", 1)[0].upper()
    text, codes = rendered([INPUTS / name], INPUTS)
    assert code in codes, text
    assert_golden(text, f"definitions/{Path(name).stem}.txt")


def test_golden_generated_inputs(tmp_path: Path) -> None:
    # Cases whose input cannot live in the repository as a file of its own.
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "notes.txt").write_text("not a definition\n")
    with (tmp_path / "huge.hcl").open("wb") as handle:
        handle.truncate(9 * 1024 * 1024)
    agent = 'agent "a" {{\n  model        = model.m\n  instructions = "{}"\n}}\n'
    (tmp_path / "twice").mkdir()
    (tmp_path / "twice" / "one.hcl").write_text(agent.format("one"))
    (tmp_path / "twice" / "two.hcl").write_text(agent.format("two"))
    (tmp_path / "special").mkdir()
    os.mkfifo(tmp_path / "special" / "pipe.hcl")
    (tmp_path / "special" / "zero.hcl").symlink_to("/dev/zero")
    (tmp_path / "special" / "model.hcl").write_text(
        'model "m" {\n  provider = "scripted"\n  model    = "small"\n}\n'
    )
    (tmp_path / "long.hcl").write_text(
        f'model "{"m" * 241}" {{\n  provider = "scripted"\n  model    = "small"\n}}\n'
    )
    (tmp_path / "cased").mkdir()
    (tmp_path / "cased" / "one.hcl").write_text(agent.format("one"))
    (tmp_path / "cased" / "two.yaml").write_text(
        "agent:\n  A:\n    model: model.m\n    instructions: two\n"
    )
    cases = {
        "os110_name_too_long": [tmp_path / "long.hcl"],
        "os105_case_only": [tmp_path / "cased"],
        "os012_skipped_file": [tmp_path / "special"],
        "os105_duplicate_definition": [tmp_path / "twice"],
        "os001_missing_file": [tmp_path / "missing.hcl"],
        "os003_too_large": [tmp_path / "huge.hcl"],
        "os009_no_definitions": [tmp_path / "empty_dir"],
        "os010_unsupported_file": [tmp_path / "notes.txt"],
    }
    for stem, paths in cases.items():
        text, codes = rendered(paths, tmp_path)
        assert stem.split("_", 1)[0].upper() in codes, text
        assert_golden(text, f"definitions/{stem}.txt")


def test_every_reading_and_model_code_has_a_golden() -> None:
    covered = {p.stem.split("_", 1)[0].upper() for p in (GOLDEN / "definitions").glob("*.txt")}
    wanted = {c for c in CODES if c.startswith(("OS0", "OS1"))}
    assert wanted <= covered, sorted(wanted - covered)
