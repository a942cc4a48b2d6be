"""The compile cache never runs code it did not write: planted entries are misses.

A pull request can add any file to a checkout. The cache therefore lives outside
the working tree by default, and wherever it lives, an entry is unpickled only
when its MAC under this machine's key proves the cache wrote it. The payloads
below would create a marker file when unpickled; the marker must never appear.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from openseal.compiler import cache
from openseal.compiler.lang import expr_parse
from openseal.compiler.load import load_definitions
from openseal.compiler.pipeline import compile_paths
from openseal.compiler.syntax import hcl_parser

HCL = 'model "m" {\n  provider = "scripted"\n  model    = "small"\n}\n'


class Exploit:
    """Unpickling this opens (creates) ``marker``: code run from the cache directory."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


@pytest.fixture()
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "user-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    monkeypatch.delenv("OPENSEAL_CACHE", raising=False)
    monkeypatch.delenv("OPENSEAL_CACHE_DIR", raising=False)
    return root / "openseal"


def _planted(key: str, marker: Path) -> list[bytes]:
    """The same payload as a bare pickle, with a forged MAC, and signed with another key."""
    payload = pickle.dumps((cache.FORMAT_VERSION, key, Exploit(marker)))
    other = hmac.new(b"k" * 32, key.encode() + b"\0" + payload, hashlib.sha256).digest()
    magic = b"openseal-cache\x00"
    return [payload, magic + b"\0" * 32 + payload, magic + other + payload]


def test_the_default_cache_is_outside_the_working_tree(
    tmp_path: Path, user_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "a.hcl").write_text(HCL, encoding="utf-8")
    monkeypatch.chdir(work)
    directory = cache.cache_directory()
    assert directory == user_cache / "compile"
    assert compile_paths([Path("a.hcl")]).ok
    assert sorted(p.name for p in work.iterdir()) == ["a.hcl"]
    assert list((user_cache / "compile").rglob("*.entry"))


@pytest.mark.parametrize("namespace", ["files", "projects"])
def test_a_planted_entry_is_never_unpickled(
    tmp_path: Path, user_cache: Path, monkeypatch: pytest.MonkeyPatch, namespace: str
) -> None:
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.hcl").write_text(HCL, encoding="utf-8")
    assert compile_paths([tmp_path / "src"]).ok
    (entry,) = (tmp_path / "cache" / namespace).rglob("*.entry")
    _, key, _ = pickle.loads(entry.read_bytes()[cache.HEADER_BYTES :])
    marker = tmp_path / "pwned"
    for planted in _planted(key, marker):
        entry.write_bytes(planted)
        result = compile_paths([tmp_path / "src"])
        assert result.ok and sorted(result.documents) == ["model.m"]
        assert [d.name for d in result.loaded.definitions] == ["m"]
        assert not marker.exists()
        assert entry.read_bytes() != planted  # rewritten by the cache itself


def test_a_pull_request_cannot_plant_an_entry_in_the_checkout(tmp_path: Path) -> None:
    """`openseal validate` in a checkout whose `.openseal/cache` holds crafted pickles."""
    work = tmp_path / "checkout"
    (work / "definitions").mkdir(parents=True)
    (work / "definitions" / "a.hcl").write_text(HCL, encoding="utf-8")
    marker = tmp_path / "pwned"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NO_COLOR": "1",
        "XDG_CACHE_HOME": str(tmp_path / "user-cache"),
    }
    # The first run keys the entries; plant exploits under every name it used, in
    # the old in-tree location and (if one points there) the configured one.
    run = [sys.executable, "-c", "from openseal.cli.main import run; run()", "validate"]
    in_tree = {**env, "OPENSEAL_CACHE_DIR": str(work / ".openseal" / "cache")}
    first = subprocess.run([*run, "definitions"], cwd=work, env=in_tree, capture_output=True)
    assert first.returncode == 0, first.stderr
    entries = list((work / ".openseal" / "cache").rglob("*.entry"))
    assert entries
    payload = pickle.dumps((cache.FORMAT_VERSION, "any", Exploit(marker)))
    for entry in entries:
        entry.write_bytes(payload)
        old = entry.with_suffix(".pickle")  # the layout before entries were signed
        old.write_bytes(payload)
    for environment in (env, in_tree):
        again = subprocess.run(
            [*run, "definitions"], cwd=work, env=environment, capture_output=True, text=True
        )
        assert again.returncode == 0, again.stderr
        assert "no problems" in again.stdout + again.stderr
        assert not marker.exists()


def test_the_machine_key_is_private_and_an_exposed_one_turns_the_cache_off(
    tmp_path: Path, user_cache: Path
) -> None:
    key = cache.machine_key()
    assert key is not None and len(key) == 32
    mode = stat.S_IMODE(cache.key_file().stat().st_mode)
    assert mode == 0o600
    assert cache.machine_key() == key  # the same key on every use
    cache.key_file().chmod(0o644)
    cache._key_at.cache_clear()
    try:
        assert cache.machine_key() is None
        assert cache.cache_directory() is None
        (tmp_path / "a.hcl").write_text(HCL, encoding="utf-8")
        assert load_definitions([tmp_path / "a.hcl"]).ok  # only slower
    finally:
        cache._key_at.cache_clear()


def test_a_symlinked_key_is_not_trusted(tmp_path: Path, user_cache: Path) -> None:
    user_cache.mkdir(parents=True)
    elsewhere = tmp_path / "known-key"
    elsewhere.write_bytes(b"k" * 32)
    elsewhere.chmod(0o600)
    cache.key_file().symlink_to(elsewhere)
    cache._key_at.cache_clear()
    try:
        assert cache.machine_key() is None
    finally:
        cache._key_at.cache_clear()


@pytest.mark.parametrize("module", [hcl_parser, expr_parse])
def test_parser_tables_are_kept_signed_and_planted_ones_are_not_loaded(
    tmp_path: Path, user_cache: Path, monkeypatch: pytest.MonkeyPatch, module: object
) -> None:
    build = module.parser  # type: ignore[attr-defined]
    monkeypatch.setenv("OPENSEAL_CACHE_DIR", str(tmp_path / "elsewhere"))
    build.cache_clear()
    try:
        built = build()
        (tables,) = (user_cache / "parsers").iterdir()  # not under OPENSEAL_CACHE_DIR
        assert not (tmp_path / "elsewhere").exists()
        build.cache_clear()
        loaded = build()
        names = [t.name for t in built.terminals]
        assert loaded is not built and [t.name for t in loaded.terminals] == names
        marker = tmp_path / "pwned"
        tables.write_bytes(pickle.dumps(Exploit(marker)))
        build.cache_clear()
        assert build() is not None
        assert not marker.exists()
        assert tables.read_bytes().startswith(b"openseal-cache\x00")  # rebuilt and re-signed
    finally:
        build.cache_clear()


#: the HCL post-lexer, reachable from this module too, so tables can be saved as if it lived here
_PostLexer = hcl_parser._PostLexer


def test_parser_tables_are_keyed_by_where_the_post_lexer_lives(
    user_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The HCL tables pickle the post-lexer by its import path; tables saved while it lived
    elsewhere (an older layout of the code) are other tables, never loaded in its place."""
    hcl_parser.parser.cache_clear()
    try:
        hcl_parser.parser()
        (first,) = (user_cache / "parsers").iterdir()
        monkeypatch.setattr(_PostLexer, "__module__", __name__)
        hcl_parser.parser.cache_clear()
        hcl_parser.parser()
        tables = sorted((user_cache / "parsers").iterdir())
        assert len(tables) == 2 and first in tables
        assert __name__.encode() in next(t for t in tables if t != first).read_bytes()
    finally:
        hcl_parser.parser.cache_clear()
