"""The draft–compile–repair loop called as the service the CLI and the API call."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.authoring import AuthoringRequest, AuthoringSetup, draft
from openseal.skills.credentials import RuntimeContext
from tests.authoring.support import BAD, GOOD, KEY, KEY_VARIABLE, PROFILE, answer, workspace
from tests.runtime.providers.chat_server import ChatServer


def test_progress_is_told_each_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    with ChatServer() as chat:
        definitions = workspace(tmp_path, chat)
        chat.reply(answer(("auditor.hcl", BAD)), answer(("auditor.hcl", GOOD)))
        setup = AuthoringSetup(definitions, PROFILE, RuntimeContext.load(tmp_path / "context.yaml"))
        lines: list[str] = []
        result = draft(setup, AuthoringRequest("add an auditor", definitions), lines.append)
    assert result.ok
    assert lines == [
        "round 1: asking model draft-model-1",
        "round 1: 1 problem to repair",
        "round 2: asking model draft-model-1",
    ]
    assert [r.number for r in result.rounds] == [1, 2]
    assert result.rounds[0].diagnostics[0]["code"] == "OS201"
    assert result.tokens == 3000
