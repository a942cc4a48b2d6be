"""A fast start: ``openseal --help`` and ``validate`` import neither SQLAlchemy, Alembic nor
FastAPI; a store already at the newest schema opens without importing Alembic; listing runs
imports nothing of the engine, and on SQLite not SQLAlchemy either; and the help listing's
summaries are each command's own (start-up times are measured in bench/startup.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from openseal.cli.main import COMMANDS, SUMMARIES, cli
from openseal.runtime.store import open_store
from openseal.runtime.store.tables.migrations import head_revision, packaged_head
from tests.runtime.support import new_run

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("alembic", "sqlalchemy", "fastapi", "openai")
#: what reading runs from the store never needs: the engine room, the model providers, the
#: compiler, the skills and the clients they bring in (psycopg only for PostgreSQL)
ENGINE = (
    "openseal.runtime.engine", "openseal.runtime.actions", "openseal.runtime.governance",
    "openseal.runtime.providers", "openseal.runtime.compiled", "openseal.compiler",
    "openseal.skills", "openai", "httpx", "networkx", "jsonschema", "psycopg",
)  # fmt: skip


def imported(
    args: list[str], env: dict[str, str] | None = None, watched: tuple[str, ...] = HEAVY
) -> list[str]:
    """The ``watched`` modules (and their submodules) a fresh interpreter has imported after
    ``openseal ARGS``."""
    script = (
        "import sys\nfrom openseal.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"print('MODULES', __import__('json').dumps(sorted(m for m in sys.modules if any("
        f"m == w or m.startswith(w + '.') for w in {watched!r}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env,
        timeout=120,
    )  # fmt: skip
    line = [x for x in done.stdout.splitlines() if x.startswith("MODULES ")][-1]
    return list(json.loads(line.removeprefix("MODULES ")))


def test_help_and_validate_import_nothing_heavy() -> None:
    assert imported(["--help"]) == []
    assert imported(["validate", "definitions/procurement/hcl"]) == []


def test_a_store_at_the_newest_schema_opens_without_alembic(tmp_path: Path) -> None:
    open_store(home=tmp_path).close()  # creates and migrates it
    env = {"PATH": "/usr/bin:/bin", "OPENSEAL_HOME": str(tmp_path), "HOME": str(tmp_path)}
    found = imported(["objectives", "list"], env)
    assert "sqlalchemy" in found
    assert "alembic" not in found and "fastapi" not in found and "openai" not in found


def test_listing_runs_imports_nothing_of_the_engine_nor_sqlalchemy_on_sqlite(
    tmp_path: Path,
) -> None:
    store = open_store(home=tmp_path)
    new_run(store)  # a run to list, whose workflow's name is looked up
    store.close()
    env = {"PATH": "/usr/bin:/bin", "OPENSEAL_HOME": str(tmp_path), "HOME": str(tmp_path)}
    assert imported(["runs", "list"], env, (*ENGINE, *HEAVY)) == []
    # the probe sees the engine when a command does import it
    assert "openseal.runtime.engine.catalog" in imported(["runs", "show", "nope"], env, ENGINE)


def test_the_packaged_head_is_alembic_s_head() -> None:
    assert packaged_head() == head_revision()


def test_every_command_s_summary_is_its_own_help() -> None:
    assert set(SUMMARIES) == set(COMMANDS), "add the command's first help line to SUMMARIES"
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        for limit in (40, 60, 200):
            listed = click.Command(None, help=SUMMARIES[name]).get_short_help_str(limit)
            assert listed == command.get_short_help_str(limit), name


def _helps() -> dict[str, list[list[str]]]:
    """Each command → ``--help`` of it and of each of its subcommands (for a group)."""
    ctx = click.Context(cli)
    helps = {}
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        helps[name] = [[name, "--help"]]
        if isinstance(command, click.Group):
            helps[name] += [[name, sub, "--help"] for sub in sorted(command.commands)]
    return helps


@pytest.mark.slow  # one interpreter per command
def test_help_of_every_command_imports_no_server_database_or_model_client() -> None:
    """``openseal serve --help`` (and every other command's and subcommand's) reads only the
    command's own module: FastAPI, uvicorn, the OpenAI client, SQLAlchemy, Alembic and the
    compiler's libraries wait until a command runs. One interpreter per command, as a user's
    shell starts one."""
    watched = (*HEAVY, "uvicorn", "starlette", "pydantic", "lark", "networkx", "httpx")
    script = (
        "import io, json, sys, contextlib\nfrom openseal.cli.main import main\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n        main(args)\n"
        f"print('MODULES', json.dumps(sorted(m for m in sys.modules if any("
        f"m == w or m.startswith(w + '.') for w in {watched!r}))))"
    )
    heavy = {}
    for name, helps in _helps().items():
        done = subprocess.run(
            [sys.executable, "-c", script, json.dumps(helps)], capture_output=True, text=True,
            cwd=ROOT, timeout=120,
        )  # fmt: skip
        line = [x for x in done.stdout.splitlines() if x.startswith("MODULES ")][-1]
        imported_now = json.loads(line.removeprefix("MODULES "))
        if imported_now:
            heavy[name] = sorted({m.split(".")[0] for m in imported_now})
    assert heavy == {}
