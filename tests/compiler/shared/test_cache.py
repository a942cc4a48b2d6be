"""The compile cache: hits skip work, results equal a cold compile, damage is survived,
keys follow every input (files, files read through file(), the compiler)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from openseal.compiler import cache, load, pipeline
from openseal.compiler.definitions.decode import Definition
from openseal.compiler.load import load_definitions
from openseal.compiler.pipeline import CompileResult, compile_paths
from tests.compiler.compile_support import AGENT, MODEL, SKILL, workflow_text

HCL = 'model "m" {\n  provider = "scripted"\n  model    = "small"\n}\n'
YAML = "model:\n  m: {provider: scripted, model: small}\n"

PROJECT = {
    "model.hcl": MODEL,
    "skill.hcl": SKILL,
    "agent.hcl": AGENT.replace('"Answer the question."', 'file("notes.md")'),
    "binding.yaml": "binding:\n  helper_looks_up: {skill: skill.lookup, to: agent.helper}\n",
    "workflow.hcl": workflow_text(),
    "notes.md": "Answer the question.\n",
}


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, int]:
    """Count parses, decodes and project compiles; point the cache at a fresh directory."""
    calls = {"hcl": 0, "yaml": 0, "decode": 0, "compile": 0}

    def counting(name: str, real: object) -> object:
        def wrapper(*args: object, **kwargs: object) -> object:
            calls[name] += 1
            return real(*args, **kwargs)  # type: ignore[operator]

        return wrapper

    for module, name, counter in [
        (load, "load_hcl", "hcl"),
        (load, "load_yaml", "yaml"),
        (load, "decode", "decode"),
        (pipeline, "compile_definitions", "compile"),
    ]:
        monkeypatch.setattr(module, name, counting(counter, getattr(module, name)))
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))  # a key of its own
    monkeypatch.delenv("OPENSEAL_CACHE", raising=False)
    return calls


def _entries(tmp_path: Path, namespace: str = "files") -> list[Path]:
    return sorted((tmp_path / "cache" / namespace).glob("*/*.entry"))


def _project(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True, exist_ok=True)
    (root / "openseal.project").write_text("", encoding="utf-8")
    for name, text in (files if files is not None else PROJECT).items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _cold(
    paths: Sequence[Path], monkeypatch: pytest.MonkeyPatch, counted: dict[str, int]
) -> CompileResult:
    """A compile with the cache off, left out of the counts."""
    before = dict(counted)
    with monkeypatch.context() as patch:
        patch.setenv("OPENSEAL_CACHE", "off")
        result = compile_paths(paths)
        _ = result.loaded.definitions
    counted.update(before)
    return result


def _specs(definitions: Sequence[Definition]) -> list[tuple[str, object, object]]:
    return [(d.key, d.spec, d.span) for d in definitions]


def _assert_same(warm: CompileResult, cold: CompileResult) -> None:
    """Everything a caller can see of a compile is equal."""
    assert {k: d.digest for k, d in warm.documents.items()} == {
        k: d.digest for k, d in cold.documents.items()
    }
    assert list(warm.documents) == list(cold.documents)
    for key, document in cold.documents.items():
        assert warm.documents[key] == document  # document, canonical bytes, span
    assert warm.diagnostics == cold.diagnostics
    assert warm.loaded.diagnostics == cold.loaded.diagnostics
    assert warm.loaded.sources == cold.loaded.sources
    assert warm.loaded.files == cold.loaded.files
    assert warm.loaded.projects == cold.loaded.projects
    assert _specs(warm.loaded.definitions) == _specs(cold.loaded.definitions)


# --------------------------------------------------------------------------- per-file entries


def test_a_cache_hit_skips_parsing_and_decoding(tmp_path: Path, counted: dict[str, int]) -> None:
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(YAML, encoding="utf-8")
    first = load_definitions([tmp_path / "a.hcl", tmp_path / "b.yaml"])
    second = load_definitions([tmp_path / "a.hcl", tmp_path / "b.yaml"])
    assert counted == {"hcl": 1, "yaml": 1, "decode": 2, "compile": 0}
    assert len(_entries(tmp_path)) == 2
    assert _specs(first.definitions) == _specs(second.definitions)
    assert second.sources == first.sources


def test_a_changed_file_is_parsed_again(tmp_path: Path, counted: dict[str, int]) -> None:
    path = tmp_path / "a.hcl"
    path.write_text(HCL, encoding="utf-8")
    load_definitions([path])
    path.write_text(HCL.replace("small", "large"), encoding="utf-8")
    result = load_definitions([path])
    assert counted["hcl"] == 2
    assert result.definitions[0].spec.model == "large"  # type: ignore[attr-defined]


def test_the_same_content_at_another_path_is_not_shared(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    # Spans name the file, so definitions cached for one path must not serve another.
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    (tmp_path / "b.hcl").write_text(HCL, encoding="utf-8")
    a = load_definitions([tmp_path / "a.hcl"])
    b = load_definitions([tmp_path / "b.hcl"])
    assert counted["hcl"] == 2
    assert a.definitions[0].span.file != b.definitions[0].span.file


def test_diagnostics_are_cached_too(tmp_path: Path, counted: dict[str, int]) -> None:
    path = tmp_path / "bad.hcl"
    path.write_text('model "m" {\n  provider = \n}\n', encoding="utf-8")
    first = load_definitions([path])
    second = load_definitions([path])
    assert counted["hcl"] == 1
    assert first.diagnostics and first.diagnostics == second.diagnostics
    assert second.sources == first.sources  # the source line under the diagnostic


def test_decode_diagnostics_are_cached(tmp_path: Path, counted: dict[str, int]) -> None:
    path = tmp_path / "bad.hcl"
    path.write_text('model "m" {\n  provider = "scripted"\n  modle = "x"\n}\n', encoding="utf-8")
    first = load_definitions([path])
    second = load_definitions([path])
    assert counted["decode"] == 1
    assert sorted(d.code for d in first.diagnostics) == ["OS101", "OS102"]
    assert first.diagnostics == second.diagnostics


DAMAGE = pytest.mark.parametrize(
    "damage",
    [b"", b"not a pickle", b"\x80\x05\x95garbage", b"\x80\x04K\x01.", b"\x80\x04N."],
    ids=["empty", "text", "truncated", "wrong-shape", "none"],
)


@DAMAGE
def test_a_corrupt_file_entry_is_ignored_and_rebuilt(
    tmp_path: Path, counted: dict[str, int], damage: bytes
) -> None:
    path = tmp_path / "a.hcl"
    path.write_text(HCL, encoding="utf-8")
    load_definitions([path])
    (entry,) = _entries(tmp_path)
    entry.write_bytes(damage)
    result = load_definitions([path])
    assert result.ok and result.definitions[0].name == "m"
    assert counted["hcl"] == 2
    assert entry.read_bytes() != damage  # rewritten with a good entry
    load_definitions([path])
    assert counted["hcl"] == 2


def test_a_well_formed_entry_of_the_wrong_type_is_a_miss(
    tmp_path: Path, counted: dict[str, int]
) -> None:
    path = tmp_path / "a.hcl"
    path.write_text(HCL, encoding="utf-8")
    load_definitions([path])
    (entry,) = _entries(tmp_path)
    key = entry.stem
    cache.write_entry(entry, key, load.LoadedFile(("not a definition",), (), None))  # type: ignore[arg-type]
    result = load_definitions([path])
    assert result.ok and [d.name for d in result.definitions] == ["m"]
    assert counted["hcl"] == 2


def test_an_entry_for_another_key_is_a_miss(tmp_path: Path, counted: dict[str, int]) -> None:
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    (tmp_path / "b.hcl").write_text(HCL.replace("small", "other"), encoding="utf-8")
    load_definitions([tmp_path / "a.hcl"])
    load_definitions([tmp_path / "b.hcl"])
    first, second = _entries(tmp_path)
    second.write_bytes(first.read_bytes())  # a valid entry stored under the wrong name
    result = load_definitions([tmp_path / "a.hcl", tmp_path / "b.hcl"])
    assert sorted(d.spec.model for d in result.definitions) == ["other", "small"]  # type: ignore[attr-defined]


def test_a_new_compiler_fingerprint_is_a_miss(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    monkeypatch.setattr(cache, "compiler_fingerprint", lambda: "another compiler")
    compile_paths([root])
    assert counted["compile"] == 2
    assert counted["hcl"] == 2 * 4


def test_the_fingerprint_follows_library_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    before = cache.compiler_fingerprint.__wrapped__()
    assert before == cache.compiler_fingerprint()
    monkeypatch.setattr(cache, "_library_version", lambda name: "0.0-other")
    assert cache.compiler_fingerprint.__wrapped__() != before


def test_the_cache_can_be_turned_off(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENSEAL_CACHE", "off")
    root = _project(tmp_path)
    load_definitions([root])
    compile_paths([root])
    compile_paths([root])
    assert counted["hcl"] == 3 * 4 and counted["compile"] == 2
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_directory_is_only_slower(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(blocker / "cache"))
    root = _project(tmp_path)
    assert compile_paths([root]).ok
    assert compile_paths([root]).ok
    assert counted["compile"] == 2


def test_clear_removes_entries(tmp_path: Path, counted: dict[str, int]) -> None:
    compile_paths([_project(tmp_path)])
    assert cache.clear(tmp_path / "cache") == 5 + 1  # five definition files, one project
    assert _entries(tmp_path) == [] and _entries(tmp_path, "projects") == []


# --------------------------------------------------------------------------- project entries


def test_a_warm_compile_equals_a_cold_one_and_runs_no_stage(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    cold = _cold([root], monkeypatch, counted)
    assert cold.ok and cold.documents
    first = compile_paths([root])
    before = dict(counted)
    warm = compile_paths([root])
    assert counted == before  # no parse, no decode, no resolve … emit
    _assert_same(first, cold)
    _assert_same(warm, cold)


def test_definitions_of_a_cache_hit_are_loaded_only_when_asked_for(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    for entry in _entries(tmp_path):
        entry.unlink()  # so reading the definitions has to parse
    warm = compile_paths([root])
    assert counted["hcl"] == 4
    assert len(warm.loaded.definitions) == len(
        _cold([root], monkeypatch, counted).loaded.definitions
    )
    assert counted["hcl"] == 4 + 4  # parsed now, when they were asked for


def test_warnings_and_errors_are_served_from_the_cache(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {**PROJECT, "workflow.hcl": workflow_text().replace("state.done", "state.dne", 1)}
    root = _project(tmp_path, broken)
    cold = _cold([root], monkeypatch, counted)
    assert not cold.ok
    compile_paths([root])
    warm = compile_paths([root])
    assert counted["compile"] == 1
    _assert_same(warm, cold)
    assert warm.documents == {}


def test_changing_one_file_reloads_only_that_file(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    assert counted == {"hcl": 4, "yaml": 1, "decode": 5, "compile": 1}
    (root / "agent.hcl").write_text(
        PROJECT["agent.hcl"].replace('max_risk     = "read"', 'max_risk     = "write"'),
        encoding="utf-8",
    )
    warm = compile_paths([root])
    assert counted == {"hcl": 5, "yaml": 1, "decode": 6, "compile": 2}
    cold = _cold([root], monkeypatch, counted)
    _assert_same(warm, cold)
    assert len(_entries(tmp_path, "projects")) == 1  # the project's slot was replaced


def test_adding_and_removing_a_file_recompiles(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    extra = root / "extra.hcl"
    extra.write_text(HCL.replace('"m"', '"other"'), encoding="utf-8")
    added = compile_paths([root])
    assert "model.other" in added.documents
    _assert_same(added, _cold([root], monkeypatch, counted))
    extra.unlink()
    removed = compile_paths([root])
    assert "model.other" not in removed.documents
    _assert_same(removed, _cold([root], monkeypatch, counted))
    assert counted["compile"] == 3


def test_editing_a_file_read_through_file_invalidates(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    before = compile_paths([root])
    (root / "notes.md").write_text("Answer briefly.\n", encoding="utf-8")
    after = compile_paths([root])
    assert counted["compile"] == 2
    assert after.documents["agent.helper"].digest != before.documents["agent.helper"].digest
    assert after.documents["agent.helper"].document["spec"]["instructions"] == "Answer briefly.\n"
    _assert_same(after, _cold([root], monkeypatch, counted))
    # the per-file entry of agent.hcl follows notes.md as well
    loaded = load_definitions([root])
    agent = next(d for d in loaded.definitions if d.key == "agent.helper")
    assert agent.spec.instructions == "Answer briefly.\n"  # type: ignore[attr-defined]


def test_a_file_that_cannot_be_read_through_file_is_never_cached(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    (root / "notes.md").unlink()
    first = compile_paths([root])
    assert [d.code for d in first.diagnostics if d.is_error] == ["OS108"]
    assert _entries(tmp_path, "projects") == []
    (root / "notes.md").write_text("Now it exists.\n", encoding="utf-8")
    second = compile_paths([root])
    assert second.ok
    _assert_same(second, _cold([root], monkeypatch, counted))


@DAMAGE
def test_a_corrupt_project_entry_is_ignored_and_rebuilt(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch, damage: bytes
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    (entry,) = _entries(tmp_path, "projects")
    entry.write_bytes(damage)
    result = compile_paths([root])
    assert counted["compile"] == 2
    _assert_same(result, _cold([root], monkeypatch, counted))
    assert entry.read_bytes() != damage
    compile_paths([root])
    assert counted["compile"] == 2


def test_a_project_entry_with_damaged_contents_is_a_miss(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    compile_paths([root])
    (entry,) = _entries(tmp_path, "projects")
    key, stored = _stored_project(entry)
    bad = pipeline._ProjectEntry(
        stored.files,
        stored.duplicates,
        ("not a diagnostic",),  # type: ignore[arg-type]
        stored.documents,
        stored.reads,
    )
    cache.write_entry(entry, key, bad)
    result = compile_paths([root])
    assert counted["compile"] == 2
    _assert_same(result, _cold([root], monkeypatch, counted))


def _stored_project(entry: Path) -> tuple[str, pipeline._ProjectEntry]:
    import pickle

    _, key, stored = pickle.loads(entry.read_bytes()[cache.HEADER_BYTES :])
    assert isinstance(stored, pipeline._ProjectEntry)
    return key, stored


def test_projects_are_cached_separately(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    one = _project(tmp_path / "one")
    two = _project(tmp_path / "two")
    compile_paths([tmp_path])
    (two / "model.hcl").write_text(MODEL.replace("scripted-small", "scripted-large"), "utf-8")
    warm = compile_paths([tmp_path])
    assert counted["compile"] == 2 + 1  # only project two compiled again
    cold = _cold([tmp_path], monkeypatch, counted)
    _assert_same(warm, cold)
    assert not warm.ok  # the same names, defined differently in two projects
    assert one.is_dir()


def test_the_example_definitions_compile_the_same_warm(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = Path(__file__).parents[3] / "definitions"
    paths = [examples / "procurement" / "hcl", examples / "release_note" / "yaml"]
    cold = _cold(paths, monkeypatch, counted)
    compile_paths(paths)
    warm = compile_paths(paths)
    assert cold.ok and warm.ok
    _assert_same(warm, cold)
