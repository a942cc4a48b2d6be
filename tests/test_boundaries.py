"""The import rules between openseal's packages, checked over the source with ``ast``.

- the compiler is pure: it imports nothing of openseal but ``openseal.errors``,
  ``openseal.contract``, ``openseal.canonical`` (and the package's ``__version__``), so never
  the runtime, skills, runbooks, the API or the CLI;
- the compiled contract (``openseal.contract``, the shapes ``emit`` writes and the runtime
  reads) imports nothing of openseal, so both sides can import it; canonical JSON
  (``openseal.canonical``) imports only ``openseal.errors``, so the compiler and the store
  share it;
- runbooks run without a store: they never import the runtime;
- skills are used by both executors: they never import the runtime;
- outside the compiler, only its face (``openseal.compiler``, the names its ``TYPE_CHECKING``
  imports list) is imported, never one of its stages' modules;
- the runtime and the runbook executor consume compiled documents and plans only: they never
  import the compiler's loaders or its driver (:data:`FRONT_HALF`), not even by a name of
  the face;
- the compiler is laid out as its pipeline: a stage folder imports only earlier stages
  (:data:`STAGES`), and the top of the package holds only the driving modules (:data:`TOP`);
- authoring drafts definitions for people to review: it never imports the API or the CLI;
- the API, the CLI and authoring reach the runtime only through the modules listed in
  :data:`RUNTIME_SEAMS`; a new one fails here until it is added on purpose;
- all SQL lives in ``openseal.runtime.store``: no other module imports SQLAlchemy (except
  :data:`SQLALCHEMY_EXCEPTIONS`), and no other module imports anything of the store but the
  names its package exports (``from openseal.runtime.store import Store, Run``);
- the store imports nothing of the runtime but :data:`STORE_MAY_IMPORT`, so no import loop
  can run through it again;
- the runtime is laid out in rooms (:data:`ROOMS`): each imports only the rooms it lists, so
  actions and governance never reach into the engine, and nothing but the face itself imports
  ``service``; the shared modules at the top of the runtime (:data:`RUNTIME_TOP`, nothing
  else is there) import only the rooms under them (:data:`UNDER_TOP`: the store, and the
  model providers telemetry wraps), never the engine; ``compiled`` stays pure, and the
  providers import nothing of the runtime but ``compiled`` (:data:`NARROWER`).

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy
import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openseal.lazy_exports import face_sources

PACKAGE = Path(__file__).resolve().parents[1] / "openseal"

#: package → the openseal packages (``openseal.<name>``) it must never import
FORBIDDEN: dict[str, frozenset[str]] = {
    "compiler": frozenset(
        {"runtime", "skills", "runbooks", "api", "cli", "quickstart", "simulator"}
    ),
    "runbooks": frozenset({"runtime", "api", "cli", "quickstart"}),
    "skills": frozenset({"runtime", "runbooks", "api", "cli", "quickstart"}),
    "authoring": frozenset({"api", "cli", "quickstart", "simulator", "runbooks"}),
    # reported to by every layer, it imports none of them
    "observability": frozenset(
        {
            "compiler",
            "runtime",
            "skills",
            "runbooks",
            "api",
            "cli",
            "quickstart",
            "simulator",
            "authoring",
        }
    ),
    # the compiled contract: shared by the compiler, the runtime and the store, it imports
    # nothing of openseal
    "contract": frozenset(
        {
            "compiler",
            "runtime",
            "skills",
            "runbooks",
            "api",
            "cli",
            "quickstart",
            "simulator",
            "authoring",
            "observability",
            "errors",
            "error_codes",
        }
    ),
}
#: a lazy package face's machinery, used by the store: it imports nothing of openseal either
FORBIDDEN["lazy_exports"] = FORBIDDEN["contract"] | {"contract"}
#: RFC 8785 canonical JSON, which the compiler (version digests) and the store (request and
#: activity hashes) both write: below both, it imports nothing of openseal but ``errors``
FORBIDDEN["canonical"] = (FORBIDDEN["contract"] - {"errors"}) | {"contract", "lazy_exports"}

#: the compiler modules (and packages) that read definition files or drive the stages; the
#: runtime and the runbook executor never re-read definitions
FRONT_HALF = tuple(
    f"openseal.compiler.{name}"
    for name in (
        "syntax", "definitions.decode", "definitions.field_types",
        "load", "driver", "pipeline", "runbook_pipeline", "cache",
    )
)  # fmt: skip
#: source positions come from syntax/ but every stage, and what reads compiled documents, has them
SPANS = "openseal.compiler.syntax.spans"

#: the compiler's stage folders in pipeline order; each may import itself and those before it
STAGES = ("syntax", "lang", "definitions", "analysis", "output")
#: the compiler's top-level modules: the driving ones, and the two every stage may use
TOP = frozenset({"driver", "pipeline", "load", "runbook_pipeline", "cache", "diagnostics"})
#: the top-level modules a stage may import (tables of the signed cache, and diagnostics)
SHARED_TOP = frozenset({"cache", "diagnostics"})

COMPILER = "openseal.compiler"

STORE = "openseal.runtime.store"
#: the modules outside the store that may import SQLAlchemy, and why
SQLALCHEMY_EXCEPTIONS: dict[str, str] = {
    "openseal.api.errors": "maps SQLAlchemy's exception classes to HTTP answers (503, 400)",
}
#: the openseal modules the store itself may import
STORE_MAY_IMPORT = frozenset(
    {
        "openseal.errors",
        "openseal.contract",  # the waiting records and run context it stores
        "openseal.lazy_exports",  # its package's names imported on first use
        "openseal.runtime.clock",
        "openseal.runtime.statuses",
        "openseal.runtime.durable_files",  # a directory's entries made durable (artefact files)
        "openseal.canonical",  # RFC 8785 canonical JSON, shared with the compiler
    }
)

#: The API, the CLI and authoring reach the runtime through its one service face (every
#: mutation takes a request object and a ``Caller``) and open the store; nothing else.
RUNTIME_SEAMS: dict[str, frozenset[str]] = {
    layer: frozenset({"openseal.runtime.service", "openseal.runtime.store"})
    for layer in ("api", "cli", "authoring")
}


RUNTIME = "openseal.runtime"
#: the runtime's shared modules, usable by every room
RUNTIME_TOP = frozenset(
    {
        "access", "caller", "clock", "compiled", "durable_files", "event_summary", "faults",
        "health", "id_prefix", "listing", "pricing", "requests", "statuses", "telemetry",
    }
)  # fmt: skip
#: room → the runtime rooms it may import (besides itself and :data:`RUNTIME_TOP`)
ROOMS: dict[str, frozenset[str]] = {
    "store": frozenset(),  # narrower still: STORE_MAY_IMPORT
    # a migration drafts the proposals the moved runs' approvals are asked for
    "governance": frozenset({"store", "actions"}),
    "actions": frozenset({"store"}),
    "providers": frozenset(),
    "engine": frozenset({"store", "actions", "providers"}),
    "lifecycle": frozenset({"store", "actions", "engine"}),
    "replay": frozenset({"store", "actions", "engine", "governance"}),
    "service": frozenset(
        {"store", "actions", "engine", "governance", "lifecycle", "providers", "replay"}
    ),
}
#: the rooms the shared modules may import: they sit under every room, and these two under them
UNDER_TOP = frozenset({"store", "providers"})
#: rooms and shared modules that import less of the runtime than the rest, and what they may
#: import: the pure ``compiled`` view nothing; the providers, under telemetry, only ``compiled``
NARROWER: dict[str, frozenset[str]] = {
    "compiled": frozenset(),
    "providers": frozenset({"compiled"}),
}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # dotted module name
    line: int
    #: for ``from X import a``: the name taken from X when ``X.a`` is not a module
    names: tuple[str, ...] = ()


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str, root: Path) -> bool:
    """Whether dotted ``name`` (under ``root``'s package) is a module or a package."""
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    base = root / relative
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(source: str, importer: str, *, package: bool, root: Path) -> Iterator[Import]:
    """The openseal modules ``source`` (module ``importer``) imports.

    ``from a.b import c`` names module ``a.b.c`` when it is one, else ``a.b``; relative
    imports are resolved against ``importer``.
    """
    here = importer.split(".") if package else importer.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(importer, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                if is_module(candidate, root):
                    yield Import(importer, candidate, node.lineno)
                else:
                    yield Import(importer, module, node.lineno, (alias.name,))


def every_import(root: Path = PACKAGE) -> list[Import]:
    """Every import in the package, of openseal modules and of libraries alike."""
    found: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        source = path.read_text(encoding="utf-8")
        package = path.name == "__init__.py"
        found.extend(imports_of(source, name, package=package, root=root))
    return found


def all_imports(root: Path = PACKAGE) -> list[Import]:
    """The imports of openseal modules."""
    return [
        item
        for item in every_import(root)
        if item.imported == root.name or item.imported.startswith(f"{root.name}.")
    ]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def exported_names(face: Path) -> frozenset[str]:
    """The names a face lists: in ``__all__``, or else as its ``TYPE_CHECKING`` imports (a lazy
    face, :mod:`openseal.lazy_exports`)."""
    tree = ast.parse(face.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    if not any(isinstance(node, ast.If) for node in tree.body):
        return frozenset()
    return frozenset(face_sources(str(face)))


def sql_outside_the_store(imports: list[Import]) -> list[str]:
    return [
        f"{item.importer}:{item.line} imports {item.imported}"
        for item in imports
        if within(item.imported, "sqlalchemy")
        and not within(item.importer, STORE)
        and item.importer not in SQLALCHEMY_EXCEPTIONS
    ]


def store_internals_reached(
    imports: list[Import], public: frozenset[str], testing: frozenset[str] = frozenset()
) -> list[str]:
    """Imports of the store from outside it that take more than its package's public names
    (or, from its crash tests' face ``store.testing``, more than that face's names)."""
    faces = {STORE: public, f"{STORE}.testing": testing}
    found = []
    for item in imports:
        if within(item.importer, STORE) or not within(item.imported, STORE):
            continue
        names = faces.get(item.imported, frozenset())
        private = [name for name in item.names if name not in names]
        if item.imported not in faces or private or not item.names:
            what = f"{item.imported}.{private[0]}" if private else item.imported
            found.append(f"{item.importer}:{item.line} imports {what}")
    return found


def store_dependencies(imports: list[Import]) -> list[str]:
    return [
        f"{item.importer}:{item.line} imports {item.imported}"
        for item in imports
        if within(item.importer, STORE)
        and not within(item.imported, STORE)
        and item.imported not in STORE_MAY_IMPORT
    ]


def layer(module: str) -> str:
    """``openseal.runtime.engine.states.turn`` → ``runtime``; ``openseal`` → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def in_front_half(module: str) -> bool:
    return module != SPANS and any(
        module == part or module.startswith(f"{part}.") for part in FRONT_HALF
    )


def forbidden(imports: list[Import]) -> list[str]:
    return [
        f"{item.importer}:{item.line} imports {item.imported}"
        for item in imports
        if layer(item.imported) in FORBIDDEN.get(layer(item.importer), frozenset())
        or (layer(item.importer) in ("runtime", "runbooks") and in_front_half(item.imported))
    ]


def behind_the_face(imports: list[Import], root: Path = PACKAGE) -> list[Import]:
    """``imports``, each import of names of the compiler's face replaced by imports of the
    modules those names come from."""
    sources = face_sources(str(root / "compiler" / "__init__.py"))
    found: list[Import] = []
    for item in imports:
        if item.imported != COMPILER or not item.names:
            found.append(item)
            continue
        for name in item.names:
            module, attribute = sources.get(name, (COMPILER, name))
            submodule = f"{module}.{attribute}"
            behind = submodule if is_module(submodule, root) else module
            found.append(Import(item.importer, behind, item.line))
    return found


def compiler_face_bypassed(imports: list[Import], root: Path = PACKAGE) -> list[str]:
    """Imports of the compiler from outside it that name a module under the face, or a name
    the face does not list."""
    public = face_sources(str(root / "compiler" / "__init__.py"))
    found = []
    for item in imports:
        if within(item.importer, COMPILER) or not within(item.imported, COMPILER):
            continue
        unlisted = [name for name in item.names if name not in public]
        if item.imported != COMPILER or unlisted:
            what = f"{item.imported}.{unlisted[0]}" if unlisted else item.imported
            found.append(f"{item.importer}:{item.line} imports {what}")
    return found


def compiler_part(module: str) -> str:
    """``openseal.compiler.lang.expr`` → ``lang``; ``openseal.compiler.driver`` → ``driver``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "compiler" else ""


def out_of_stage_order(imports: list[Import]) -> list[str]:
    """Imports by a stage folder of a later stage, or of a driving module."""
    wrong = []
    for item in imports:
        importer, imported = compiler_part(item.importer), compiler_part(item.imported)
        if importer not in STAGES or not imported:
            continue
        allowed = imported in SHARED_TOP or (
            imported in STAGES and STAGES.index(imported) <= STAGES.index(importer)
        )
        if not allowed:
            wrong.append(f"{item.importer}:{item.line} imports {item.imported}")
    return wrong


def stray_compiler_modules(root: Path = PACKAGE) -> list[str]:
    """Top-level compiler modules and folders that are neither a stage nor a driving module."""
    compiler = root / "compiler"
    return sorted(
        path.name
        for path in compiler.iterdir()
        if (path.suffix == ".py" and path.stem not in (*TOP, "__init__"))
        or (path.is_dir() and path.name not in (*STAGES, "__pycache__"))
    )


def new_seams(imports: list[Import]) -> list[str]:
    return [
        f"{item.importer}:{item.line} imports {item.imported}"
        for item in imports
        if layer(item.importer) in RUNTIME_SEAMS
        and layer(item.imported) == "runtime"
        and item.imported != "openseal.runtime"
        and not any(
            item.imported == seam or item.imported.startswith(f"{seam}.")
            for seam in RUNTIME_SEAMS[layer(item.importer)]
        )
    ]


def runtime_part(module: str) -> str:
    """``openseal.runtime.engine.states.turn`` → ``engine``; ``openseal.runtime`` → ``""``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "runtime" else ""


def room_violations(imports: list[Import]) -> list[str]:
    """Imports between the runtime's rooms and shared modules that :data:`ROOMS`,
    :data:`UNDER_TOP` and :data:`NARROWER` do not allow."""
    wrong = []
    for item in imports:
        importer, imported = runtime_part(item.importer), runtime_part(item.imported)
        if not importer or not imported or importer == imported:
            continue
        if importer in NARROWER:
            allowed = NARROWER[importer]
        else:
            allowed = RUNTIME_TOP | ROOMS.get(importer, UNDER_TOP)
        if imported not in allowed:
            wrong.append(f"{item.importer}:{item.line} imports {item.imported}")
    return wrong


def stray_runtime_modules(root: Path = PACKAGE) -> list[str]:
    """Top-level runtime modules and folders that are neither a room nor a shared module."""
    return sorted(
        path.name
        for path in (root / "runtime").iterdir()
        if (path.suffix == ".py" and path.stem not in (*RUNTIME_TOP, "__init__"))
        or (path.is_dir() and path.name not in (*ROOMS, "__pycache__"))
    )


# -- the store's rooms ---------------------------------------------------------------------

#: the store's rooms, lowest first: a room imports only itself and the rooms before it; the
#: top of the store (its face, ``store.py`` that assembles the repositories, the reads without
#: SQLAlchemy) may import them all, and no room imports the top
STORE_ROOMS = ("db", "tables", "repos")
#: modules of ``repos/`` that are no repository: what every repository may share
REPOS_SHARED = frozenset({"repository", "run_rows", "events", "fenced", "carved_budgets"})


def store_part(module: str) -> str:
    """``openseal.runtime.store.repos.runs`` → ``repos.runs``; the top's modules → ``top``."""
    rest = module.removeprefix(STORE).lstrip(".").split(".")
    return ".".join(rest[:2]) if rest[0] in STORE_ROOMS else "top"


def store_room_breaches(imports: list[Import], root: Path = PACKAGE) -> list[str]:
    """Imports inside the store that go up a room (or to its top), or from one repository to
    another; each as ``<importer part> imports <imported part>``."""
    found = set()
    repositories = repository_modules(root)
    for item in imports:
        if not (within(item.importer, STORE) and within(item.imported, STORE)):
            continue
        importer, imported = store_part(item.importer), store_part(item.imported)
        if importer == "top" or importer == imported:
            continue
        room = STORE_ROOMS.index(importer.split(".")[0])
        up = imported == "top" or STORE_ROOMS.index(imported.split(".")[0]) > room
        sibling = importer in repositories and imported in repositories
        if up or sibling:
            found.add(f"{importer} imports {imported}")
    return sorted(found)


def repository_modules(root: Path = PACKAGE) -> frozenset[str]:
    """``repos.<name>`` for each module of ``repos/`` but the shared ones."""
    folder = root / "runtime" / "store" / "repos"
    return frozenset(
        f"repos.{path.stem}"
        for path in folder.glob("*.py")
        if path.stem != "__init__" and path.stem not in REPOS_SHARED
    )


def repository_names(root: Path = PACKAGE) -> set[str]:
    """The store's repositories: what its ``store.py`` sets as ``self.<name> = <Class>(...)``."""
    names = set()
    for node in ast.walk(ast.parse((root / "runtime" / "store" / "store.py").read_text())):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and isinstance(node.value.func, ast.Name)
                    and node.value.func.id[:1].isupper()
                ):
                    names.add(target.attr)
    return names


def sibling_calls(root: Path = PACKAGE) -> list[str]:
    """``self._store.<repository>`` (or ``self.store.<repository>``) in ``repos/``: one
    repository reaching another through the store instead of its caller deciding."""
    names = repository_names(root)
    found = set()
    for path in sorted((root / "runtime" / "store" / "repos").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in names
                and isinstance(node.value, ast.Attribute)
                and node.value.attr in ("_store", "store")
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
            ):
                found.add(f"repos.{path.stem} calls {node.attr}")
    return sorted(found)


def store_cycles(imports: list[Import]) -> list[list[str]]:
    """The import cycles among the store's modules (every import counts, lazy ones too)."""
    graph: dict[str, set[str]] = {}
    for item in imports:
        inside = within(item.importer, STORE) and within(item.imported, STORE)
        if inside and item.importer != item.imported and item.imported != STORE:
            graph.setdefault(item.importer, set()).add(item.imported)
    return sorted(sorted(c) for c in strongly_connected(graph) if len(c) > 1)


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in graph.get(node, ()):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                component.add(top)
                if top == node:
                    break
            found.append(component)

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


#: the longest a function of the store may be, in lines (its docstring included)
STORE_FUNCTION_LINES = 60


def long_store_functions(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted((root / "runtime" / "store").rglob("*.py")):
        if "versions" in path.parts:  # Alembic's migration scripts are written once
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > STORE_FUNCTION_LINES:
                    found.append(f"{store_part(module_name(path, root))}.{node.name}")
    return found


def test_no_forbidden_import() -> None:
    assert forbidden(behind_the_face(all_imports())) == []


def test_outside_the_compiler_only_its_face_is_imported() -> None:
    assert compiler_face_bypassed(all_imports()) == []


def test_compiler_stages_import_only_earlier_stages() -> None:
    assert out_of_stage_order(all_imports()) == []


def test_the_compiler_top_level_holds_only_the_driving_modules() -> None:
    assert stray_compiler_modules() == []


def test_runtime_rooms_import_only_the_rooms_they_list() -> None:
    assert room_violations(all_imports()) == []


def test_the_runtime_top_level_holds_only_rooms_and_shared_modules() -> None:
    assert stray_runtime_modules() == []


def test_api_and_cli_reach_the_runtime_only_through_the_listed_modules() -> None:
    assert new_seams(all_imports()) == []


def test_only_the_store_imports_sqlalchemy() -> None:
    assert sql_outside_the_store(every_import()) == []


def test_outside_the_store_only_its_public_names_are_imported() -> None:
    public = exported_names(PACKAGE / "runtime" / "store" / "__init__.py")
    testing = exported_names(PACKAGE / "runtime" / "store" / "testing.py")
    assert store_internals_reached(all_imports(), public, testing) == []


def test_the_store_imports_nothing_of_the_runtime_above_it() -> None:
    assert store_dependencies(all_imports()) == []


def test_every_listed_seam_is_still_used() -> None:
    """A seam that is no longer crossed is removed from the list, so the list stays true."""
    used = {
        (layer(item.importer), seam)
        for item in all_imports()
        for seam in RUNTIME_SEAMS.get(layer(item.importer), frozenset())
        if item.imported == seam or item.imported.startswith(f"{seam}.")
    }
    unused = {(owner, seam) for owner, seams in RUNTIME_SEAMS.items() for seam in seams} - used
    assert unused == set()


# -- the scanner itself ------------------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "openseal"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "source",
    [
        "import openseal.runtime.store\n",
        "from openseal.runtime import store\n",
        "from openseal.runtime.store import Store\n",
        "from ..runtime.store import Store\n",
        "def later():\n    from openseal.runtime.store import Store\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..runtime import store\n",
    ],
)
def test_a_compiler_import_of_the_runtime_is_caught_in_every_form(
    tmp_path: Path, source: str
) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "compiler/__init__.py": "",
            "compiler/resolve.py": source,
            "runtime/__init__.py": "",
            "runtime/store.py": "class Store: ...\n",
        },
    )
    assert forbidden(all_imports(root)) == [
        f"openseal.compiler.resolve:{source.count(chr(10))} imports openseal.runtime.store"
    ]


def test_a_runtime_import_of_a_loader_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "compiler/__init__.py": "",
            "compiler/definitions/__init__.py": "",
            "compiler/definitions/specs.py": "",
            "compiler/syntax/__init__.py": "",
            "compiler/syntax/load_hcl.py": "",
            "compiler/syntax/spans.py": "",
            "runtime/__init__.py": "",
            "runtime/compiled.py": (
                "from openseal.compiler.syntax import load_hcl, spans\n"
                "from openseal.compiler.definitions import specs\n"
            ),
        },
    )
    assert forbidden(all_imports(root)) == [
        "openseal.runtime.compiled:1 imports openseal.compiler.syntax.load_hcl"
    ]


def test_a_stage_importing_a_later_stage_or_the_driver_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "compiler/__init__.py": "",
            "compiler/driver.py": "",
            "compiler/diagnostics.py": "",
            "compiler/syntax/__init__.py": "",
            "compiler/syntax/fold.py": (
                "from openseal.compiler import diagnostics\n"
                "from openseal.compiler.analysis import build\n"
            ),
            "compiler/analysis/__init__.py": "",
            "compiler/analysis/build.py": (
                "from openseal.compiler.syntax import fold\nfrom openseal.compiler import driver\n"
            ),
        },
    )
    assert out_of_stage_order(all_imports(root)) == [
        "openseal.compiler.analysis.build:2 imports openseal.compiler.driver",
        "openseal.compiler.syntax.fold:2 imports openseal.compiler.analysis.build",
    ]


def test_a_new_flat_compiler_module_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"compiler/__init__.py": "", "compiler/driver.py": "", "compiler/helpers.py": ""},
    )
    (root / "compiler" / "misc").mkdir()
    assert stray_compiler_modules(root) == ["helpers.py", "misc"]


def test_a_new_runtime_module_imported_by_the_api_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "api/__init__.py": "from openseal.runtime import service\n",
            "api/routes.py": "from openseal.runtime.leases import Leases\n",
            "runtime/__init__.py": "",
            "runtime/service.py": "",
            "runtime/leases.py": "class Leases: ...\n",
        },
    )
    assert new_seams(all_imports(root)) == ["openseal.api.routes:1 imports openseal.runtime.leases"]


def test_sql_and_store_internals_outside_the_store_are_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "runtime/__init__.py": "",
            "runtime/store/__init__.py": '__all__ = ["Store"]\nclass Store: ...\n',
            "runtime/store/schema.py": "import sqlalchemy as sa\n",
            "runtime/engine.py": (
                "import sqlalchemy\n"
                "from openseal.runtime.store import Store\n"
                "from openseal.runtime.store import schema\n"
                "from openseal.runtime.store import runs_table\n"
                "import openseal.runtime.store\n"
            ),
            "api/__init__.py": "",
            "api/errors.py": "from sqlalchemy import exc\n",
        },
    )
    imports = every_import(root)
    assert sql_outside_the_store(imports) == ["openseal.runtime.engine:1 imports sqlalchemy"]
    public = exported_names(root / "runtime" / "store" / "__init__.py")
    assert store_internals_reached(all_imports(root), public) == [
        "openseal.runtime.engine:3 imports openseal.runtime.store.schema",
        "openseal.runtime.engine:4 imports openseal.runtime.store.runs_table",
        "openseal.runtime.engine:5 imports openseal.runtime.store",
    ]


def test_a_store_import_of_the_runtime_above_it_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "runtime/__init__.py": "",
            "runtime/clock.py": "",
            "runtime/approvals.py": "",
            "runtime/store/__init__.py": "",
            "runtime/store/runs.py": (
                "from openseal.runtime.clock import iso\nfrom openseal.runtime import approvals\n"
            ),
        },
    )
    assert store_dependencies(all_imports(root)) == [
        "openseal.runtime.store.runs:2 imports openseal.runtime.approvals"
    ]


def test_a_room_reaching_into_the_engine_or_an_impure_compiled_view_is_caught(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "runtime/__init__.py": "",
            "runtime/clock.py": "",
            "runtime/compiled.py": "from openseal.runtime import clock\n",
            "runtime/engine/__init__.py": "",
            "runtime/engine/turns.py": "from openseal.runtime.actions import admission\n",
            "runtime/actions/__init__.py": "",
            "runtime/actions/admission.py": (
                "from openseal.runtime.engine import turns\nfrom openseal.runtime import clock\n"
            ),
            "runtime/misc.py": "",
        },
    )
    assert room_violations(all_imports(root)) == [
        "openseal.runtime.actions.admission:1 imports openseal.runtime.engine.turns",
        "openseal.runtime.compiled:1 imports openseal.runtime.clock",
    ]
    assert stray_runtime_modules(root) == ["misc.py"]


def test_telemetry_reaching_into_the_engine_or_providers_reaching_up_is_caught(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "runtime/__init__.py": "",
            "runtime/compiled.py": "",
            "runtime/telemetry.py": (
                "from openseal.runtime.providers import ModelProvider\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from openseal.runtime.engine.turns import TurnReport\n"
            ),
            "runtime/engine/__init__.py": "",
            "runtime/engine/turns.py": "from openseal.runtime.providers import base\n",
            "runtime/providers/__init__.py": "class ModelProvider: ...\n",
            "runtime/providers/base.py": (
                "from openseal.runtime.compiled import AgentProfile\n"
                "from openseal.runtime.engine import turns\n"
                "from openseal.runtime import telemetry\n"
                "from openseal.runtime.store import Claim\n"
            ),
            "runtime/store/__init__.py": "class Claim: ...\n",
        },
    )
    assert room_violations(all_imports(root)) == [
        "openseal.runtime.providers.base:2 imports openseal.runtime.engine.turns",
        "openseal.runtime.providers.base:3 imports openseal.runtime.telemetry",
        "openseal.runtime.providers.base:4 imports openseal.runtime.store",
        "openseal.runtime.telemetry:4 imports openseal.runtime.engine.turns",
    ]


def test_a_deep_compiler_import_and_a_loader_through_the_face_are_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "compiler/__init__.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from openseal.compiler.pipeline import compile_paths as compile_paths\n"
                "    from openseal.compiler.lang import expr as expr\n"
            ),
            "compiler/pipeline.py": "def compile_paths(): ...\n",
            "compiler/lang/__init__.py": "",
            "compiler/lang/expr.py": "def parse(): ...\n",
            "cli/__init__.py": "",
            "cli/compile.py": (
                "from openseal.compiler import compile_paths\n"
                "from openseal.compiler.pipeline import compile_paths\n"
                "from openseal.compiler import cache\n"
                "from openseal import compiler\n"
            ),
            "runtime/__init__.py": "",
            "runtime/compiled.py": (
                "from openseal.compiler import expr\nfrom openseal.compiler import compile_paths\n"
            ),
        },
    )
    imports = all_imports(root)
    assert compiler_face_bypassed(imports, root) == [
        "openseal.cli.compile:2 imports openseal.compiler.pipeline",
        "openseal.cli.compile:3 imports openseal.compiler.cache",
    ]
    assert forbidden(behind_the_face(imports, root)) == [
        "openseal.runtime.compiled:2 imports openseal.compiler.pipeline"
    ]


def test_store_rooms_import_only_the_rooms_below_and_no_repository_another() -> None:
    """db/ imports nothing of tables/ or repos/, tables/ nothing of repos/, no room the store's
    top, and no repository another repository (they share only :data:`REPOS_SHARED`)."""
    assert store_room_breaches(all_imports()) == []


def test_no_repository_calls_another_through_the_store() -> None:
    """A cascade over several repositories is decided above the store, which calls each with
    one transaction (``openseal.runtime.engine.cascade``)."""
    assert sibling_calls() == []


def test_the_store_has_no_import_cycle() -> None:
    assert store_cycles(all_imports()) == []


def test_no_store_function_is_longer_than_the_limit() -> None:
    assert long_store_functions() == []


def test_store_room_breaches_sibling_calls_and_cycles_are_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "runtime/__init__.py": "",
            "runtime/store/__init__.py": "",
            "runtime/store/store.py": (
                "from openseal.runtime.store.repos import runs\n"
                "class Store:\n"
                "    def __init__(self):\n"
                "        self.runs = runs.Runs(self)\n"
                "        self.actions = Actions(self)\n"
            ),
            "runtime/store/db/__init__.py": "",
            "runtime/store/db/base.py": "from openseal.runtime.store.tables import schema\n",
            "runtime/store/tables/__init__.py": "",
            "runtime/store/tables/schema.py": "from openseal.runtime.store.db import base\n",
            "runtime/store/repos/__init__.py": "",
            "runtime/store/repos/events.py": "",
            "runtime/store/repos/runs.py": (
                "from openseal.runtime.store.repos import events, actions\n"
                "class Runs:\n"
                "    def cancel(self):\n"
                "        self._store.actions.cancel_for_run()\n"
            ),
            "runtime/store/repos/actions.py": "from openseal.runtime.store import store\n",
        },
    )
    imports = all_imports(root)
    assert store_room_breaches(imports, root) == [
        "db.base imports tables.schema",
        "repos.actions imports top",
        "repos.runs imports repos.actions",
    ]
    assert sibling_calls(root) == ["repos.runs calls actions"]
    assert store_cycles(imports) == [
        ["openseal.runtime.store.db.base", "openseal.runtime.store.tables.schema"],
        [
            "openseal.runtime.store.repos.actions",
            "openseal.runtime.store.repos.runs",
            "openseal.runtime.store.store",
        ],
    ]
