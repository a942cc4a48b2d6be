"""The parse cache: hits skip parsing, damage is survived, keys follow content."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.compiler import cache, load
from openseal.compiler.load import load_definitions

HCL = 'model "m" {\n  provider = "scripted"\n  model    = "small"\n}\n'
YAML = "model:\n  m: {provider: scripted, model: small}\n"


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, int]:
    """Count real parses; point the cache at a fresh directory."""
    calls = {"hcl": 0, "yaml": 0}
    real_hcl, real_yaml = load.load_hcl_file, load.load_yaml_file

    def hcl(path: Path) -> cache.Loaded:
        calls["hcl"] += 1
        return real_hcl(path)

    def yml(path: Path) -> cache.Loaded:
        calls["yaml"] += 1
        return real_yaml(path)

    monkeypatch.setattr(load, "load_hcl_file", hcl)
    monkeypatch.setattr(load, "load_yaml_file", yml)
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENSEAL_CACHE", raising=False)
    return calls


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("*/*.pickle"))


def test_a_cache_hit_skips_parsing(tmp_path: Path, counted: dict[str, int]) -> None:
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(YAML, encoding="utf-8")
    first = load_definitions([tmp_path / "a.hcl", tmp_path / "b.yaml"])
    second = load_definitions([tmp_path / "a.hcl", tmp_path / "b.yaml"])
    assert counted == {"hcl": 1, "yaml": 1}
    assert len(_entries(tmp_path)) == 2
    assert [d.spec for d in first.definitions] == [d.spec for d in second.definitions]
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
    # Spans name the file, so a tree cached for one path must not serve another.
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


@pytest.mark.parametrize(
    "damage",
    [b"", b"not a pickle", b"\x80\x05\x95garbage", b"\x80\x04K\x01."],
    ids=["empty", "text", "truncated", "wrong-shape"],
)
def test_a_corrupt_entry_is_ignored_and_rebuilt(
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


def test_an_entry_for_another_key_is_a_miss(tmp_path: Path, counted: dict[str, int]) -> None:
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    (tmp_path / "b.hcl").write_text(HCL.replace("small", "other"), encoding="utf-8")
    load_definitions([tmp_path / "a.hcl"])
    load_definitions([tmp_path / "b.hcl"])
    first, second = _entries(tmp_path)
    second.write_bytes(first.read_bytes())  # a valid pickle stored under the wrong name
    result = load_definitions([tmp_path / "a.hcl", tmp_path / "b.hcl"])
    assert sorted(d.spec.model for d in result.definitions) == ["other", "small"]  # type: ignore[attr-defined]


def test_the_cache_can_be_turned_off(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENSEAL_CACHE", "off")
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    load_definitions([tmp_path / "a.hcl"])
    load_definitions([tmp_path / "a.hcl"])
    assert counted["hcl"] == 2
    assert _entries(tmp_path) == []


def test_an_unwritable_cache_directory_is_only_slower(
    tmp_path: Path, counted: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(blocker / "cache"))
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    assert load_definitions([tmp_path / "a.hcl"]).ok
    assert load_definitions([tmp_path / "a.hcl"]).ok
    assert counted["hcl"] == 2


def test_clear_removes_entries(tmp_path: Path, counted: dict[str, int]) -> None:
    (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
    load_definitions([tmp_path / "a.hcl"])
    assert cache.clear(tmp_path / "cache") == 1
    assert _entries(tmp_path) == []
