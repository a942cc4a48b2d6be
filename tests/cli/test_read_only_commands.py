"""Commands that only read open the store read-only: they work on a healthy store (SQLite and
PostgreSQL, in-process through ``main``) and never migrate a SQLite store at an older schema,
refusing it (``schema_outdated``) and leaving the file as it was."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import sqlalchemy as sa

from openseal.cli.main import main
from openseal.cli.runtime import complete_ids
from openseal.runtime.store.tables import migrations
from tests.cli.support import Cli
from tests.runtime.support import Backend
from tests.runtime.trigger_support import EVENT_TRIGGER, deploy_triggers, schedule, trigger_project

#: every command that only reads, with what it needs after its group and verb
READS = [
    ["runs", "list"],
    ["runs", "show", "{run}"],
    ["runs", "events", "{run}"],
    ["runs", "turns", "{run}"],
    ["objectives", "list"],
    ["objectives", "show", "{objective}"],
    ["approvals", "list"],
    ["actions", "list"],
    ["requests", "list"],
    ["proposals", "list"],
    ["triggers", "list"],
    ["triggers", "show", "hourly"],
    ["deployments", "list"],
    ["deployments", "show", "small"],
    ["deployments", "history", "small"],
    ["tokens", "list"],
]
#: reads of one record, asked about one that does not exist
MISSING = [
    ["approvals", "show", "0123456789"],
    ["actions", "show", "0123456789"],
    ["requests", "show", "0123456789"],
    ["proposals", "show", "0123456789"],
]
#: the revision before the packaged head
OLDER = "0013"


def test_each_read_command_works_on_a_healthy_store(
    cli: Cli,
    backend: Backend,
    tmp_path: Path,
) -> None:
    assert cli("db", "upgrade")[0] == 0
    deploy_triggers(backend.open(), trigger_project(tmp_path, schedule() + EVENT_TRIGGER))
    created = cli.json("objectives", "create", "--workflow", "small", "--input", "n=5")
    assert isinstance(created, dict)
    ids = {"run": created["run"]["id"], "objective": created["objective"]["id"]}
    for command in READS:
        args = [arg.format(**ids) for arg in command]
        code, out, err = cli(*args, "--output", "json")
        assert code == 0, (command, err)
        json.loads(out)
    for command in MISSING:
        code, out, err = cli(*command, "--output", "json")
        assert code == 1 and '"not_found"' in out + err, (command, out, err)


def _older_store(home: Path) -> Path:
    home.mkdir()
    database = home / "openseal.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        assert migrations.upgrade(engine, OLDER) == OLDER
    finally:
        engine.dispose()
    return database


def _revision(database: Path) -> str | None:
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        return migrations.current_revision(engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize("command", [*READS, *MISSING], ids=" ".join)
def test_a_read_command_never_migrates_an_older_sqlite_store(
    tmp_path: Path,
    command: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    database = _older_store(tmp_path / "home")
    before = database.read_bytes()
    group, verb, *rest = (arg.format(run="0123456789", objective="0123456789") for arg in command)
    code = main([group, verb, "--home", str(database.parent), *rest, "--output", "json"])
    out, err = capsys.readouterr()
    assert code == 1 and '"schema_outdated"' in out + err, (out, err)
    assert "openseal db upgrade" in out + err
    assert database.read_bytes() == before
    assert _revision(database) == OLDER


def test_completion_never_migrates_an_older_sqlite_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENSEAL_DATABASE_URL", raising=False)
    database = _older_store(tmp_path / "home")
    before = database.read_bytes()
    context = click.Context(click.Command("show"))
    context.params = {"home": str(database.parent)}
    assert complete_ids("run")(context, click.Argument(["run_id"]), "") == []
    assert database.read_bytes() == before
    assert _revision(database) == OLDER
