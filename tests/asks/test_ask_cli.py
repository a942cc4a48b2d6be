"""``openseal ask`` on the store: the plan is shown, only a typed ``yes`` (or ``--yes``) starts
it, and a prompt that fits no workflow exits 1 with nothing started."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

from openseal.cli.main import main
from openseal.runtime import service
from openseal.runtime.store import Store
from tests.asks.support import FITTING, PROMPT, plan
from tests.runtime.providers.chat_server import ChatServer
from tests.runtime.support import Backend

Ask = Callable[..., tuple[int, str, str]]


@pytest.fixture
def ask(
    backend: Backend, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Ask:  # fmt: skip
    for name in ("OPENSEAL_DATABASE_URL", "OPENSEAL_SERVER", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    if backend.url is not None:
        options = quote(f"-csearch_path={backend.pg_schema}")
        monkeypatch.setenv("OPENSEAL_DATABASE_URL", f"{backend.url}?options={options}")

    def run(*args: str, typed: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(typed))
        capsys.readouterr()
        code = main(
            ["ask", *args, "--home", str(backend.home), "--context", str(tmp_path / "context.yaml")]
        )
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_a_typed_yes_starts_the_plan_shown(ask: Ask, store: Store, chat: ChatServer) -> None:
    chat.reply(plan("release_note", FITTING, "a release note was asked for"))
    code, out, err = ask(PROMPT, "--agent", "release_writer", typed="yes\n")
    assert code == 0, err
    assert "agent.release_writer picked workflow release_note" in out
    assert '"version": "2.4"' in out and f"goal: {PROMPT}" in out
    (objective,) = service.list_objectives(store)
    assert f"objective {objective.id} created run" in out
    assert objective.goal == PROMPT and objective.inputs["release"]["since"] == "2.3"


def test_anything_but_yes_starts_nothing(ask: Ask, store: Store, chat: ChatServer) -> None:
    chat.reply(plan("release_note", FITTING))
    code, _, err = ask(PROMPT, "--agent", "release_writer", typed="y\n")
    assert code == 1 and "not confirmed; nothing was started" in err
    code, out, err = ask(PROMPT, "--agent", "release_writer", "-o", "json")
    assert code == 1 and "not confirmed" in err  # the end of input decides nothing
    assert out == "" and "picked workflow release_note" in err  # shown before it is asked
    assert service.list_objectives(store) == []


def test_yes_starts_without_asking_and_prints_json(
    ask: Ask, store: Store, chat: ChatServer
) -> None:
    chat.reply(plan("release_note", FITTING))
    code, out, err = ask(PROMPT, "--agent", "release_writer", "--yes", "-o", "json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["plan"]["workflow"] == "release_note" and answer["created"] is True
    assert answer["objective"]["goal"] == PROMPT


def test_a_prompt_that_fits_nothing_exits_1(ask: Ask, store: Store, chat: ChatServer) -> None:
    chat.reply(plan("none", {}, "there is no workflow for buying laptops"))
    code, out, err = ask("buy ten laptops", "--agent", "release_writer", "--yes")
    assert code == 1 and out == ""
    assert "no workflow agent.release_writer may start fits the prompt" in err
    assert "Traceback" not in err
    assert service.list_objectives(store) == []
