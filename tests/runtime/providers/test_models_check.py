"""``openseal models check``: reachability, auth, tool calls and json_schema against a local
endpoint that requires its key, over real HTTP."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.cli.main import main
from tests.runtime.providers.chat_server import ChatServer, Reply, completion

KEY = "sk-check-3Jd92kQ"
KEY_VARIABLE = "OPENSEAL_TEST_CHECK_KEY"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(require_key=KEY) as running:
        yield running


def project(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    definitions = tmp_path / "defs"
    definitions.mkdir()
    (definitions / "models.hcl").write_text(
        'model "hosted" {\n  provider   = "openai"\n'
        f'  base_url   = "{base_url}"\n  model      = "gpt-test"\n'
        '  credential = "model_key"\n  parameters = { timeout = 5 }\n}\n',
        encoding="utf-8",
    )
    context = tmp_path / "context.yaml"
    context.write_text(f"credentials:\n  model_key: {{env: {KEY_VARIABLE}}}\n", encoding="utf-8")
    return definitions, context


def run_check(
    definitions: Path, context: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, str], str]:
    args = ["models", "check", "hosted", "--definitions", str(definitions)]
    code = main([*args, "--context", str(context), "-o", "json"])
    out = capsys.readouterr().out
    report = json.loads(out)
    return code, {c["name"]: c["status"] for c in report["checks"]}, out


ANSWER = {"id": "c1", "name": "record_answer", "arguments": '{"answer": "ok"}'}
TOOL_CALL = completion(tool_calls=[ANSWER])


def test_everything_works(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    replies = (
        Reply.ok(completion("ok")), Reply.ok(TOOL_CALL), Reply.ok(completion('{"answer": "ok"}'))
    )  # fmt: skip
    server.reply(*replies)
    definitions, context = project(tmp_path, server.base_url)
    code, checks, out = run_check(definitions, context, capsys)
    assert code == 0
    assert checks == {
        "reachable": "ok", "authorized": "ok", "tool_calls": "ok", "json_schema": "ok"
    }  # fmt: skip
    tool_request, schema_request = server.requests[1].body, server.requests[2].body
    assert tool_request["tools"][0]["function"]["name"] == "record_answer"
    assert schema_request["response_format"]["type"] == "json_schema"
    assert all(r.header("Authorization") == f"Bearer {KEY}" for r in server.requests)
    assert KEY not in out
    # the text form says the same
    server.reply(*replies)
    text_code = main(["models", "check", "hosted", "--definitions", str(definitions),
                      "--context", str(context)])  # fmt: skip
    text = capsys.readouterr().out
    assert text_code == 0 and "model profile hosted: gpt-test at" in text


def test_a_wrong_key_is_refused_and_named(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv(KEY_VARIABLE, "sk-wrong-key-000")
    definitions, context = project(tmp_path, server.base_url)
    code, checks, out = run_check(definitions, context, capsys)
    assert code == 1
    assert checks == {
        "reachable": "ok", "authorized": "failed", "tool_calls": "skipped",
        "json_schema": "skipped",
    }  # fmt: skip
    assert "refused the credential of profile 'hosted' (401)" in out
    assert "sk-wrong-key-000" not in out
    assert len(server.requests) == 1


def test_an_unreachable_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    definitions, context = project(tmp_path, f"http://127.0.0.1:{port}/v1")
    code, checks, _out = run_check(definitions, context, capsys)
    assert code == 1
    assert checks["reachable"] == "failed" and checks["authorized"] == "skipped"


def test_no_json_schema_is_reported_but_does_not_fail(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    server.reply(
        Reply.ok(completion("ok")), Reply.ok(TOOL_CALL),
        Reply.status(400, "response_format json_schema is not supported"),
    )  # fmt: skip
    definitions, context = project(tmp_path, server.base_url)
    code, checks, out = run_check(definitions, context, capsys)
    assert code == 0
    assert checks["json_schema"] == "unsupported"
    assert "fall back to json_object" in out


def test_an_unset_key_variable_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    definitions, context = project(tmp_path, "http://127.0.0.1:9/v1")
    code, checks, out = run_check(definitions, context, capsys)
    assert code == 1
    assert checks["authorized"] == "failed"
    assert f"environment variable {KEY_VARIABLE} is not set" in out


def test_an_unknown_profile_is_refused_naming_the_defined_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions, _context = project(tmp_path, "http://127.0.0.1:9/v1")
    code = main(["models", "check", "nope", "--definitions", str(definitions)])
    assert code == 1  # the command line is fine; the definitions have no such profile
    assert "no model profile 'nope'" in capsys.readouterr().err
