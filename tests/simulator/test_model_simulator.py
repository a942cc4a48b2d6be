"""The model simulator over real HTTP, through the official ``openai`` client."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from openseal.cli.main import main
from openseal.simulator import ModelSimulator, SimulatorError, load_answers


def test_answers_in_order_with_usage_then_says_the_script_ran_out() -> None:
    answers = [{"files": []}, "plain"]
    with ModelSimulator(answers, credential="sk-sim") as sim:
        client = openai.OpenAI(base_url=sim.url, api_key="sk-sim", max_retries=0)
        first = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "x" * 400}]
        )
        second = client.chat.completions.create(model="any", messages=[])
        assert json.loads(first.choices[0].message.content or "") == {"files": []}
        assert first.usage is not None and first.usage.prompt_tokens >= 100
        assert second.choices[0].message.content == "plain"
        with pytest.raises(openai.InternalServerError, match="all given"):
            client.chat.completions.create(model="any", messages=[])
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=sim.url, api_key="wrong", max_retries=0).chat.completions.create(
                model="any", messages=[]
            )
        assert httpx.get(f"{sim.url}/models").status_code == 404
        assert sim.served == 2


def test_a_script_is_a_list_or_answers(tmp_path: Path) -> None:
    listed = tmp_path / "a.yaml"
    listed.write_text("- one\n- {files: []}\n", encoding="utf-8")
    assert load_answers(listed) == ["one", {"files": []}]
    keyed = tmp_path / "b.json"
    keyed.write_text('{"answers": ["x"]}', encoding="utf-8")
    assert load_answers(keyed) == ["x"]
    empty = tmp_path / "c.yaml"
    empty.write_text("answers: []\n", encoding="utf-8")
    with pytest.raises(SimulatorError, match="holds no answers"):
        load_answers(empty)
    with pytest.raises(SimulatorError, match="cannot read"):
        load_answers(tmp_path / "missing.yaml")


def test_the_command_refuses_an_unset_credential_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "a.yaml"
    script.write_text("- one\n", encoding="utf-8")
    monkeypatch.delenv("OPENSEAL_TEST_UNSET", raising=False)
    code = main(["simulator", "model", "--script", str(script), "--credential-env",
                 "OPENSEAL_TEST_UNSET"])  # fmt: skip
    assert code == 2
    assert "OPENSEAL_TEST_UNSET is not set" in capsys.readouterr().err
