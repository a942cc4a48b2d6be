"""The scripted model provider: deterministic answers, call counting, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from openseal.runtime.compiled import AgentProfile
from openseal.runtime.providers import (
    ModelError,
    ModelRequest,
    ScriptedProvider,
    default_provider_factory,
    read_calls,
)


def request(
    state: str = "research", visit: int = 1, call: int = 1, agent: str = "a"
) -> ModelRequest:
    return ModelRequest(
        agent=agent, model={}, instructions="", goal="g", messages=(), tools=(),
        output_schema=None, state=state, visit=visit, call=call,
    )  # fmt: skip


def test_the_nth_call_of_a_visit_gets_the_nth_response_by_key_precedence(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        {
            "research#2": [{"output": "second visit"}],
            "research": [{"tool_calls": [{"name": "s", "arguments": {"q": 1}}]}, {"output": 2}],
            "writer": [{"output": "by agent"}],
            "*": [{"output": "anything"}],
        },
        calls_file=tmp_path / "calls.jsonl",
    )
    first = provider.complete(request())
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_1_0", "s", {"q": 1})]
    assert provider.complete(request(call=2)).output == 2
    assert provider.complete(request(visit=2)).output == "second visit"
    assert provider.complete(request(state="draft", agent="writer")).output == "by agent"
    assert provider.complete(request(state="other")).output == "anything"
    assert provider.complete(request(call=2)).output == 2  # the same request, the same answer
    calls = read_calls(tmp_path / "calls.jsonl")
    assert [(c["state"], c["visit"], c["call"]) for c in calls] == [
        ("research", 1, 1), ("research", 1, 2), ("research", 2, 1),
        ("draft", 1, 1), ("other", 1, 1), ("research", 1, 2),
    ]  # fmt: skip


def test_running_out_of_responses_is_a_model_error() -> None:
    provider = ScriptedProvider({"research": [{"output": 1}]})
    with pytest.raises(ModelError, match="no response #2 for 'research'"):
        provider.complete(request(call=2))
    with pytest.raises(ModelError, match="no responses for state 'draft'"):
        provider.complete(request(state="draft"))


def test_script_files_load_from_yaml_or_json_and_bad_files_are_errors(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("responses:\n  research:\n    - output: 5\n")
    (tmp_path / "r.json").write_text('{"research": [{"output": 6}]}')
    (tmp_path / "bad.yaml").write_text("research: 3\n")
    assert ScriptedProvider.from_file(tmp_path / "r.yaml").complete(request()).output == 5
    assert ScriptedProvider.from_file(tmp_path / "r.json").complete(request()).output == 6
    with pytest.raises(ModelError, match="must map keys to lists"):
        ScriptedProvider.from_file(tmp_path / "bad.yaml")
    with pytest.raises(ModelError, match="cannot read scripted responses"):
        ScriptedProvider.from_file(tmp_path / "missing.yaml")


def test_the_default_factory_serves_scripted_profiles_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("'*':\n  - output: ok\n")
    factory = default_provider_factory(tmp_path / "r.yaml")
    scripted = AgentProfile("agent.a", "a", "", {"name": "m", "provider": "scripted"})
    assert factory(scripted).complete(request()).output == "ok"
    other = AgentProfile("agent.a", "a", "", {"name": "m", "provider": "carrier-pigeon"})
    with pytest.raises(ModelError, match="'carrier-pigeon' of 'm' is not available"):
        factory(other)
