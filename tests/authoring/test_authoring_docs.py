"""The sessions of docs/authoring.md run as printed: files the page writes are written, the
model simulator it starts answers from the page's own script, and every ``openseal`` command
prints what the page shows.

The page follows the conventions of the docs' runnable sessions: ``<!-- file: PATH -->``
before a block writes it, ``<!-- not run: REASON -->`` leaves a block out, ``cmd &`` starts a
server, and in shown output 32-hex ids and 12-hex digests are compared as shapes and ``...``
stands for any text on its line. Port 8765 is replaced by a free one throughout the page.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from contextlib import ExitStack
from pathlib import Path

import pytest

from openseal.cli.main import main
from openseal.simulator import ModelSimulator, load_answers
from tests.authoring.support import PROCUREMENT, ROOT
from tests.doc_pages import capture, normalise

PAGE = ROOT / "docs" / "authoring.md"
_FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARK = re.compile(r"<!--\s*(?P<what>not run|file):\s*(?P<value>.*?)\s*-->\s*$")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def blocks(text: str) -> list[tuple[str | None, str | None, str, str]]:
    """``(mark, value, lang, body)`` for every fenced block, in order."""
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        found.append(
            (mark["what"] if mark else None, mark["value"] if mark else None,
             match["lang"], match["body"])
        )  # fmt: skip
    return found


def shown_matches(shown: str, printed: list[str]) -> bool:
    """Whether a printed line is the one shown (the conventions of tests/doc_pages.py: ids,
    times, handles and ``…`` stand for what was printed)."""
    return any(capture([shown], normalise(line)) is not None for line in printed)


def test_the_page_runs_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    shutil.copytree(PROCUREMENT, tmp_path / "definitions" / "procurement")
    monkeypatch.chdir(tmp_path)
    for name in ("OPENSEAL_AUTHORING_MODEL", "OPENSEAL_CONTEXT", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENSEAL_HOME", str(tmp_path / "home"))
    text = PAGE.read_text(encoding="utf-8").replace("8765", str(free_port()))

    ran = 0
    with ExitStack() as servers:
        for mark, value, lang, body in blocks(text):
            if mark == "file":
                assert value is not None
                (tmp_path / value).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / value).write_text(body, encoding="utf-8")
            if mark == "not run" or lang != "console":
                continue
            sessions: list[tuple[str, list[str]]] = []
            for line in body.splitlines():
                if line.startswith("$ "):
                    sessions.append((line[2:], []))
                elif sessions:
                    sessions[-1][1].append(line)
            for command, shown in sessions:
                argv = shlex.split(command.removesuffix("&"))
                if argv[0] == "export":
                    monkeypatch.setenv(*argv[1].split("=", 1))
                    continue
                assert argv[0] == "openseal", command
                if command.endswith("&"):  # the model simulator, started in this process
                    assert argv[1:3] == ["simulator", "model"], command
                    port = int(argv[argv.index("--port") + 1])
                    credential = argv[argv.index("--credential-env") + 1]
                    script = load_answers(tmp_path / argv[argv.index("--script") + 1])
                    key = os.environ[credential]
                    sim = servers.enter_context(ModelSimulator(script, port=port, credential=key))
                    assert shown == [sim.url], command
                    continue
                code = main(argv[1:])
                out, err = capsys.readouterr()
                printed = (out + err).splitlines()
                must_fail = any(line.startswith("error:") for line in shown)
                assert (code != 0) == must_fail, (command, out, err)
                for line in shown:
                    if line.strip() and line.strip() not in ("...", "…"):
                        assert shown_matches(line, printed), (command, line, out + err)
                ran += 1
    assert ran >= 5
