"""``openseal author`` against a local chat-completions server over real HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from openseal.cli.main import main
from tests.authoring.support import (
    BAD,
    GOOD,
    KEY,
    KEY_VARIABLE,
    PROFILE,
    WIDENING,
    answer,
    sent_messages,
    workspace,
)
from tests.runtime.providers.chat_server import ChatServer, Reply, completion

CHAT_PATH = "/v1/chat/completions"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    monkeypatch.delenv("OPENSEAL_AUTHORING_MODEL", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def author(capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str) -> tuple[int, str, str]:
    code = main(
        ["author", "--context", str(tmp_path / "context.yaml"), "--home", str(tmp_path / "home"),
         *args]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


def test_a_draft_that_compiles_first_time_is_written(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", GOOD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor agent", "--into", str(definitions), "--model", PROFILE
    )
    assert code == 0, err
    assert (definitions / "auditor.hcl").read_text(encoding="utf-8") == GOOD
    assert "draft compiled in 1 round" in out
    assert "agent.auditor  (added)" in out
    assert "risk widening: no" in out
    assert f"wrote {definitions / 'auditor.hcl'}" in out
    [request] = server.requests
    assert request.path == CHAT_PATH
    assert request.header("Authorization") == f"Bearer {KEY}"
    assert request.body["model"] == "draft-model-1"
    assert request.body["response_format"]["type"] == "json_schema"
    system, user = sent_messages(request)
    assert user == {"role": "user", "content": "add an auditor agent"}
    # what the model is given: the existing definitions with their risk, the generated
    # language reference (the guide and the schema) and the rules
    assert '"reference": "skill.submit_purchase_order"' in system["content"]
    assert '"effect": "external"' in system["content"]
    assert "# The definition language" in system["content"]
    assert '"$schema":"https://json-schema.org/draft/2020-12/schema"' in system["content"]
    assert KEY not in system["content"]


def test_diagnostics_go_back_to_the_model_and_the_repair_is_written(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", BAD)), answer(("auditor.hcl", GOOD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor agent", "--into", str(definitions), "--model", PROFILE
    )
    assert code == 0, err
    assert "draft compiled in 2 rounds" in out
    assert (definitions / "auditor.hcl").read_text(encoding="utf-8") == GOOD
    first, second = server.requests
    assert len(sent_messages(first)) == 2
    previous, repair = sent_messages(second)[2:]
    assert previous["role"] == "assistant"
    assert "procurement_defualt" in previous["content"]
    assert repair["role"] == "user"
    reported = [json.loads(line) for line in repair["content"].splitlines()[1:]]
    assert [d["code"] for d in reported] == ["OS201"]
    [diagnostic] = reported
    assert diagnostic["file"] == f"{definitions}/auditor.hcl"
    assert diagnostic["line"] == 3
    assert "procurement_defualt" in diagnostic["message"]
    assert "procurement_default" in diagnostic["suggestion"] + diagnostic["message"]


def test_a_draft_that_never_compiles_writes_nothing(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    before = sorted(p.name for p in definitions.iterdir())
    server.reply(answer(("auditor.hcl", BAD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor agent", "--into", str(definitions),
        "--model", PROFILE, "--max-repairs", "1", "--propose",
    )  # fmt: skip
    assert code == 1
    assert len(server.requests) == 2  # the first draft and one repair
    assert sorted(p.name for p in definitions.iterdir()) == before
    assert "OS201" in err and "auditor.hcl:3" in err
    assert "does not compile after 2 rounds; nothing written" in err
    assert "filed change proposal" not in out


def test_a_widening_draft_is_flagged_first_and_the_proposal_says_so(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("budget.hcl", WIDENING)))
    code, out, err = author(
        capsys, tmp_path, "let the researcher check budgets", "--definitions",
        str(definitions), "--model", PROFILE, "--propose", "--actor", "user:alice",
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "risk widening: 1 change widens authority"
    assert lines[1] == ("  ! grant added: skill.lookup_budget to team.procurement.role.researcher")
    assert "filed change proposal" in out
    assert not (definitions / "budget.hcl").exists()  # no --into: nothing written

    _, out, _ = main_json(capsys, tmp_path, "proposals", "list")
    [proposal] = json.loads(out)
    assert proposal["author"] == "user:alice"
    assert proposal["risk_widening"] is True
    assert proposal["status"] == "proposed"
    assert "let the researcher check budgets" in proposal["message"]
    assert "draft-model-1" in proposal["message"]
    code, out, _ = main_json(capsys, tmp_path, "deployments", "list")
    assert json.loads(out) == []  # filed, never activated


def main_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str
) -> tuple[int, str, str]:
    code = main([*args, "--home", str(tmp_path / "home"), "--output", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def test_without_a_complete_profile_the_command_says_what_is_missing(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server, complete=False)
    code, _, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions), "--model", PROFILE
    )
    assert code == 1
    assert f"model profile `{PROFILE}` has no `credential`" in err
    assert err.startswith("error: authoring is not available")
    code, _, err = author(capsys, tmp_path, "add an auditor", "--into", str(definitions))
    assert code == 1
    assert "pass --model PROFILE or set OPENSEAL_AUTHORING_MODEL" in err
    assert f"`{PROFILE}`" in err
    assert server.requests == []


def test_an_existing_file_is_not_replaced(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("team.hcl", GOOD)), answer(("auditor.hcl", GOOD)))
    code, _, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions), "--model", PROFILE
    )
    assert code == 0, err
    repair = sent_messages(server.requests[1])[-1]["content"]
    assert "team.hcl: this file already exists" in repair
    assert 'agent "researcher"' in (definitions / "team.hcl").read_text(encoding="utf-8")


def test_json_output(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", GOOD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--definitions", str(definitions),
        "--model", PROFILE, "--output", "json",
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["draft"]["ok"] is True
    assert document["draft"]["files"] == [{"path": "auditor.hcl", "syntax": "hcl", "content": GOOD}]
    [call] = document["draft"]["calls"]
    assert call["model"] == "draft-model-1"
    assert (call["input_tokens"], call["output_tokens"]) == (1200, 300)
    assert call["prompt_digest"].startswith("sha256:")
    assert document["written"] == [] and document["proposal"] is None


def test_json_output_has_one_shape_whether_written_or_proposed(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", GOOD)), answer(("auditor.hcl", GOOD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions), "--model", PROFILE,
        "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    written = json.loads(out)
    (definitions / "auditor.hcl").unlink()
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--definitions", str(definitions), "--model",
        PROFILE, "--propose", "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    proposed = json.loads(out)
    # what each did is at the top, as `deploy -o json` prints a filing: not one level deeper
    assert written["written"] == [str(definitions / "auditor.hcl")]
    assert written["proposal"] is None
    assert proposed["written"] == []
    assert proposed["proposal"]["status"] == "proposed" and proposed["created"] is True
    _, listed, _ = main_json(capsys, tmp_path, "proposals", "list")
    assert [p["id"] for p in json.loads(listed)] == [proposed["proposal"]["id"]]
    assert (
        set(written)
        == set(proposed)
        == {"draft", "written", "proposal", "created", "unchanged", "note", "in_use"}
    )


SUMMARY = """workflow "summarize_orders" {
  description = "Summarize the week's purchase orders."
  owner       = team.procurement
  start       = state.summarize

  state "summarize" {
    turn {
      agent  = team.procurement.role.researcher
      goal   = "Summarize this week's purchase orders."
      output = object({ summary = string })
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
"""


def test_a_proposal_s_diff_shows_as_added_only_what_is_not_active(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    _, out, err = main_json(capsys, tmp_path, "deploy", str(definitions), "--actor", "user:al")
    first = json.loads(out)["proposal"]["id"]
    for step in (["decide", first, "--approve"], ["activate", first]):
        assert main_json(capsys, tmp_path, "proposals", *step)[0] == 0
    server.reply(answer(("summary.hcl", SUMMARY)))
    code, out, err = author(
        capsys, tmp_path, "summarize the week's orders", "--definitions", str(definitions),
        "--model", PROFILE, "--propose", "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    filed = json.loads(out)["proposal"]
    assert [t["name"] for t in filed["targets"]] == ["summarize_orders"]
    # the new workflow's model profile, agent and team are active already: not new authority
    assert filed["diff"]["definitions"]["added"] == ["workflow.summarize_orders"]
    assert "model.procurement_default" not in json.dumps(filed["diff"]["changes"])
    assert filed["risk_widening"] is False


def test_a_refused_key_is_one_line(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(Reply.status(401, f"invalid key {KEY}"))
    code, _, err = author(
        capsys, tmp_path, "add", "--definitions", str(definitions), "--model", PROFILE
    )
    assert code == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert KEY not in err


def test_a_rate_limited_call_is_tried_again_and_recorded(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(Reply.status(429, headers={"Retry-After": "0"}), answer(("auditor.hcl", GOOD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--definitions", str(definitions),
        "--model", PROFILE, "--output", "json",
    )  # fmt: skip
    assert code == 0, err
    failed, answered = json.loads(out)["draft"]["calls"]
    assert failed["error"] == "rate_limited" and failed["output_tokens"] == 0
    assert answered["error"] is None and answered["round"] == failed["round"] == 1
    assert len(server.requests) == 2


def test_the_token_budget_stops_the_repairs(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", BAD)))
    code, _, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions),
        "--model", PROFILE, "--token-budget", "1000",
    )  # fmt: skip
    assert code == 1
    assert len(server.requests) == 1  # the first call spent 1500 tokens
    assert "the authoring budget of 1000 tokens is spent (1500 used); nothing written" in err
    assert not (definitions / "auditor.hcl").exists()


def test_a_yaml_draft(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    yaml_agent = (
        "agent:\n  auditor:\n    model: model.procurement_default\n"
        "    instructions: Report orders whose total looks wrong.\n"
    )
    hcl_named_yaml = {"path": "auditor.yaml", "syntax": "hcl", "content": GOOD}
    server.reply(
        Reply.ok(completion(json.dumps({"files": [hcl_named_yaml]}))),
        Reply.ok(completion(json.dumps(
            {"files": [{"path": "auditor.yaml", "syntax": "yaml", "content": yaml_agent}]}
        ))),
    )  # fmt: skip
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions),
        "--model", PROFILE, "--syntax", "yaml",
    )  # fmt: skip
    assert code == 0, err
    repair = sent_messages(server.requests[1])[-1]["content"]
    assert "auditor.yaml: write yaml, not hcl" in repair
    assert (definitions / "auditor.yaml").read_text(encoding="utf-8") == yaml_agent
    assert "agent.auditor  (added)" in out


def test_force_replaces_a_file_and_usage_errors_exit_2(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    (definitions / "auditor.hcl").write_text("# an old note\n", encoding="utf-8")
    server.reply(answer(("auditor.hcl", GOOD)))
    code, _, err = author(
        capsys, tmp_path, "add an auditor", "--into", str(definitions), "--model", PROFILE,
        "--force",
    )  # fmt: skip
    assert code == 0, err
    assert (definitions / "auditor.hcl").read_text(encoding="utf-8") == GOOD

    code, _, err = author(capsys, tmp_path, "x", "--force", "--model", PROFILE)
    assert code == 2 and "give --into DIR" in err
    code, _, err = author(
        capsys, tmp_path, "x", "--into", str(tmp_path / "a"), "--definitions", str(definitions)
    )
    assert code == 2 and "different directories" in err
    code, _, err = author(capsys, tmp_path, "  ", "--definitions", str(definitions))
    assert code == 2 and "the prompt is empty" in err
    assert len(server.requests) == 1


def test_a_failed_draft_with_json_output_is_the_api_error_object(
    server: ChatServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", BAD)))
    code, out, err = author(
        capsys, tmp_path, "add an auditor", "--definitions", str(definitions),
        "--model", PROFILE, "--max-repairs", "0", "-o", "json",
    )  # fmt: skip
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "draft_failed"
    assert [d["code"] for d in error["details"]["diagnostics"]] == ["OS201"]
    assert error["details"]["ok"] is False
    assert "nothing written" in err


def test_every_model_call_is_logged_without_the_prompt(
    server: ChatServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    definitions = workspace(tmp_path, server)
    server.reply(answer(("auditor.hcl", BAD)), answer(("auditor.hcl", GOOD)))
    with caplog.at_level(logging.INFO, logger="openseal.authoring"):
        code, out, err = author(
            capsys, tmp_path, "a secret plan for an auditor", "--definitions",
            str(definitions), "--model", PROFILE, "-o", "json",
        )  # fmt: skip
    assert code == 0, err
    calls = json.loads(out)["draft"]["calls"]
    logged = [r.getMessage() for r in caplog.records if r.name == "openseal.authoring"]
    assert len(logged) == len(calls) == 2
    for line, call in zip(logged, calls, strict=True):
        assert call["prompt_digest"] in line and "1200 tokens in, 300 out" in line
        assert "draft-model-1" in line and "secret plan" not in line
