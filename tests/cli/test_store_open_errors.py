"""A store that cannot be opened is one line naming the file, from `serve` and the CLI alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

LAUNCH = "from openseal.cli.main import run; run()"


def openseal(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENSEAL_")}
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args, "--home", str(home)],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


def one_line_naming(result: subprocess.CompletedProcess[str], name: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "startup failed" not in result.stderr
    assert name in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["objectives", "list"]])
def test_a_corrupt_sqlite_file(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir()
    database = home / "openseal.db"
    database.write_bytes(b"this is not a database at all " * 200)
    line = one_line_naming(openseal(*command, home=home), str(database))
    assert "not a database" in line


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["objectives", "list"]])
def test_a_home_that_cannot_be_created(tmp_path: Path, command: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    home = blocker / "home"
    one_line_naming(openseal(*command, home=home), str(home / "openseal.db"))
