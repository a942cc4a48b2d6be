"""The commands of docs/authoring.md run as printed, against a local chat-completions server
scripted with the drafts the recorded session shows, and print what the page says they print.

Ids, digests and times are compared as shapes; a line ``…`` in a recorded output stands for
lines left out.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.cli.main import main
from tests.authoring.support import GOOD, PROCUREMENT, ROOT, WIDENING, answer
from tests.runtime.models.chat_server import ChatServer, Reply

PAGE = ROOT / "docs" / "authoring.md"
_BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```", re.DOTALL | re.MULTILINE)
_SHAPES = (
    (re.compile(r"\b[0-9a-f]{32}\b"), "<id>"),
    (re.compile(r"\b[0-9a-f]{12}\b"), "<digest>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"), "<time>"),
)

#: a second auditor whose model reference is misspelt, in every round
SECOND_AUDITOR = GOOD.replace('"auditor"', '"auditor2"').replace(
    "procurement_default", "procurement_defualt"
)

#: prompt → what the model answers, in order
DRAFTS: dict[str, list[Reply]] = {
    "Add an auditor agent that reads purchase orders and reports anomalies": [
        answer(("auditor.hcl", GOOD.replace("procurement_default", "procurement_defualt"))),
        answer(("auditor.hcl", GOOD)),
    ],
    "Add a second auditor agent": [answer(("auditor2.hcl", SECOND_AUDITOR))],
    "Let the researcher check the remaining budget of a cost centre": [
        answer(("budget.hcl", WIDENING))
    ],
}


def blocks(lang: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [m["body"] for m in _BLOCK.finditer(text) if m["lang"] == lang]


def sessions() -> list[tuple[str, list[str]]]:
    """Every ``$ command`` of the page's console blocks with the output printed under it."""
    found: list[tuple[str, list[str]]] = []
    for body in blocks("console"):
        for line in body.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif found:
                found[-1][1].append(line)
    return found


def shape(text: str) -> str:
    for pattern, placeholder in _SHAPES:
        text = pattern.sub(placeholder, text)
    return text.rstrip()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def test_the_page_runs_as_printed(
    chat: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    shutil.copytree(PROCUREMENT, tmp_path / "definitions" / "procurement")
    profile = next(b for b in blocks("hcl") if b.startswith("# definitions/"))
    (tmp_path / "definitions/procurement/hcl/authoring.hcl").write_text(
        profile.replace("http://127.0.0.1:8000/v1", chat.base_url), encoding="utf-8"
    )
    context = next(b for b in blocks("yaml") if b.startswith("# .openseal/context.yaml"))
    (tmp_path / ".openseal").mkdir()
    (tmp_path / ".openseal" / "context.yaml").write_text(context, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("OPENSEAL_AUTHORING_MODEL", "OPENSEAL_CONTEXT", "OPENSEAL_HOME", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)

    ran = 0
    for command, recorded in sessions():
        argv = shlex.split(command)
        if argv[0] == "export":
            name, _, value = argv[1].partition("=")
            monkeypatch.setenv(name, value)
            continue
        assert argv[0] == "openseal", command
        if argv[1] == "serve":  # a server runs until stopped: its options are checked instead
            assert main(["serve", "--help"]) == 0
            usage = capsys.readouterr().out
            assert all(o in usage for o in argv[2:] if o.startswith("--")), command
            continue
        if argv[1] == "author" and argv[2] in DRAFTS:
            chat.reply(*DRAFTS[argv[2]])
        code = main(argv[1:])
        out, err = capsys.readouterr()
        printed = [shape(line) for line in (out + err).splitlines()]
        expected_code = 1 if any(line.startswith("error:") for line in recorded) else 0
        assert code == expected_code, (command, out, err)
        for line in recorded:
            if line.strip() and line.strip() != "…":
                assert shape(line) in printed, (command, line, out + err)
        ran += 1
    assert ran >= 5
