"""Every error code is declared once in :mod:`openseal.error_codes`, and everything answers from it.

The scan reads ``openseal/`` with ``ast`` and collects the code literals errors are made of:

- ``code="..."`` passed to any call (``StoreError(..., code="busy")``);
- ``code = "..."`` assigned anywhere, class attributes included, and every string a
  ``code = ...`` expression can pick (``{...}.get(status, "already_decided")``);
- ``ApiError(<status>, "<code>", ...)`` and ``error_response(<status>, "<code>", ...)``,
  whose status must also be the registry's;
- the values of a mapping named ``*_CODES`` (``{401: "unauthorized"}``);
- the first item of each ``return "<code>", message`` in a function documented as returning
  ``(code, ...)``.

Compiler diagnostic codes (``OS201``) are another vocabulary (docs/diagnostics.md) and are
left out, as are the refusal codes a model reads in a tool result.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

import openseal
from openseal.api.errors import ApiError, from_openseal
from openseal.cli import main as cli_main
from openseal.error_codes import (
    BEGIN,
    END,
    REGISTRY,
    USAGE,
    exit_code,
    http_status,
    render_document,
)
from openseal.errors import ClaimLost, OpenSealError, StoreError, UsageError

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "openseal"
DOC = ROOT / "docs" / "errors.md"
DIAGNOSTIC = re.compile(r"^OS\d+$")
STATUS_CALLS = frozenset({"ApiError", "error_response"})


@dataclass(frozen=True)
class Literal:
    code: str
    where: str
    status: int | None = None  # the HTTP status written beside it, if any


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The strings expression ``node`` can evaluate to: a constant, either branch of a
    conditional, the values of a mapping, what ``mapping.get(key, default)`` can answer."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)
    elif isinstance(node, ast.BoolOp | ast.Dict):
        for value in node.values:
            yield from _strings(value)
    elif isinstance(node, ast.Call) and _name(node.func) == "get":
        assert isinstance(node.func, ast.Attribute)
        yield from _strings(node.func.value)
        if len(node.args) > 1:
            yield from _strings(node.args[1])


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _assigned(target: ast.AST, value: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
        for one, other in zip(target.elts, value.elts, strict=False):
            yield from _assigned(one, other)
    elif (name := _name(target)) is not None:
        yield name, value


def literals(source: str, where: str) -> Iterator[Literal]:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "code":
                    yield from (Literal(s, line) for s in _strings(keyword.value))
            args = node.args
            if _name(node.func) in STATUS_CALLS and len(args) >= 2:
                status, code = args[0], args[1]
                if isinstance(code, ast.Constant) and isinstance(code.value, str):
                    number = status.value if isinstance(status, ast.Constant) else None
                    yield Literal(code.value, line, number if isinstance(number, int) else None)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name, value in _assigned(target, node.value):
                    if name == "code" or (name.endswith("_CODES") and isinstance(value, ast.Dict)):
                        yield from (Literal(s, line) for s in _strings(value))
        elif isinstance(node, ast.FunctionDef) and (ast.get_docstring(node) or "").startswith(
            "``(code,"
        ):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Tuple):
                    first = sub.value.elts[0]
                    if isinstance(first, ast.Constant) and isinstance(first.value, str):
                        yield Literal(first.value, f"{where}:{sub.lineno}")


def all_literals() -> list[Literal]:
    found: list[Literal] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        found.extend(literals(path.read_text(encoding="utf-8"), where))
    return [item for item in found if not DIAGNOSTIC.match(item.code)]


def test_every_code_literal_is_registered() -> None:
    unregistered = [
        f"{item.where}: {item.code}" for item in all_literals() if item.code not in REGISTRY
    ]
    assert unregistered == [], "declare these in openseal/error_codes.py"


def test_every_status_written_beside_a_code_is_the_registrys() -> None:
    wrong = [
        f"{item.where}: {item.code} answered {item.status}, registered {http_status(item.code)}"
        for item in all_literals()
        if item.status is not None and item.code in REGISTRY
        if item.status != http_status(item.code)
    ]
    assert wrong == []


def test_the_scan_finds_codes_in_every_form() -> None:
    source = '''
class Refused(OpenSealError):
    code = "class_attribute"

def f(status):
    raise StoreError("x", code="keyword")
    code = {1: "from_mapping"}.get(status, "default_of_get")
    code = "when_true" if status else "when_false"
    code = main(args=[], prog_name="not_a_code")
    raise ApiError(409, "api_error", "m")
    return error_response(422, "error_response", "m")

_HTTP_CODES = {404: "mapped"}

def describe(exc):
    """``(code, message)`` for a failure."""
    return "returned", "message"
'''
    found = {(item.code, item.status) for item in literals(source, "example.py")}
    assert found == {
        ("class_attribute", None),
        ("keyword", None),
        ("from_mapping", None),
        ("default_of_get", None),
        ("when_true", None),
        ("when_false", None),
        ("api_error", 409),
        ("error_response", 422),
        ("mapped", None),
        ("returned", None),
    }


def _error_classes() -> list[type[OpenSealError | ClaimLost]]:
    for module in pkgutil.walk_packages(openseal.__path__, "openseal."):
        if not module.name.startswith(
            "openseal.runtime.store.tables.migrations."
        ):  # Alembic's scripts
            importlib.import_module(module.name)
    seen: list[type[OpenSealError | ClaimLost]] = []
    stack: list[type[OpenSealError | ClaimLost]] = [OpenSealError, ClaimLost]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen


def test_every_error_class_has_a_registered_code() -> None:
    unregistered = [f"{cls.__module__}.{cls.__qualname__}: {cls.code}"
                    for cls in _error_classes() if cls.code not in REGISTRY]  # fmt: skip
    assert unregistered == []


def test_the_registry_is_well_formed() -> None:
    for entry in REGISTRY.values():
        assert re.fullmatch(r"[a-z][a-z_]*", entry.code), entry
        assert 400 <= entry.http < 600, entry
        assert entry.exit in {1, USAGE}, entry
        assert entry.meaning.endswith(".") and "\n" not in entry.meaning, entry
    assert exit_code("usage_error") == exit_code("invalid_request") == USAGE


# -- the API and the CLI answer from the registry -----------------------------------------


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_the_api_answers_each_code_with_its_registered_status(code: str) -> None:
    response = from_openseal(StoreError("refused", code=code))
    assert response.status_code == http_status(code)


def test_an_unregistered_code_is_an_internal_error_not_a_400() -> None:
    assert from_openseal(StoreError("refused", code="never_declared")).status_code == 500


def test_the_api_reports_a_usage_error_as_invalid_request() -> None:
    response = from_openseal(UsageError("bad"))
    assert response.status_code == 422
    assert b'"invalid_request"' in response.body


def test_api_errors_are_under_the_one_root() -> None:
    error = ApiError(404, "not_found", "no such run")
    assert isinstance(error, OpenSealError)
    assert (error.code, error.message, str(error)) == ("not_found", "no such run", "no such run")


@pytest.mark.parametrize(
    ("code", "expected"),
    [("usage_error", 2), ("input_usage", 2), ("stale_revision", 1), ("busy", 1)],
)
def test_the_cli_exits_with_the_registered_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: str, expected: int
) -> None:
    @click.command()
    def failing() -> None:
        raise StoreError("refused", code=code)

    monkeypatch.setattr(cli_main, "cli", failing)
    assert cli_main.main([]) == expected == exit_code(code)
    assert capsys.readouterr().err == "error: refused\n"


# -- docs/errors.md ------------------------------------------------------------------------


def test_docs_errors_md_is_the_rendered_registry() -> None:
    current = DOC.read_text(encoding="utf-8")
    assert current == render_document(current), (
        "docs/errors.md drifted from openseal/error_codes.py; run `make errors` and commit it"
    )
    for code in REGISTRY:
        assert f"| `{code}` |" in current


def test_rendering_replaces_only_the_generated_section() -> None:
    stale = f"# Title\n\nprose\n\n{BEGIN}\n| `gone` | 400 | 1 | old |\n{END}\n\nmore prose\n"
    rendered = render_document(stale)
    assert rendered.startswith("# Title\n\nprose\n\n")
    assert rendered.endswith(f"{END}\n\nmore prose\n")
    assert "`gone`" not in rendered
    assert "| `stale_revision` | 409 | 1 |" in rendered
