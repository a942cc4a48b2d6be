"""One name rule for every kind of definition, and a bundle that stays inside ``--out``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from openseal.compiler.definitions.field_types import is_name, name_suggestion
from openseal.compiler.definitions.specs import KIND_MODELS
from openseal.compiler.load import load_definitions
from openseal.compiler.output.bundle import BundleError, write_bundle
from openseal.compiler.pipeline import compile_paths
from tests.compiler.compile_support import MODEL, compile_texts, project_text

BAD_NAMES = ["", "has space", "dotted.name", "../../victim", "a/b", "x²", "größe", "1st", "a\n"]


@pytest.mark.parametrize("name", ["a", "_", "search_vendors", "A1", "_x_2"])
def test_valid_names(name: str) -> None:
    assert is_name(name)


@pytest.mark.parametrize("name", [*BAD_NAMES, "a-b", "-a"])
def test_invalid_names(name: str) -> None:
    assert not is_name(name)


def test_suggestions_are_valid_names() -> None:
    assert name_suggestion("has space") == "has_space"
    assert name_suggestion("../../victim") == "victim"
    assert name_suggestion("1st") == "_1st"
    assert name_suggestion("") is None
    assert name_suggestion("...") is None


@pytest.mark.parametrize("kind", sorted(KIND_MODELS))
@pytest.mark.parametrize("name", BAD_NAMES)
def test_every_kind_refuses_a_bad_name_at_its_label(tmp_path: Path, kind: str, name: str) -> None:
    label = name.replace("\n", "\\n")
    (tmp_path / "a.hcl").write_text(f'{kind} "{label}" {{\n}}\n', encoding="utf-8")
    result = load_definitions([tmp_path])
    found = [d for d in result.diagnostics if d.code == "OS110"]
    assert len(found) == 1, result.diagnostics
    assert (found[0].span.line, found[0].span.column) == (1, len(kind) + 2)
    # Refused before the body is decoded: no follow-on errors about the empty body.
    assert [d.code for d in result.diagnostics] == ["OS110"]
    assert result.definitions == []


def test_yaml_names_follow_the_same_rule(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        'model:\n  "../../victim":\n    provider: scripted\n    model: x\n', encoding="utf-8"
    )
    result = load_definitions([tmp_path])
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("OS110", 2)]


def test_a_path_like_name_writes_nothing_outside_the_bundle(tmp_path: Path) -> None:
    src = tmp_path / "project" / "src"
    src.mkdir(parents=True)
    text = project_text().replace('model "m"', 'model "../../victim"')
    (src / "all.hcl").write_text(text, encoding="utf-8")
    result = compile_paths([src])
    assert not result.ok
    assert "OS110" in {d.code for d in result.diagnostics}
    assert result.documents == {}
    assert not (tmp_path / "victim.json").exists()


def test_the_bundle_writer_refuses_paths_outside_out(tmp_path: Path) -> None:
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    documents = dict(result.documents)
    key, doc = next(iter(documents.items()))
    # A document whose name escaped every earlier check still cannot escape the bundle.
    documents[key] = dataclasses.replace(doc, name="../../victim")
    out = tmp_path / "deep" / "build"
    with pytest.raises(BundleError, match="not a file inside"):
        write_bundle(documents, out)
    assert not (tmp_path / "victim.json").exists()
    assert not (tmp_path / "deep" / "victim.json").exists()


def test_the_bundle_writer_does_not_follow_a_symlinked_kind_directory(tmp_path: Path) -> None:
    result = compile_texts(tmp_path / "src", {"all.hcl": project_text()})
    out = tmp_path / "build"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "model").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(BundleError):
        write_bundle(result.documents, out)
    assert list(elsewhere.iterdir()) == []


def _project(root: Path, text: str) -> Path:
    root.mkdir(parents=True)
    (root / "openseal.project").write_text("", encoding="utf-8")
    (root / "all.hcl").write_text(text, encoding="utf-8")
    return root


def test_names_differing_only_by_case_in_two_projects_are_refused(tmp_path: Path) -> None:
    _project(tmp_path / "one", project_text())
    _project(tmp_path / "two", MODEL.replace('"m"', '"M"'))
    result = compile_paths([tmp_path])
    found = [d for d in result.diagnostics if d.code == "OS105"]
    assert len(found) == 1 and result.documents == {}, result.diagnostics
    assert found[0].message.startswith("`model.M` differs from `model.m` of another project")
    assert found[0].span.file.endswith("all.hcl") and found[0].span.line == 1


def test_the_longest_name_compiles_and_one_more_character_is_os110(tmp_path: Path) -> None:
    longest = "m" * 128
    text = project_text().replace('"m"', f'"{longest}"').replace("model.m", f"model.{longest}")
    result = compile_texts(tmp_path / "ok", {"all.hcl": text})
    write_bundle(result.documents, tmp_path / "out")
    assert (tmp_path / "out" / "model" / f"{longest}.json").is_file()
    longer = text.replace(longest, longest + "m")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "all.hcl").write_text(longer, encoding="utf-8")
    found = [d for d in compile_paths([tmp_path / "bad"]).diagnostics if d.code == "OS110"]
    assert [(d.span.line, d.span.column) for d in found] == [(1, 7)]
    assert "129 characters long" in found[0].message and found[0].suggestion
