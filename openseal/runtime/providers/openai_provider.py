"""The OpenAI-compatible provider: one chat-completions endpoint per model profile.

Any server that speaks ``POST {base_url}/chat/completions`` works — OpenAI itself, vLLM,
Ollama, LiteLLM and other gateways. Transport, authentication and timeouts are the official
``openai`` client's; this module maps a :class:`ModelRequest` to chat messages (optionally
streamed back) and the answer to a :class:`ModelResponse`, and turns every failure into a
one-line :class:`ModelError` with a stable code. Each ``complete`` call makes **one attempt**:
retrying is the turn's decision (``states/turn.py``, :mod:`.retry`), because every attempt
must be reserved against the run's budgets and an attempt whose reply was lost may have been
billed. Failures that may pass are :class:`ModelUnavailable` (``transient``), carrying the
endpoint's ``Retry-After`` and, when the request reached the endpoint, an estimate of what it
cost:

======================  =============================================  =========  ======
code                    when                                           transient  billed
======================  =============================================  =========  ======
``rate_limited``        ``429``                                        yes        no
``model_unavailable``   ``503``, ``408``, ``409``                      yes        no
``model_unavailable``   another ``5xx`` (``500``, ``502``, ``504``)    yes        maybe
``model_timeout``       no answer within the profile's ``timeout``     yes        maybe
``reply_lost``          the connection broke after the request was     yes        maybe
                        sent (reset, closed without an answer)
``stream_interrupted``  a streamed answer stopped before its end       yes        maybe
``model_unreachable``   no connection (refused, DNS, connect timeout)  yes        no
``model_unauthorized``  ``401``/``403``: check the profile's           no         no
                        credential
``model_rejected``      any other ``4xx`` (unknown model, bad          no         no
                        parameter…)
``malformed_response``  the body is not a chat completion              no         yes
``model_refused``       the model answered with a refusal              no         yes
``model_misconfigured`` the profile itself is unusable                 no         no
======================  =============================================  =========  ======

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

import importlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import openai

from openseal.compiler import did_you_mean
from openseal.errors import OpenSealError
from openseal.runtime.providers.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Tool,
    ToolCall,
    Usage,
    estimate_tokens,
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
#: profile parameters that configure the client rather than the request (``max_retries`` is
#: read by the turn: how often a failed call is retried before the run sleeps)
CLIENT_PARAMETERS = frozenset({"timeout", "max_retries", "stream"})
#: statuses that say the endpoint did not take the request (nothing was billed)
_NOT_TAKEN = frozenset({408, 409, 429, 503})

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
    #: ask for the answer as server-sent events (``stream = true``)
    stream: bool = False

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
            stream=_stream(name, parameters.get("stream", False)),
        )

    def most_output(self) -> int:
        """The most output tokens one answer may bill (the profile's limit), or 0: unknown."""
        for name in ("max_completion_tokens", "max_tokens"):
            value = self.parameters.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return 0


class OpenAIProvider:
    """A :class:`~openseal.runtime.providers.base.ModelProvider` for one chat-completions
    endpoint.

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
        self._keyless: openai.OpenAI | None = None
        self._keyless_lock = threading.Lock()

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
        """One attempt; :class:`ModelUnavailable` when it failed for a reason that passes."""
        secret = self._secret()
        try:
            document, hold = self._exchange(request, secret)
        except _StreamCut as cut:
            raise ModelUnavailable(
                redact(cut.message(self.endpoint), [secret]),
                code="stream_interrupted",
                spent=self._lost(request, cut.received),
            ) from None
        except openai.OpenAIError as exc:
            raise self._error(exc, secret, request) from None
        except ModelError as exc:  # the answer is not JSON: the model ran, the call was billed
            exc.spent = self._lost(request, "")
            raise
        try:
            response = parse_document(
                document, structured=request.output_schema is not None, call=request.call
            )
            response = replace(response, hold_back=hold)
        except ModelError as exc:
            # The model ran and answered: the attempt was billed even though it is unusable.
            exc.spent = _usage(document.get("usage")) or self._lost(request, json.dumps(document))
            raise
        if _usage(document.get("usage")) is None:
            calls = response.to_json()["tool_calls"]
            output = "" if response.output is None else _as_text(response.output)
            received = (json.dumps(calls) if calls else "") + output
            usage = self._estimate(request, received)
            return replace(response, usage=usage)
        return response

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

    def _exchange(
        self, request: ModelRequest, secret: Secret
    ) -> tuple[dict[str, Any], float | None]:
        """Send the request, stepping down the output modes on ``400``; the answer's JSON and
        how long the endpoint says it has no room left (:func:`used_up_for`)."""
        e = self.endpoint
        # A keyed copy per call: the key lives exactly as long as the request that needs it,
        # while the connections and the TLS context (tens of milliseconds to build) are the
        # keyless client's, shared by every call. Closing the copy would close them: it is
        # dropped instead.
        client = self._connections().with_options(api_key=secret.reveal())
        index = self._mode
        while True:
            mode = _OUTPUT_MODES[index]
            try:
                sent = self._send(client, chat_arguments(request, e, mode))
            except openai.BadRequestError:
                if request.output_schema is None or mode == "text":
                    raise
                index += 1
                continue
            # Remember a step down only once it worked: a 400 for another reason (a
            # context too long) fails in every mode and must not weaken later calls.
            if request.output_schema is not None:
                self._mode = index
            return sent

    def _connections(self) -> openai.OpenAI:
        """The endpoint's client without a key, made on first use. Its own retries are off:
        the turn retries, within the run's budgets."""
        with self._keyless_lock:
            if self._keyless is None:
                e = self.endpoint
                self._keyless = openai.OpenAI(
                    base_url=e.base_url, api_key=PLACEHOLDER_KEY, timeout=e.timeout, max_retries=0
                )
            return self._keyless

    def _send(
        self, client: openai.OpenAI, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], float | None]:
        if not self.endpoint.stream:
            raw = client.chat.completions.with_raw_response.create(**arguments)
            return _decode(raw.text), used_up_for(raw.headers)
        stream = client.chat.completions.create(
            **arguments, stream=True, stream_options={"include_usage": True}
        )
        hold = used_up_for(stream.response.headers)
        assembled = StreamedReply()
        try:
            assembled.read(chunk.model_dump() for chunk in stream)
        except _broken_stream() as exc:
            why = _one_line(str(exc)) or type(exc).__name__
            raise _StreamCut(assembled.received(), why) from None
        except ValueError:
            raise _malformed("a streamed chunk is not JSON") from None
        finally:
            stream.close()
        if assembled.finish_reason is None:
            raise _StreamCut(assembled.received(), "it ended without a finish reason")
        return assembled.document(), hold

    def _estimate(self, request: ModelRequest, received: str) -> Usage:
        return Usage(request.estimated_tokens(), estimate_tokens(received), estimated=True)

    def _lost(self, request: ModelRequest, received: str) -> Usage:
        """What an attempt whose answer was lost may have cost: the prompt, and the output as
        far as it arrived — or, when none did, the most the profile lets an answer bill."""
        usage = self._estimate(request, received)
        if received:
            return usage
        return Usage(usage.input_tokens, self.endpoint.most_output(), estimated=True)

    def _error(self, exc: openai.OpenAIError, secret: Secret, request: ModelRequest) -> ModelError:
        code, message = describe_failure(exc, self.endpoint)
        message = redact(message, [secret])
        if code in _PERMANENT:
            return ModelError(message, code=code)
        spent = self._lost(request, "") if _maybe_billed(exc) else None
        return ModelUnavailable(message, code=code, spent=spent, retry_after=_retry_after(exc))


class _StreamCut(Exception):
    """A streamed answer stopped before its end; ``received`` is the text that arrived."""

    def __init__(self, received: str, why: str) -> None:
        super().__init__(why)
        self.received = received
        self.why = why

    def message(self, endpoint: Endpoint) -> str:
        where = f"model endpoint {_display_url(endpoint.base_url)} ({endpoint.model})"
        return f"the answer of {where} was cut off: {self.why}"


class StreamedReply:
    """Chat-completion chunks put back together into one chat completion.

    Only a stream that ends with a finish reason is a whole answer; the parts of a tool call
    cut off in the middle are never handed on as a call.
    """

    def __init__(self) -> None:
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None

    def read(self, chunks: Iterable[dict[str, Any]]) -> None:
        for chunk in chunks:
            self.add(chunk)

    def add(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                self.refusal.append(delta["refusal"])
            for part in delta.get("tool_calls") or ():
                self._call_part(part)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _call_part(self, part: dict[str, Any]) -> None:
        call = self.calls.setdefault(
            int(part.get("index") or 0), {"id": "", "name": "", "arguments": ""}
        )
        if part.get("id"):
            call["id"] = part["id"]
        function = part.get("function") or {}
        if function.get("name"):
            call["name"] += function["name"]
        if function.get("arguments"):
            call["arguments"] += function["arguments"]

    def received(self) -> str:
        """Everything the model produced so far, as text (for estimating its tokens)."""
        calls = "".join(c["name"] + c["arguments"] for _, c in sorted(self.calls.items()))
        return "".join(self.content) + "".join(self.refusal) + calls

    def document(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        if self.calls:
            message["tool_calls"] = [
                {"id": c["id"] or None, "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}}
                for _, c in sorted(self.calls.items())
            ]  # fmt: skip
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return {"object": "chat.completion", "choices": [choice], "usage": self.usage}


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
    return parse_document(_decode(text), structured=structured, call=call)


def _decode(text: str) -> dict[str, Any]:
    try:
        document = json.loads(text)
    except ValueError:
        raise _malformed("the body is not JSON") from None
    if not isinstance(document, dict):
        raise _malformed("it has no choices")
    return document


def parse_document(document: dict[str, Any], *, structured: bool, call: int = 1) -> ModelResponse:
    """:func:`parse_completion` for a body already decoded (or put together from a stream)."""
    choices = document.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _malformed("it has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _malformed("its first choice has no message")
    usage = _usage(document.get("usage")) or Usage()
    answered = document.get("model") if isinstance(document.get("model"), str) else None
    calls = message.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise _malformed("`tool_calls` is not a list")
        return ModelResponse(
            tool_calls=tuple(_tool_call(c, call, i) for i, c in enumerate(calls)),
            usage=usage,
            model=answered,
        )
    content = _content_text(message.get("content"))
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise ModelError(f"the model refused: {_one_line(refusal)}", code="model_refused")
        raise _malformed("its message has neither content nor tool calls")
    return ModelResponse(
        output=_structured(content) if structured else content, usage=usage, model=answered
    )


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


def _usage(raw: Any) -> Usage | None:
    """The reported usage; None when the endpoint reported none (it is then estimated)."""
    if not isinstance(raw, dict):
        return None
    return Usage(_count(raw.get("prompt_tokens")), _count(raw.get("completion_tokens")))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


# --------------------------------------------------------------------------- failures


_PERMANENT = frozenset(
    {"model_unauthorized", "model_rejected", "malformed_response", "model_error"}
)


def describe_failure(exc: openai.OpenAIError, endpoint: Endpoint) -> tuple[str, str]:
    """``(code, one-line message)`` for a client failure; the caller redacts the key."""
    where = f"model endpoint {_display_url(endpoint.base_url)} ({endpoint.model})"
    if isinstance(exc, openai.APITimeoutError):  # a subclass of APIConnectionError: first
        return "model_timeout", f"{where} did not answer within {endpoint.timeout:g}s"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = _one_line(str(cause)) if cause and str(cause) else "connection failed"
        if _maybe_billed(exc):
            return "reply_lost", f"the reply of {where} was lost: {reason}"
        return "model_unreachable", f"cannot reach {where}: {reason}"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _server_message(exc)
        if status == 429:
            return "rate_limited", f"{where} is rate limiting (429): {detail}"
        if status >= 500 or status in _NOT_TAKEN:
            return "model_unavailable", f"{where} failed with {status}: {detail}"
        if status in (401, 403):
            return "model_unauthorized", (
                f"{where} refused the credential of profile {endpoint.name!r} ({status}): {detail}"
            )
        return "model_rejected", f"{where} rejected the request ({status}): {detail}"
    if isinstance(exc, openai.APIResponseValidationError):
        return "malformed_response", f"{where} answered with a body that is not a chat completion"
    return "model_error", f"{where} failed: {_one_line(str(exc)) or type(exc).__name__}"


def _maybe_billed(exc: openai.OpenAIError) -> bool:
    """Whether the failed request reached the endpoint, which may have run (and billed) it."""
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code not in _NOT_TAKEN
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        # No connection, no request: nothing can have been billed.
        return not isinstance(cause, _transport_errors("ConnectError", "ConnectTimeout"))
    return False


def _transport_errors(*names: str) -> tuple[type[BaseException], ...]:
    """The HTTP transport's exception classes called ``names``. The ``openai`` client is built
    on ``httpx`` or, in recent versions, its successor ``httpx2``; both are looked up."""
    found: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.extend(getattr(module, name) for name in names if hasattr(module, name))
    return tuple(found)


def _broken_stream() -> tuple[type[BaseException], ...]:
    """What reading a stream raises when the connection breaks (or the server reports an
    error) in the middle."""
    return (openai.APIError, *_transport_errors("HTTPError"))


def _retry_after(exc: openai.OpenAIError) -> float | None:
    """The wait the endpoint asked for (``retry-after-ms``, ``Retry-After`` seconds or date,
    else the reset of a limit its ``x-ratelimit-*`` headers say is used up)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    asked = _asked_wait(headers)
    return asked if asked is not None else used_up_for(headers)


#: ``x-ratelimit-reset-*`` values: ``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``
_RESET = re.compile(r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?"
                    r"(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+(?:\.\d+)?)ms)?$")  # fmt: skip


def used_up_for(headers: Mapping[str, str]) -> float | None:
    """Seconds until the endpoint has room again when its rate-limit headers (as OpenAI and
    compatible servers send them) say a limit is used up: ``x-ratelimit-remaining-requests``
    or ``-tokens`` at 0, until its ``x-ratelimit-reset-*``. None when there is room."""
    waits = []
    for kind in ("requests", "tokens"):
        if (headers.get(f"x-ratelimit-remaining-{kind}") or "").strip() != "0":
            continue
        wait = reset_seconds(headers.get(f"x-ratelimit-reset-{kind}") or "")
        waits.append(1.0 if wait is None else wait)
    return max(waits) if waits else None


def reset_seconds(value: str) -> float | None:
    """An ``x-ratelimit-reset-*`` value in seconds (``6m0s`` → 360); a bare number is seconds;
    None when it cannot be read."""
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    found = _RESET.match(text)
    if not text or found is None:
        return None
    parts = {k: float(v) for k, v in found.groupdict().items() if v is not None}
    return (parts.get("h", 0) * 3600 + parts.get("m", 0) * 60 + parts.get("s", 0)
            + parts.get("ms", 0) / 1000)  # fmt: skip


def _asked_wait(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), in seconds."""
    try:
        if headers.get("retry-after-ms"):
            return max(float(headers["retry-after-ms"]) / 1000, 0.0)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            when = parsedate_to_datetime(value)
            return max((when - datetime.now(UTC)).total_seconds(), 0.0)
    except (ValueError, TypeError, OverflowError):
        return None


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


def _stream(profile: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _misconfigured(profile, "`stream` must be true or false")
    return value


def _max_retries(profile: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES_LIMIT:
        raise _misconfigured(
            profile, f"`max_retries` must be an integer from 0 to {MAX_RETRIES_LIMIT}"
        )
    return value
