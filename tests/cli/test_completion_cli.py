"""Shell completion offers what a person types: the handles of the newest records for every
argument that names one, and the values of ``--status``. Run as the shell runs it (click's
``_OPENSEAL_COMPLETE`` protocol) against a store a quickstart filled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from openseal.cli.main import cli
from openseal.cli.output import handle
from tests.doc_pages import ROOT

#: the arguments that name a record by its id (or a handle, or a prefix)
ID_ARGUMENTS = {"run_id", "objective_id", "ref", "action_id", "request_id", "proposal_id",
                "token_id"}  # fmt: skip


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def test_every_argument_that_names_a_record_completes_it() -> None:
    named = [
        (name, param.name)
        for name, command in commands(cli)
        for param in command.params
        if isinstance(param, click.Argument) and param.name in ID_ARGUMENTS
    ]
    assert len(named) >= 30  # every show, decision and step of every kind
    missing = [
        f"{name} {param.name}"
        for name, command in commands(cli)
        for param in command.params
        if isinstance(param, click.Argument) and param.name in ID_ARGUMENTS
        if param._custom_shell_complete is None
    ]
    assert not missing, missing


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("completion")
    done = subprocess.run(
        [sys.executable, "-m", "openseal", "quickstart", "--home", str(base / "home"),
         "--definitions", str(ROOT / "definitions" / "procurement" / "hcl")],
        cwd=base, env=_env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return base / "home"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def complete(home: Path, words: str) -> list[str]:
    """What bash is offered for the last (empty) word of ``words``."""
    env = {**_env(), "_OPENSEAL_COMPLETE": "bash_complete", "COMP_WORDS": f"openseal {words} ",
           "COMP_CWORD": str(len(words.split()) + 1), "OPENSEAL_HOME": str(home)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", "from openseal.cli.main import main; main()"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines()]


def ids(home: Path, *words: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "openseal", *words, "--home", str(home), "-o", "json"],
        env=_env(), capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return [item["id"] for item in json.loads(done.stdout)]


def test_completion_offers_the_handles_a_list_prints(home: Path) -> None:
    [run] = ids(home, "runs", "list")
    [approval] = ids(home, "approvals", "list")
    [action] = ids(home, "actions", "list")
    assert complete(home, "runs show") == [handle(run)]
    assert complete(home, "runs events") == [handle(run)]
    assert complete(home, "approvals approve") == [handle(approval)]
    assert complete(home, "actions show") == [handle(action)]
    assert complete(home, "approvals list --run") == [handle(run)]
    assert "waiting_for_approval" in complete(home, "runs list --status")
    # the handle offered is one the command takes
    done = subprocess.run(
        [sys.executable, "-m", "openseal", "runs", "show", handle(run), "--home", str(home)],
        env=_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith(f"run {run}  completed"), done.stderr
