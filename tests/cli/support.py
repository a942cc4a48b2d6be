"""What the CLI tests share: ``openseal`` run in-process against a store of either backend
(the ``cli`` fixture), that store with a small workflow registered (``store``), and helpers."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.cli.main import main
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import ScriptedProvider, fixed
from openseal.runtime.store import Store
from tests.runtime.conftest import backend, pg_admin  # noqa: F401  (fixtures)
from tests.runtime.engine_support import PICK_7, register, small_workflow
from tests.runtime.support import Backend


class Cli:
    def __init__(self, opened: Backend, capsys: pytest.CaptureFixture[str]) -> None:
        self.home = str(opened.home)
        self.capsys = capsys

    def __call__(self, *args: str, words: int = 2) -> tuple[int, str, str]:
        """``openseal ARGS`` in-process, ``--home`` placed after the command's words: the
        group and its command, or ``words`` of them for a group of groups (3: ``db recovery
        status``), as many as ``ARGS`` starts with."""
        self.capsys.readouterr()
        named = 1
        while named < min(words, len(args)) and not args[named].startswith("-"):
            named += 1
        code = main([*args[:named], "--home", self.home, *args[named:]])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str, words: int = 2) -> object:
        code, out, err = self(*args, "--output", "json", words=words)
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(
    backend: Backend,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Cli:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        monkeypatch.setenv("OPENSEAL_DATABASE_URL", f"{backend.url}?options={options}")
    return Cli(backend, capsys)


@pytest.fixture
def store(cli: Cli, backend: Backend, tmp_path: Path) -> Store:  # noqa: F811
    assert cli("db", "upgrade")[0] == 0
    opened = backend.open()
    register(opened, small_workflow(tmp_path))
    return opened


def work(store: Store, responses: dict[str, list[dict[str, object]]] = PICK_7) -> None:
    Engine(store, fixed(ScriptedProvider(responses)), worker_id="cli-test").run_until_idle()


def create(cli: Cli, n: str = "5") -> str:
    created = cli.json("objectives", "create", "--workflow", "small", "--input", f"n={n}")
    assert isinstance(created, dict) and created["created"] is True
    return str(created["run"]["id"])
