"""The OpenAI-compatible provider against a local chat-completions server."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import openai
import pytest

from openseal.runtime.providers.base import ModelError, ModelRequest, ModelUnavailable, Tool
from openseal.runtime.providers.openai_provider import (
    MALFORMED_ARGUMENTS,
    PLACEHOLDER_KEY,
    OpenAIProvider,
    parse_completion,
)
from openseal.skills.credentials import CredentialResolver, CredentialSource
from tests.runtime.providers.chat_server import ChatServer, Reply, completion, stream_chunks

KEY = "sk-test-Zq81ploM4vX2"
KEY_VARIABLE = "OPENSEAL_TEST_MODEL_KEY"
CHAT_PATH = "/v1/chat/completions"

OFFER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"vendor": {"type": "string"}, "unit_price": {"type": "number"}},
    "required": ["vendor", "unit_price"],
}
SEARCH = Tool(
    "search_vendors",
    "Find vendors for an item",
    {
        "type": "object",
        "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}},
        "required": ["item"],
        "additionalProperties": False,
    },
)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> CredentialResolver:
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    return CredentialResolver({"model_key": CredentialSource(env=KEY_VARIABLE)})


def provider_for(
    server: ChatServer, credentials: CredentialResolver | None, **parameters: Any
) -> OpenAIProvider:
    profile: dict[str, Any] = {
        "name": "local",
        "provider": "openai",
        "base_url": server.base_url,
        "model": "qwen2.5-7b-instruct",
        "credential": "model_key" if credentials is not None else None,
        "parameters": parameters,
    }
    return OpenAIProvider.from_profile(profile, credentials=credentials)


def request(
    *,
    tools: tuple[Tool, ...] = (),
    output_schema: dict[str, Any] | None = None,
    messages: tuple[dict[str, Any], ...] = (),
    call: int = 1,
) -> ModelRequest:
    return ModelRequest(
        agent="researcher",
        model={},
        instructions="You research vendors.",
        goal="Find an offer for 10 laptops.",
        messages=messages,
        tools=tools,
        output_schema=output_schema,
        state="research",
        visit=1,
        call=call,
    )


def failure(provider: OpenAIProvider, req: ModelRequest | None = None) -> ModelError:
    with pytest.raises(ModelError) as caught:
        provider.complete(req or request())
    return caught.value


# --------------------------------------------------------------------------- successful turns


def test_structured_output_turn(server: ChatServer, credentials: CredentialResolver) -> None:
    server.reply(Reply.ok(completion('{"vendor": "Acme", "unit_price": 950}', usage=(120, 30))))
    provider = provider_for(server, credentials, temperature=0, seed=7)

    response = provider.complete(request(output_schema=OFFER_SCHEMA))

    assert response.output == {"vendor": "Acme", "unit_price": 950}
    assert response.tool_calls == ()
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 30)
    [sent] = server.requests
    assert sent.body["messages"] == [
        {"role": "system", "content": "You research vendors."},
        {"role": "user", "content": "Find an offer for 10 laptops."},
    ]
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "output",
            "schema": {k: v for k, v in OFFER_SCHEMA.items() if k != "$schema"},
            "strict": False,
        },
    }
    assert (sent.body["temperature"], sent.body["seed"]) == (0, 7)
    assert "tools" not in sent.body


def test_tool_call_turn_sends_tools_model_path_and_key(
    server: ChatServer, credentials: CredentialResolver
) -> None:
    calls = [
        {
            "id": "call_a",
            "name": "search_vendors",
            "arguments": '{"item": "laptop", "quantity": 10}',
        }
    ]
    server.reply(Reply.ok(completion(None, tool_calls=calls)))
    provider = provider_for(server, credentials)

    response = provider.complete(request(tools=(SEARCH,), output_schema=OFFER_SCHEMA))

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "search_vendors", {"item": "laptop", "quantity": 10})
    ]
    assert response.output is None
    [sent] = server.requests
    assert (sent.method, sent.path) == ("POST", CHAT_PATH)
    assert sent.header("Authorization") == f"Bearer {KEY}"
    assert sent.body["model"] == "qwen2.5-7b-instruct"
    assert sent.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search_vendors",
                "description": "Find vendors for an item",
                "parameters": SEARCH.input_schema,
            },
        }
    ]


def test_calls_share_one_client_and_the_key_stays_only_as_long_as_its_call(
    server: ChatServer, credentials: CredentialResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reply(Reply.ok(completion("first")), Reply.ok(completion("second")))
    provider = provider_for(server, credentials)
    built: list[object] = []
    real_init = openai.OpenAI.__init__

    def counted(self: openai.OpenAI, *args: Any, **kwargs: Any) -> None:
        built.append(kwargs.get("http_client"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(openai.OpenAI, "__init__", counted)
    provider.complete(request())
    monkeypatch.setenv(KEY_VARIABLE, "sk-rotated")  # read again at every call
    provider.complete(request())

    assert [r.header("Authorization") for r in server.requests] == [
        f"Bearer {KEY}",
        "Bearer sk-rotated",
    ]
    # one client with its connections and TLS context; each call's keyed copy reuses them
    assert built[0] is None and all(http is not None for http in built[1:]), built
    assert len({id(http) for http in built[1:]}) == 1
    assert KEY not in repr(vars(provider)) and "sk-rotated" not in repr(vars(provider))


def test_prior_messages_are_sent_in_chat_format(server: ChatServer) -> None:
    server.reply(Reply.ok(completion('{"vendor": "Acme", "unit_price": 950}')))
    history = (
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1_0", "name": "search_vendors", "arguments": {"item": "laptop"}}
            ],
            "output": None,
        },
        {"role": "tool", "tool_call_id": "call_1_0", "output": {"vendors": ["Acme"]}},
        {"role": "assistant", "tool_calls": [], "output": {"vendor": "Acme"}},
        {"role": "user", "content": "Your output does not match the required JSON Schema."},
    )

    provider_for(server, None).complete(request(messages=history, call=3))

    assert server.requests[0].body["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1_0",
                    "type": "function",
                    "function": {"name": "search_vendors", "arguments": '{"item": "laptop"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1_0",
            "content": '{"output": {"vendors": ["Acme"]}}',
        },
        {"role": "assistant", "content": '{"vendor": "Acme"}'},
        {"role": "user", "content": "Your output does not match the required JSON Schema."},
    ]


def test_profile_without_credential_sends_the_placeholder_key(server: ChatServer) -> None:
    server.reply(Reply.ok(completion("plain text answer")))

    response = provider_for(server, None).complete(request())

    assert response.output == "plain text answer"
    assert server.requests[0].header("Authorization") == f"Bearer {PLACEHOLDER_KEY}"


def test_malformed_tool_arguments_are_marked_for_the_gateway(server: ChatServer) -> None:
    calls = [
        {"id": "call_a", "name": "search_vendors", "arguments": '{"item": "lapt'},
        {"id": "call_b", "name": "search_vendors", "arguments": "[1, 2]"},
    ]
    server.reply(Reply.ok(completion(None, tool_calls=calls)))

    response = provider_for(server, None).complete(request(tools=(SEARCH,)))

    assert [c.arguments for c in response.tool_calls] == [
        {MALFORMED_ARGUMENTS: '{"item": "lapt'},
        {MALFORMED_ARGUMENTS: "[1, 2]"},
    ]


def test_structured_output_that_is_not_json_is_returned_as_text(server: ChatServer) -> None:
    server.reply(Reply.ok(completion("Acme, 950 EUR")))

    response = provider_for(server, None).complete(request(output_schema=OFFER_SCHEMA))

    assert response.output == "Acme, 950 EUR"


def test_json_schema_rejected_falls_back_to_json_object_then_text(server: ChatServer) -> None:
    server.reply(
        Reply.status(400, "response_format json_schema is not supported"),
        Reply.status(400, "response_format json_object is not supported"),
        Reply.ok(completion('```json\n{"vendor": "Acme", "unit_price": 950}\n```')),
        Reply.ok(completion('{"vendor": "Bolt", "unit_price": 900}')),
    )
    provider = provider_for(server, None)

    first = provider.complete(request(output_schema=OFFER_SCHEMA))
    second = provider.complete(request(output_schema=OFFER_SCHEMA))

    assert first.output == {"vendor": "Acme", "unit_price": 950}
    assert second.output == {"vendor": "Bolt", "unit_price": 900}
    formats = [r.body.get("response_format", {}).get("type") for r in server.requests]
    # the provider remembers the mode that worked: the second call goes straight to text
    assert formats == ["json_schema", "json_object", None, None]
    system = server.requests[2].body["messages"][0]["content"]
    assert "JSON Schema" in system and '"unit_price"' in system


def test_a_400_in_every_mode_is_rejected_and_not_remembered(server: ChatServer) -> None:
    server.reply(
        Reply.status(400, "context too long"),
        Reply.status(400, "context too long"),
        Reply.status(400, "context too long"),
        Reply.ok(completion('{"vendor": "Acme", "unit_price": 950}')),
    )
    provider = provider_for(server, None)

    error = failure(provider, request(output_schema=OFFER_SCHEMA))
    provider.complete(request(output_schema=OFFER_SCHEMA))

    assert error.code == "model_rejected" and "context too long" in error.message
    formats = [r.body.get("response_format", {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object", None, "json_schema"]


def test_a_400_without_output_schema_is_not_retried(server: ChatServer) -> None:
    server.reply(Reply.status(400, "bad stop sequence"))

    error = failure(provider_for(server, None))

    assert error.code == "model_rejected"
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- retries and failures


def test_a_429_is_one_attempt_that_cost_nothing_with_the_wait_it_asked_for(
    server: ChatServer,
) -> None:
    server.reply(
        Reply.status(429, "slow down", headers={"Retry-After": "7"}), Reply.ok(completion("x"))
    )

    error = failure(provider_for(server, None))

    assert isinstance(error, ModelUnavailable) and error.transient
    assert error.code == "rate_limited"
    assert error.retry_after == 7.0
    assert error.spent is None  # the endpoint did not take the request
    assert len(server.requests) == 1  # retrying is the turn's decision, within its budgets
    assert "429" in error.message and "slow down" in error.message and "\n" not in error.message


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_in_milliseconds_or_seconds(
    server: ChatServer, headers: dict[str, str], seconds: float | None
) -> None:
    server.reply(Reply.status(503, "overloaded", headers=headers))

    error = failure(provider_for(server, None))

    assert error.code == "model_unavailable" and error.transient
    assert error.retry_after == seconds
    assert error.spent is None


def test_retry_after_as_an_http_date_is_the_time_until_then(server: ChatServer) -> None:
    later = datetime.now(UTC) + timedelta(minutes=10)
    server.reply(Reply.status(429, headers={"Retry-After": format_datetime(later, usegmt=True)}))

    error = failure(provider_for(server, None))

    assert error.retry_after is not None and 500 < error.retry_after <= 600


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_5xx_after_the_request_was_taken_may_have_been_billed(
    server: ChatServer, status: int
) -> None:
    server.reply(Reply.status(status, "backend exploded"))

    error = failure(provider_for(server, None, max_tokens=300))

    assert error.code == "model_unavailable" and error.transient
    assert error.spent is not None and error.spent.estimated
    # the prompt is estimated; no output arrived, so the most the profile lets it bill
    assert error.spent.input_tokens > 0 and error.spent.output_tokens == 300
    assert len(server.requests) == 1
    assert str(status) in error.message and "backend exploded" in error.message


def test_a_connection_dropped_after_the_request_is_a_lost_reply(server: ChatServer) -> None:
    server.reply(Reply.dropped())

    error = failure(provider_for(server, None))

    assert error.code == "reply_lost" and error.transient
    assert error.spent is not None and error.spent.input_tokens > 0
    assert error.spent.output_tokens == 0  # no max_tokens: only what arrived, nothing
    assert len(server.requests) == 1


def test_an_estimate_of_the_prompt_grows_with_the_prompt(server: ChatServer) -> None:
    server.reply(Reply.dropped())
    short = failure(provider_for(server, None), request())
    long = failure(
        provider_for(server, None), request(messages=({"role": "user", "content": "x" * 4000},))
    )

    assert short.spent is not None and long.spent is not None
    assert long.spent.input_tokens >= short.spent.input_tokens + 1000


@pytest.mark.parametrize(
    "body",
    [
        b"this is not json{",
        b'{"object": "chat.completion"}',
        b'{"choices": []}',
        b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}',
    ],
    ids=["not-json", "no-choices", "empty-choices", "no-content"],
)
def test_malformed_body_is_malformed_response(server: ChatServer, body: bytes) -> None:
    server.reply(Reply.raw(body))

    error = failure(provider_for(server, None))

    assert error.code == "malformed_response"
    assert not error.transient  # someone must look at the endpoint
    assert error.spent is not None  # the model ran: the attempt was billed
    assert len(server.requests) == 1


def test_timeout_is_model_timeout(server: ChatServer) -> None:
    server.reply(Reply.ok(completion("too late"), delay=30))

    error = failure(provider_for(server, None, timeout=0.3, max_completion_tokens=64))

    assert error.code == "model_timeout" and error.transient
    assert "0.3s" in error.message
    assert error.spent is not None and error.spent.output_tokens == 64
    assert len(server.requests) == 1


def test_connection_refused_is_model_unreachable() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    profile = {"name": "gone", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m",
               "parameters": {"max_retries": 0}}  # fmt: skip

    error = failure(OpenAIProvider.from_profile(profile))

    assert error.code == "model_unreachable" and error.transient
    assert error.spent is None  # no connection, no request: nothing was billed
    assert f"127.0.0.1:{port}" in error.message


def test_unknown_model_is_model_rejected_without_retry(server: ChatServer) -> None:
    server.reply(Reply.status(404, "model `qwen2.5-7b-instruct` not found"))

    error = failure(provider_for(server, None))

    assert error.code == "model_rejected"
    assert "not found" in error.message
    assert len(server.requests) == 1


def test_missing_credential_is_credential_unavailable(
    server: ChatServer, credentials: CredentialResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VARIABLE)

    error = failure(provider_for(server, credentials))

    assert error.code == "credential_unavailable"
    assert KEY_VARIABLE in error.message
    assert server.requests == []


# --------------------------------------------------------------------------- the key never leaks


@pytest.mark.parametrize(
    "reply",
    [
        Reply.status(401, f"Incorrect API key provided: {KEY}"),
        Reply.status(429, f"key {KEY} is over quota", headers={"Retry-After": "0.05"}),
        Reply.status(500, f"upstream said {KEY}", headers={"Retry-After": "0.05"}),
        Reply.status(400, f"bad request from {KEY}"),
    ],
    ids=["401", "429", "500", "400"],
)
def test_the_key_never_appears_in_errors_or_repr(
    server: ChatServer, credentials: CredentialResolver, reply: Reply
) -> None:
    server.reply(reply)
    provider = provider_for(server, credentials, max_retries=0)

    error = failure(provider, request(output_schema=OFFER_SCHEMA))

    assert error.code in {
        "model_unauthorized",
        "rate_limited",
        "model_unavailable",
        "model_rejected",
    }
    assert KEY not in error.message and KEY not in str(error) and KEY not in repr(error)
    assert "***" in error.message  # the server's detail is kept, with the key masked
    assert KEY not in repr(provider) and KEY not in str(vars(provider))
    assert "model_key" in repr(provider)


def test_unauthorized_names_the_profile(
    server: ChatServer, credentials: CredentialResolver
) -> None:
    server.reply(Reply.status(401, "invalid key"))

    error = failure(provider_for(server, credentials))

    assert error.code == "model_unauthorized"
    assert "'local'" in error.message


# --------------------------------------------------------------------------- the profile


def test_unknown_parameter_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIProvider.from_profile({"name": "p", "model": "m", "parameters": {"temprature": 0}})
    assert caught.value.code == "model_misconfigured"
    assert "`temprature`" in caught.value.message and "`temperature`" in caught.value.message


@pytest.mark.parametrize(
    "parameters", [{"max_retries": 11}, {"max_retries": -1}, {"timeout": 0}, {"timeout": "soon"}]
)
def test_client_parameters_are_bounded(parameters: dict[str, Any]) -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIProvider.from_profile({"name": "p", "model": "m", "parameters": parameters})
    assert caught.value.code == "model_misconfigured"


def test_client_parameters_are_not_sent_to_the_model(server: ChatServer) -> None:
    server.reply(Reply.ok(completion("x")))

    provider_for(server, None, timeout=30, max_retries=1, top_p=0.5).complete(request())

    body = server.requests[0].body
    assert body["top_p"] == 0.5
    assert "timeout" not in body and "max_retries" not in body


def test_credential_without_resolver_is_refused() -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIProvider.from_profile({"name": "p", "model": "m", "credential": "model_key"})
    assert caught.value.code == "model_misconfigured"


def test_parse_completion_generates_missing_tool_call_ids() -> None:
    body = completion(None, tool_calls=[{"id": "", "name": "search_vendors", "arguments": "{}"}])

    response = parse_completion(json.dumps(body), structured=False, call=4)

    assert response.tool_calls[0].id == "call_4_0"


# --------------------------------------------------------------------------- usage


def test_an_answer_without_usage_has_its_tokens_estimated(server: ChatServer) -> None:
    document = completion("x" * 400)
    del document["usage"]
    server.reply(Reply.ok(document))

    response = provider_for(server, None).complete(request())

    assert response.usage.estimated
    assert response.usage.output_tokens == 100  # four characters a token
    assert response.usage.input_tokens > 0
    assert response.to_json()["usage"]["estimated"] is True


def test_reported_usage_is_taken_as_it_is(server: ChatServer) -> None:
    server.reply(Reply.ok(completion("hi", usage=(11, 3))))

    usage = provider_for(server, None).complete(request()).usage

    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (11, 3, False)
    assert "estimated" not in provider_for(server, None).complete(request()).to_json()["usage"]


# --------------------------------------------------------------------------- streaming

QUOTE_CALL = {"id": "call_s", "name": "search_vendors",
              "arguments": '{"item": "laptop", "quantity": 10}'}  # fmt: skip


def test_a_streamed_tool_call_is_put_back_together(server: ChatServer) -> None:
    server.reply(Reply.stream(stream_chunks(tool_calls=[QUOTE_CALL], usage=(21, 9), piece=5)))

    response = provider_for(server, None, stream=True).complete(request(tools=(SEARCH,)))

    [call] = response.tool_calls
    assert (call.id, call.name) == ("call_s", "search_vendors")
    assert call.arguments == {"item": "laptop", "quantity": 10}
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 9)
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "max_retries" not in body and "timeout" not in body


def test_a_streamed_answer_without_usage_has_its_tokens_estimated(server: ChatServer) -> None:
    server.reply(Reply.stream(stream_chunks('{"vendor": "Acme", "unit_price": 950}', usage=None)))

    response = provider_for(server, None, stream=True).complete(request(output_schema=OFFER_SCHEMA))

    assert response.output == {"vendor": "Acme", "unit_price": 950}
    assert response.usage.estimated and response.usage.output_tokens > 0


@pytest.mark.parametrize("cut_after", [3, 5], ids=["mid-arguments", "before-finish"])
def test_a_stream_cut_mid_tool_call_is_interrupted_never_a_partial_call(
    server: ChatServer, cut_after: int
) -> None:
    chunks = stream_chunks(tool_calls=[QUOTE_CALL], piece=8)
    server.reply(Reply.stream(chunks, cut_after=cut_after))

    error = failure(provider_for(server, None, stream=True), request(tools=(SEARCH,)))

    assert isinstance(error, ModelUnavailable)
    assert error.code == "stream_interrupted" and error.transient
    assert error.spent is not None and error.spent.estimated
    assert error.spent.output_tokens > 0  # what arrived is counted
    assert "cut off" in error.message


def test_a_stream_closed_cleanly_before_its_end_is_interrupted(server: ChatServer) -> None:
    """No finish reason: the answer is not whole, even though the connection ended normally."""
    chunks = stream_chunks(tool_calls=[QUOTE_CALL], piece=8, usage=None)[:-1]
    server.reply(Reply.stream(chunks))  # every chunk but the finish, then `[DONE]`

    error = failure(provider_for(server, None, stream=True), request(tools=(SEARCH,)))

    assert error.code == "stream_interrupted"
    assert "finish reason" in error.message


def test_stream_must_be_a_bool() -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIProvider.from_profile({"name": "p", "model": "m", "parameters": {"stream": "yes"}})
    assert caught.value.code == "model_misconfigured"
