"""The wheel holds everything openseal reads at run time, not only its Python modules."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: files that are not Python but that openseal opens when it runs
NEEDED = [
    "openseal/py.typed",
    "openseal/compiler/lang/expressions.lark",
    "openseal/api/console/static/index.html",
    "openseal/authoring/language.md",
]


@pytest.mark.slow
def test_the_wheel_holds_migrations_grammar_and_assets(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("openseal-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in NEEDED if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    shipped = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "openseal").rglob("migrations/**/*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert shipped and not shipped - names, f"migrations not in the wheel: {shipped - names}"
    assert not [n for n in names if n.startswith(("tests/", "bench/"))]
    from openseal import __version__

    assert wheel.name.startswith(f"openseal-{__version__}-"), "the version comes from one place"
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert f"\nVersion: {__version__}\n" in zipfile.ZipFile(wheel).read(metadata).decode()
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "openseal = openseal.cli.main:run" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_version_is_written_once() -> None:
    import tomllib
    from importlib.metadata import version

    from openseal import __version__

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert version("openseal") == __version__


def test_the_first_install_shows_its_progress() -> None:
    """`make quickstart` on a fresh checkout installs for minutes: pip's progress stays on."""
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("$(STAMP): pyproject.toml")[1]
    recipe = recipe.split("\n\n")[0]
    install = next(line for line in recipe.splitlines() if "-e '.[test]'" in line)
    assert "--quiet" not in install and " -q" not in install
    assert "@echo" in recipe


@pytest.mark.slow
def test_the_wheel_and_sdist_pass_twine_check(tmp_path: Path) -> None:
    """What `python -m build` makes is what an index accepts (metadata, README rendering)."""
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    made = sorted(str(p) for p in tmp_path.iterdir())
    assert sorted(Path(p).suffix for p in made) == [".gz", ".whl"], made
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *made],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout


def test_the_project_addresses_are_declared_once() -> None:
    """pyproject.toml's ``[project.urls]`` are the constants the code reads (SARIF's
    ``helpUri`` among them), so the two cannot drift apart; with no published home yet, neither
    names an address (a guessed one would send users somewhere that is not openseal's)."""
    import tomllib

    import openseal
    from openseal.compiler.output import render_diagnostics

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {"Repository": openseal.REPOSITORY_URL, "Documentation": openseal.DOCS_URL}
    assert project.get("urls", {}) == ({} if not openseal.REPOSITORY_URL else declared)
    assert openseal.REPOSITORY_URL == "" and openseal.DOCS_URL == ""
    assert render_diagnostics.DOCS_URL == openseal.DOCS_URL
