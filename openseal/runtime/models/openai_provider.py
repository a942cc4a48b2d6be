"""The OpenAI-compatible provider: one chat-completions endpoint per model profile.

Any server that speaks ``POST {base_url}/chat/completions`` works — OpenAI itself, vLLM,
Ollama, LiteLLM and other gateways. Transport, authentication, retries (honouring
``Retry-After``) and timeouts are the official ``openai`` client's; this module maps a
:class:`ModelRequest` to chat messages and the answer back to a :class:`ModelResponse`, and
turns every failure into a one-line :class:`ModelError` with a stable code:

=====================  =====================================================
``rate_limited``       still ``429`` after the bounded retries
``model_unavailable``  still ``5xx`` after the bounded retries
``model_timeout``      no answer within the profile's ``timeout``
``model_unreachable``  the connection failed (refused, DNS, reset)
``model_unauthorized`` ``401``/``403``: check the profile's credential
``model_rejected``     any other ``4xx`` (unknown model, bad parameter…)
``malformed_response`` the body is not a chat completion
``model_refused``      the model answered with a refusal instead of content
``model_misconfigured`` the profile itself is unusable (unknown parameter…)
=====================  =====================================================

The API key is resolved from the profile's credential reference at every call, handed to a
client that lives only for that call, and masked in every error message. A profile without a
credential sends :data:`PLACEHOLDER_KEY` (local gateways accept any key).

>>> provider = OpenAIProvider.from_profile(                          # doctest: +SKIP
...     {"name": "local", "base_url": "http://127.0.0.1:8000/v1", "model": "qwen2.5",
...      "parameters": {"temperature": 0}},
...     credentials=context.credentials)
>>> provider.complete(request)                                        # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import openai

from openseal.compiler.diagnostics import did_you_mean
from openseal.errors import OpenSealError
from openseal.runtime.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    Usage,
)
from openseal.skills.credentials import CredentialResolver
from openseal.skills.secrets import Secret, redact

#: used when a profile has no ``base_url``: explicit, never taken from the environment
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: sent when a profile names no credential; local gateways accept any key
PLACEHOLDER_KEY = "openseal-no-credential"
#: the only key of a tool call's arguments when the model's arguments were not a JSON object;
#: skill input schemas forbid unknown properties, so the gateway answers the model with a tool
#: error and the model can try again, while the raw text stays in the recorded activity
MALFORMED_ARGUMENTS = "$malformed_arguments"

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2
MAX_RETRIES_LIMIT = 10

#: profile parameters passed through to ``chat.completions.create``
REQUEST_PARAMETERS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "parallel_tool_calls",
        "reasoning_effort",
        "extra_body",  # gateway-specific fields, e.g. vLLM's ``top_k``
    }
)
#: profile parameters that configure the client rather than the request
CLIENT_PARAMETERS = frozenset({"timeout", "max_retries"})

#: how final output is requested, strictest first; a 400 moves one step down
OutputMode = Literal["json_schema", "json_object", "text"]
_OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "text")
_MAX_DETAIL = 200


@dataclass(frozen=True)
class Endpoint:
    """The parts of a compiled model profile this provider uses."""

    name: str
    base_url: str
    model: str
    credential: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES

    @classmethod
    def from_profile(cls, profile: Mapping[str, Any]) -> Endpoint:
        """Read a compiled ``model`` document (``{"name", "base_url", "model", ...}``)."""
        name = str(profile.get("name") or "model")
        model = profile.get("model")
        if not isinstance(model, str) or not model:
            raise _misconfigured(name, "names no `model`")
        parameters = profile.get("parameters") or {}
        if not isinstance(parameters, Mapping):
            raise _misconfigured(name, "`parameters` must be a mapping")
        _check_parameter_names(name, parameters)
        return cls(
            name=name,
            base_url=str(profile.get("base_url") or DEFAULT_BASE_URL),
            model=model,
            credential=profile.get("credential") or None,
            parameters={k: v for k, v in parameters.items() if k in REQUEST_PARAMETERS},
            timeout=_timeout(name, parameters.get("timeout", DEFAULT_TIMEOUT)),
            max_retries=_max_retries(name, parameters.get("max_retries", DEFAULT_MAX_RETRIES)),
        )


class OpenAIProvider:
    """A :class:`~openseal.runtime.models.base.ModelProvider` for one chat-completions endpoint.

    Holds no key: ``credentials`` resolves the profile's reference at every call. When the
    server rejects a structured-output mode with ``400`` it retries one mode down
    (``json_schema`` → ``json_object`` → plain text) and remembers the mode that worked.
    """

    def __init__(
        self, endpoint: Endpoint, *, credentials: CredentialResolver | None = None
    ) -> None:
        if endpoint.credential and credentials is None:
            raise _misconfigured(
                endpoint.name, f"needs credential `{endpoint.credential}` but no resolver is set"
            )
        self.endpoint = endpoint
        self._credentials = credentials
        self._mode = 0  # index into _OUTPUT_MODES

    @classmethod
    def from_profile(
        cls, profile: Mapping[str, Any], *, credentials: CredentialResolver | None = None
    ) -> OpenAIProvider:
        return cls(Endpoint.from_profile(profile), credentials=credentials)

    def __repr__(self) -> str:
        e = self.endpoint
        return (
            f"OpenAIProvider(name={e.name!r}, base_url={_display_url(e.base_url)!r}, "
            f"model={e.model!r}, credential={e.credential!r})"
        )

    def complete(self, request: ModelRequest) -> ModelResponse:
        secret = self._secret()
        try:
            text = self._exchange(request, secret)
        except openai.OpenAIError as exc:
            raise self._error(exc, secret) from None
        return parse_completion(
            text, structured=request.output_schema is not None, call=request.call
        )

    def _secret(self) -> Secret:
        if not self.endpoint.credential:
            return Secret(PLACEHOLDER_KEY)
        assert self._credentials is not None  # checked in __init__
        try:
            return self._credentials.resolve(self.endpoint.credential)
        except OpenSealError as exc:
            raise ModelError(
                f"model profile {self.endpoint.name!r}: {exc}", code="credential_unavailable"
            ) from None

    def _exchange(self, request: ModelRequest, secret: Secret) -> str:
        """Send the request, stepping down the output modes on ``400``; the raw body back."""
        e = self.endpoint
        # A client per call: the key lives exactly as long as the request that needs it.
        with openai.OpenAI(
            base_url=e.base_url,
            api_key=secret.reveal(),
            timeout=e.timeout,
            max_retries=e.max_retries,
        ) as client:
            index = self._mode
            while True:
                mode = _OUTPUT_MODES[index]
                try:
                    raw = client.chat.completions.with_raw_response.create(
                        **chat_arguments(request, e, mode)
                    )
                except openai.BadRequestError:
                    if request.output_schema is None or mode == "text":
                        raise
                    index += 1
                    continue
                # Remember a step down only once it worked: a 400 for another reason (a
                # context too long) fails in every mode and must not weaken later calls.
                if request.output_schema is not None:
                    self._mode = index
                return raw.text

    def _error(self, exc: openai.OpenAIError, secret: Secret) -> ModelError:
        code, message = describe_failure(exc, self.endpoint)
        return ModelError(redact(message, [secret]), code=code)


# --------------------------------------------------------------------------- request


def chat_arguments(request: ModelRequest, endpoint: Endpoint, mode: OutputMode) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for one request."""
    arguments: dict[str, Any] = {
        "model": endpoint.model,
        "messages": chat_messages(request, mode),
        **endpoint.parameters,
    }
    if request.tools:
        arguments["tools"] = [chat_tool(t) for t in request.tools]
    if request.output_schema is not None and mode != "text":
        arguments["response_format"] = response_format(request.output_schema, mode)
    return arguments


def chat_messages(request: ModelRequest, mode: OutputMode) -> list[dict[str, Any]]:
    """System = instructions, user = goal, then the turn's messages in chat format."""
    system = request.instructions.strip()
    if request.output_schema is not None and mode != "json_schema":
        # Without server-side schema support the schema must be in the prompt (and json_object
        # mode requires the word JSON in the messages).
        hint = "Answer with only a JSON value that matches this JSON Schema:\n"
        system = f"{system}\n\n{hint}{json.dumps(request.output_schema, sort_keys=True)}".strip()
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": request.goal})
    messages.extend(chat_message(m) for m in request.messages)
    return messages


def chat_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One engine message (see ``states/turn.py``) in chat format; chat messages pass through."""
    role = message.get("role")
    if role == "assistant" and "content" not in message:
        calls = message.get("tool_calls") or ()
        if calls:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [_chat_call(c) for c in calls],
            }
        return {"role": "assistant", "content": _as_text(message.get("output"))}
    if role == "tool" and "content" not in message:
        result = {k: v for k, v in message.items() if k not in ("role", "tool_call_id")}
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id"),
            "content": _as_text(result),
        }
    return dict(message)


def chat_tool(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": _without_meta(tool.input_schema),
        },
    }


def response_format(schema: Mapping[str, Any], mode: OutputMode) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object"}
    # Not strict: strict mode rejects ordinary schemas (optional properties, formats).
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": _without_meta(schema), "strict": False},
    }


def _chat_call(call: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {
            "name": call.get("name"),
            "arguments": json.dumps(call.get("arguments") or {}),
        },
    }


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _without_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    # `$schema` is metadata; some servers reject keywords they do not know at the top level.
    return {k: v for k, v in schema.items() if k != "$schema"}


# --------------------------------------------------------------------------- response


def parse_completion(text: str, *, structured: bool, call: int = 1) -> ModelResponse:
    """A chat-completion body → :class:`ModelResponse`; :class:`ModelError` if it is not one.

    With ``structured`` the content is parsed as JSON; content that is not JSON is returned as
    a string and left to the engine's schema check and repair loop.
    """
    try:
        document = json.loads(text)
    except ValueError:
        raise _malformed("the body is not JSON") from None
    choices = document.get("choices") if isinstance(document, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _malformed("it has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _malformed("its first choice has no message")
    usage = _usage(document.get("usage"))
    calls = message.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise _malformed("`tool_calls` is not a list")
        return ModelResponse(
            tool_calls=tuple(_tool_call(c, call, i) for i, c in enumerate(calls)), usage=usage
        )
    content = _content_text(message.get("content"))
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise ModelError(f"the model refused: {_one_line(refusal)}", code="model_refused")
        raise _malformed("its message has neither content nor tool calls")
    return ModelResponse(output=_structured(content) if structured else content, usage=usage)


def _tool_call(raw: Any, call: int, index: int) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _malformed(f"tool call #{index + 1} has no function name")
    # Some gateways omit ids; make the same stable ids the scripted provider makes.
    ident = (
        raw.get("id")
        if isinstance(raw.get("id"), str) and raw.get("id")
        else f"call_{call}_{index}"
    )
    return ToolCall(ident, function["name"], _arguments(function.get("arguments")))


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    return {MALFORMED_ARGUMENTS: raw if isinstance(raw, str) else json.dumps(raw)}


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        joined = "".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


_FENCE = re.compile(r"^```[A-Za-z]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)


def _structured(content: str) -> Any:
    text = content.strip()
    fenced = _FENCE.match(text)  # plain-text mode: models like to fence their JSON
    for candidate in (text, fenced.group("body") if fenced else None):
        if candidate is None:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return content


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(_count(raw.get("prompt_tokens")), _count(raw.get("completion_tokens")))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# --------------------------------------------------------------------------- failures


def describe_failure(exc: openai.OpenAIError, endpoint: Endpoint) -> tuple[str, str]:
    """``(code, one-line message)`` for a client failure; the caller redacts the key."""
    where = f"model endpoint {_display_url(endpoint.base_url)} ({endpoint.model})"
    retries = f"after {endpoint.max_retries} retries"
    if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: first
        return "model_timeout", f"{where} did not answer within {endpoint.timeout:g}s ({retries})"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = _one_line(str(cause)) if cause and str(cause) else "connection failed"
        return "model_unreachable", f"cannot reach {where}: {reason}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _server_message(exc)
        if status == 429:
            return "rate_limited", f"{where} is rate limiting (429 {retries}): {detail}"
        if status >= 500:
            return "model_unavailable", f"{where} failed with {status} {retries}: {detail}"
        if status in (401, 403):
            return "model_unauthorized", (
                f"{where} refused the credential of profile {endpoint.name!r} ({status}): {detail}"
            )
        return "model_rejected", f"{where} rejected the request ({status}): {detail}"
    if isinstance(exc, openai.APIResponseValidationError):
        return "malformed_response", f"{where} answered with a body that is not a chat completion"
    return "model_error", f"{where} failed: {_one_line(str(exc)) or type(exc).__name__}"


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        # the client unwraps {"error": {...}}; a gateway may also answer the bare object
        error = body.get("error")
        message = (error if isinstance(error, dict) else body).get("message")
        if isinstance(message, str) and message:
            return _one_line(message)
    return _one_line(exc.response.text) or "no detail"


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_DETAIL else line[: _MAX_DETAIL - 1] + "…"


def _display_url(url: str) -> str:
    """``url`` without user info, which may carry a password."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _malformed(why: str) -> ModelError:
    return ModelError(
        f"the model endpoint's answer is not a chat completion: {why}", code="malformed_response"
    )


def _misconfigured(profile: str, why: str) -> ModelError:
    return ModelError(f"model profile {profile!r} {why}", code="model_misconfigured")


def _check_parameter_names(profile: str, parameters: Mapping[str, Any]) -> None:
    known = REQUEST_PARAMETERS | CLIENT_PARAMETERS
    for name in parameters:
        if name not in known:
            hint = did_you_mean(str(name), sorted(known))
            why = f"has unknown parameter `{name}`" + (f"; {hint}" if hint else "")
            raise _misconfigured(profile, why)


def _timeout(profile: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _misconfigured(profile, "`timeout` must be a positive number of seconds")
    return float(value)


def _max_retries(profile: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES_LIMIT:
        raise _misconfigured(
            profile, f"`max_retries` must be an integer from 0 to {MAX_RETRIES_LIMIT}"
        )
    return value
