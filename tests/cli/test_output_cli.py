"""One output vocabulary for every command: ``-o/--output text|json|yaml``, ``--out PATH``
for files, the API's error object on failure, and ids by unique prefix."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from openseal.cli.main import COMMANDS, main
from openseal.cli.main import cli as root
from openseal.cli.output import OutputFormat
from openseal.runtime.store import Store
from tests.cli.support import Cli, create

ROOT = Path(__file__).resolve().parents[2]
PROCUREMENT = ROOT / "definitions" / "procurement" / "hcl"

#: commands that print nothing but logs, or a drawing/outputs in text mode only
_NO_RESULT = {"worker", "completion"}


def _leaves() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(root)
    for name in COMMANDS:
        command = root.get_command(ctx, name)
        assert command is not None
        yield from _within(name, command)


def _within(path: str, command: click.Command) -> Iterator[tuple[str, click.Command]]:
    """The commands a person runs under ``command``, however deep its groups go."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _within(f"{path} {sub.name}", sub)
    else:
        yield path, command


def test_every_command_takes_the_same_output_option() -> None:
    missing, different = [], []
    for path, command in _leaves():
        options = {p.name: p for p in command.params if isinstance(p, click.Option)}
        output = options.get("output")
        if output is None:
            if path not in _NO_RESULT:
                missing.append(path)
            continue
        if not isinstance(output.type, OutputFormat) or "-o" not in output.opts:
            different.append(path)
        for param in command.params:  # `-o` means --output and nothing else
            if param is not output and "-o" in getattr(param, "opts", ()):
                different.append(f"{path} ({param.name})")
    assert not missing, f"commands without -o/--output: {missing}"
    assert not different, f"commands whose -o/--output differs: {different}"


def test_every_command_has_help_with_examples() -> None:
    without = []
    for path, command in _leaves():
        if "Examples:" not in (command.help or ""):
            without.append(path)
    assert not without, f"--help without examples: {without}"


def test_graph_o_with_a_file_name_says_to_use_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", str(PROCUREMENT), "-o", "procure.svg"]) == 2
    err = capsys.readouterr().err
    assert "-o/--output takes text, json or yaml" in err
    assert "--out procure.svg" in err


def test_yaml_holds_what_json_holds(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["validate", str(PROCUREMENT)], ["graph", str(PROCUREMENT)]):
        assert main([*argv, "-o", "json"]) == 0
        as_json = json.loads(capsys.readouterr().out)
        assert main([*argv, "--output", "yaml"]) == 0
        assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_a_failure_with_output_json_is_the_api_error_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.hcl"
    broken.write_text('workflow "w" {\n  owner = team.nobody\n}\n', encoding="utf-8")
    assert main(["diff", str(PROCUREMENT), str(broken), "--output", "json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["error"]["code"] == "openseal_error"
    assert "does not compile" in body["error"]["message"]
    assert main(["runs", "show", "f" * 32, "--home", str(tmp_path), "-o", "yaml"]) == 1
    assert yaml.safe_load(capsys.readouterr().out)["error"]["code"] == "not_found"


def test_validate_colours_when_forced_even_when_piped(tmp_path: Path) -> None:
    broken = tmp_path / "broken.hcl"
    broken.write_text('agent "a" {\n  modle = "x"\n}\n', encoding="utf-8")
    env = {**os.environ, "FORCE_COLOR": "1"}
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "openseal", "validate", str(broken)]
    forced = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert forced.returncode == 1 and "\x1b[" in forced.stderr
    env["NO_COLOR"] = "1"
    plain = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert "\x1b[" not in plain.stderr


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "openseal", "serve", "--home", str(tmp_path),
             "--port", str(port)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: the port is already in use"
    ]


def test_show_commands_take_a_unique_id_prefix(cli: Cli, store: Store) -> None:
    first, second = create(cli), create(cli, "6")
    code, out, err = cli("runs", "show", first[:12])
    assert code == 0, err
    assert f"run {first} " in out
    common = first[: next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)]
    if len(common) >= 4:  # ids begin with their creation millisecond: nearly always shared
        code, out, err = cli("runs", "show", common)
        assert code == 1
        assert "ambiguous" in err and first in err
    objective = cli.json("runs", "show", first)["run"]["objective_id"]  # type: ignore[index]
    shown = cli.json("objectives", "show", str(objective)[:24])
    assert shown["objective"]["id"] == objective  # type: ignore[index]


def test_completion_scripts_and_ids_from_the_store(
    cli: Cli,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for shell in ("bash", "zsh", "fish"):
        assert main(["completion", shell]) == 0
        assert "_OPENSEAL_COMPLETE" in capsys.readouterr().out
    run_id = create(cli)
    monkeypatch.setenv("_OPENSEAL_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", f"openseal runs show --home {cli.home} {run_id[:8]}")
    monkeypatch.setenv("COMP_CWORD", "5")
    with pytest.raises(SystemExit):
        main(["runs", "show"])
    assert f"plain,{run_id}" in capsys.readouterr().out.splitlines()
