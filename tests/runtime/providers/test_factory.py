"""The default provider factory: scripted and OpenAI-compatible profiles, one provider each;
and a real turn driven through the engine by a local chat-completions server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openseal.runtime import service
from openseal.runtime.compiled import AgentProfile
from openseal.runtime.engine.engine import Engine
from openseal.runtime.providers import (
    ModelError,
    ModelRequest,
    OpenAIProvider,
    ScriptedProvider,
    default_provider_factory,
)
from openseal.runtime.statuses import RunStatus
from openseal.runtime.store import Store
from openseal.skills.credentials import CredentialResolver, CredentialSource, RuntimeContext
from tests.runtime import gateway_skills
from tests.runtime.engine.test_worker_process import finish, spawn
from tests.runtime.engine_support import register
from tests.runtime.gateway_support import activities, tools_workflow
from tests.runtime.providers.chat_server import ChatServer, Reply, completion
from tests.runtime.support import Backend

#: the engine's logic, end to end: its PostgreSQL half runs with the slow set (the
#: store's own tests cover both backends in make test)
pytestmark = pytest.mark.slow_on_postgresql

KEY = "sk-local-f4c7Wq9"
KEY_VARIABLE = "OPENSEAL_TEST_FACTORY_KEY"


def profile(**model: Any) -> AgentProfile:
    return AgentProfile("agent.a", "a", "Be brief.", {"name": "m", **model})


def request() -> ModelRequest:
    return ModelRequest(
        agent="a", model={}, instructions="", goal="g", messages=(), tools=(),
        output_schema=None, state="s", visit=1, call=1,
    )  # fmt: skip


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def test_one_openai_provider_per_profile(server: ChatServer) -> None:
    factory = default_provider_factory()
    local = profile(provider="openai", base_url=server.base_url, model="qwen")
    other = profile(provider="openai", base_url=server.base_url, model="llama")
    first = factory(local)
    assert isinstance(first, OpenAIProvider)
    assert factory(profile(provider="openai", base_url=server.base_url, model="qwen")) is first
    assert factory(other) is not first
    assert factory(other).endpoint.model == "llama"  # type: ignore[attr-defined]


def test_scripted_profiles_share_the_responses_file(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("'*':\n  - output: ok\n")
    factory = default_provider_factory(tmp_path / "r.yaml")
    provider = factory(profile(provider="scripted"))
    assert isinstance(provider, ScriptedProvider)
    assert factory(profile(provider="scripted", model="x")) is provider


def test_an_openai_profile_resolves_its_credential_at_call_time(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = CredentialResolver({"model_key": CredentialSource(env=KEY_VARIABLE)})
    factory = default_provider_factory(credentials=resolver)
    provider = factory(
        profile(provider="openai", base_url=server.base_url, model="q", credential="model_key")
    )
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    with pytest.raises(ModelError, match=f"environment variable {KEY_VARIABLE} is not set"):
        provider.complete(request())
    assert server.requests == []  # nothing was sent without the key

    monkeypatch.setenv(KEY_VARIABLE, KEY)
    server.reply(Reply.ok(completion("hello")))
    assert provider.complete(request()).output == "hello"
    assert server.requests[0].header("Authorization") == f"Bearer {KEY}"


def test_a_credential_the_context_does_not_define_is_a_model_error(server: ChatServer) -> None:
    factory = default_provider_factory()  # an empty context
    provider = factory(
        profile(provider="openai", base_url=server.base_url, model="q", credential="model_key")
    )
    with pytest.raises(ModelError, match="credential `model_key` is not defined"):
        provider.complete(request())


def test_a_misconfigured_openai_profile_is_a_model_error() -> None:
    factory = default_provider_factory()
    with pytest.raises(ModelError, match="unknown parameter `temprature`"):
        factory(profile(provider="openai", model="q", parameters={"temprature": 0}))


# --------------------------------------------------------------------------- a real turn


def openai_model(base_url: str) -> str:
    return (
        f'provider   = "openai"\n  base_url   = "{base_url}"\n  model      = "qwen2.5"\n'
        '  credential = "model_key"'
    )


def test_an_openai_profile_drives_a_turn_with_a_read_tool_call(
    store: Store,
    tmp_path: Path,
    server: ChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    skill_log = tmp_path / "skills.jsonl"
    monkeypatch.setenv(gateway_skills.LOG_ENV, str(skill_log))
    (tmp_path / "context.yaml").write_text(
        f"credentials:\n  model_key: {{ env: {KEY_VARIABLE} }}\n", encoding="utf-8"
    )
    context = RuntimeContext.load(tmp_path / "context.yaml")
    register(store, tools_workflow(tmp_path, model=openai_model(server.base_url)))  # type: ignore[arg-type]
    server.reply(
        Reply.ok(
            completion(
                tool_calls=[
                    {
                        "id": "call_q",
                        "name": "quote",
                        "arguments": '{"item": "laptop", "quantity": 10}',
                    }
                ]
            )
        ),
        Reply.ok(completion('{"unit_price": 1149}')),
        Reply.ok(completion('{"ok": true}')),
    )
    run = service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run
    Engine(store, worker_id="w", context=context).run_until_idle()  # the default factory

    done = store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    assert done.context["states"]["ask"] == {"unit_price": 1149}
    assert [c["skill"] for c in gateway_skills.calls(skill_log)] == ["quote"]
    assert activities(store, run.id)["ask:1:tool:1:0"] == {
        "result": {"item": "laptop", "unit_price": 1149.0}
    }

    first, second, _third = (r.body for r in server.requests)
    assert {t["function"]["name"] for t in first["tools"]} == {"quote", "ship"}
    quote = next(t for t in first["tools"] if t["function"]["name"] == "quote")
    assert quote["function"]["parameters"]["required"] == ["item", "quantity"]
    assert first["response_format"]["type"] == "json_schema"
    assert all(r.header("Authorization") == f"Bearer {KEY}" for r in server.requests)
    tool = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_q"
    assert json.loads(tool["content"]) == {"result": {"item": "laptop", "unit_price": 1149.0}}
    stored = json.dumps([e.payload for e in store.runs.events(run.id, 0, 10_000)])
    assert KEY not in stored + json.dumps(activities(store, run.id))


@pytest.mark.slow
def test_a_worker_process_reaches_a_keyed_endpoint_with_the_context_s_credential(
    backend: Backend, tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = backend.open()
    (tmp_path / "context.yaml").write_text(
        f"credentials:\n  model_key: {{ env: {KEY_VARIABLE} }}\n", encoding="utf-8"
    )
    register(store, tools_workflow(tmp_path, model=openai_model(server.base_url)))  # type: ignore[arg-type]
    server.reply(Reply.ok(completion('{"unit_price": 1149}')), Reply.ok(completion('{"ok": true}')))
    run = service.create_objective(
        store, service.StartObjective("tools", {"item": "laptop"}), service.CLI
    ).run
    env = {KEY_VARIABLE: KEY, gateway_skills.LOG_ENV: str(tmp_path / "skills.jsonl")}
    worker = spawn(
        backend, tmp_path, "--until-idle", "--context", str(tmp_path / "context.yaml"), env=env
    )
    assert finish(worker) == 0, (tmp_path / "w.log").read_text(encoding="utf-8")
    done = store.runs.get(run.id)
    assert done.status == RunStatus.COMPLETED, done.waiting
    assert server.requests
    assert all(r.header("Authorization") == f"Bearer {KEY}" for r in server.requests)
