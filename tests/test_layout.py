"""The runtime's and the compiler's tests are laid out as their code is, so a test is found where
its code is. The rules below are the runtime's; the compiler's are the same, with its stages
(``syntax``, ``definitions``, ``lang``, ``analysis``, ``output``) in place of rooms and
:data:`COMPILER_OTHER_FOLDERS` in place of :data:`OTHER_FOLDERS`.

- ``tests/runtime/`` itself holds no test file, only what its tests share (fixtures, support
  modules, definitions);
- every folder of tests under it mirrors a package of ``openseal/runtime`` (``store/repos`` ↔
  ``openseal/runtime/store/repos``), or is one of :data:`OTHER_FOLDERS`: ``shared`` for the
  runtime's shared top-level modules, and the folders whose subject spans several rooms;
- a test file named for a module of the runtime (``test_leases.py`` ↔
  ``store/repos/leases.py``) sits in the folder of that module, or of one of them when several
  share the name (a top-level module's folder is ``shared``); one named for a package sits in
  the package's folder or beside it (``test_replay.py`` in ``replay/``,
  ``test_migrations.py`` in ``store/tables/``).

Files named otherwise (``test_engine_races.py``) are placed by hand, in the room whose
behaviour they test; the rule only sees the folder they are in.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ROOT / "openseal" / "runtime"
TESTS = ROOT / "tests" / "runtime"
#: the folder of the tests of the runtime's shared top-level modules (``clock``, ``listing`` …)
SHARED = "shared"
#: test folders that mirror no package of the runtime, and what they hold
OTHER_FOLDERS: dict[str, str] = {
    SHARED: "the tests of the runtime's shared top-level modules",
    "flow": "flow control, which spans the engine, the store and the providers",
}
COMPILER_CODE = ROOT / "openseal" / "compiler"
COMPILER_TESTS = ROOT / "tests" / "compiler"
#: the compiler's test folders that mirror none of its stages
COMPILER_OTHER_FOLDERS: dict[str, str] = {
    SHARED: "the tests of the compiler's top-level modules (driver, cache, pipeline, its face)",
    "language": "a feature of the definition language, compiled end to end through every stage",
}


def runtime_tests(tests: Path) -> list[Path]:
    return sorted(tests.rglob("test_*.py"))


def homes(code: Path) -> dict[str, set[str]]:
    """Each module or package name of the runtime → the test folders it may be tested in
    (relative to ``tests/runtime``, ``/``-separated)."""
    found: dict[str, set[str]] = {}
    for path in code.rglob("*.py"):
        if "__pycache__" in path.parts or "versions" in path.parts:
            continue
        package = path.parent.relative_to(code)
        if path.stem == "__init__":
            if package.parts:  # a package is tested in its own folder, or beside it
                places = found.setdefault(package.name, set())
                places.add(package.as_posix())
                if len(package.parts) > 1:
                    places.add(package.parent.as_posix())
            continue
        folder = package.as_posix() if package.parts else SHARED
        found.setdefault(path.stem, set()).add(folder)
    return found


def misplaced(
    code: Path = CODE, tests: Path = TESTS, others: dict[str, str] = OTHER_FOLDERS
) -> list[str]:
    """Test files of ``tests`` that break the rules above, each with the reason."""
    places = homes(code)
    wrong = []
    for path in runtime_tests(tests):
        folder = path.parent.relative_to(tests)
        name = path.relative_to(tests).as_posix()
        if not folder.parts:
            wrong.append(f"{name}: at the top, in no room's folder")
            continue
        mirrors = (code / folder / "__init__.py").is_file()
        if not mirrors and folder.parts[0] not in others:
            wrong.append(f"{name}: {folder.as_posix()} mirrors no package of {code.name}")
            continue
        subject = path.stem.removeprefix("test_")
        if subject in places and folder.as_posix() not in places[subject]:
            wrong.append(f"{name}: belongs in {' or '.join(sorted(places[subject]))}")
    return wrong


def test_the_runtime_tests_mirror_the_runtime() -> None:
    assert misplaced() == []


def test_the_compiler_tests_mirror_the_compiler() -> None:
    assert misplaced(COMPILER_CODE, COMPILER_TESTS, COMPILER_OTHER_FOLDERS) == []


def test_every_other_folder_still_holds_tests() -> None:
    """A listed folder that no longer exists is removed from the list, so the list stays true."""
    assert [name for name in OTHER_FOLDERS if not runtime_tests(TESTS / name)] == []
    listed = COMPILER_OTHER_FOLDERS
    assert [name for name in listed if not runtime_tests(COMPILER_TESTS / name)] == []


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


def test_a_misplaced_runtime_test_is_caught(tmp_path: Path) -> None:
    code, tests = tmp_path / "runtime", tmp_path / "tests"
    _tree(
        code,
        [
            "__init__.py",
            "clock.py",
            "engine/__init__.py",
            "engine/cascade.py",
            "engine/triggers.py",
            "store/__init__.py",
            "store/repos/__init__.py",
            "store/repos/triggers.py",
            "store/repos/leases.py",
            "store/tables/__init__.py",
            "store/tables/migrations/__init__.py",
        ],
    )
    _tree(
        tests,
        [
            "test_loose.py",
            "engine/test_cascade.py",
            "engine/test_triggers.py",
            "store/repos/test_triggers.py",
            "store/repos/test_engine_races.py",
            "store/test_leases.py",
            "engine/test_clock.py",
            "shared/test_clock.py",
            "misc/test_things.py",
            "flow/test_buckets.py",
            "store/tables/test_migrations.py",
            "store/test_migrations.py",
        ],
    )
    assert misplaced(code, tests) == [
        "engine/test_clock.py: belongs in shared",
        "misc/test_things.py: misc mirrors no package of runtime",
        "store/test_leases.py: belongs in store/repos",
        "store/test_migrations.py: belongs in store/tables or store/tables/migrations",
        "test_loose.py: at the top, in no room's folder",
    ]
