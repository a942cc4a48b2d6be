"""What a request body may be: its size, its JSON, its nesting, an objective's inputs.

Every request body passes through :class:`RequestLimits` before a route sees it:

- larger than ``max_body_bytes`` → ``413 body_too_large`` (checked on ``Content-Length`` and
  again while the body streams in, so a lying or absent length does not get past);
- JSON bodies are parsed strictly: ``NaN``, ``Infinity`` and numbers that overflow a double
  (``1e400``) → ``422 non_finite_number``; deeper than ``max_json_depth`` →
  ``422 too_deep``; not JSON at all → ``422 invalid_request``;
- an objective's ``inputs`` larger than ``max_input_bytes`` as compact JSON →
  ``422 inputs_too_large``.

The numbers are server options (``openseal serve --max-body-bytes ...``), see docs/api.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from openseal.api.errors import error_response
from openseal.errors import OpenSealError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_JSON_DEPTH = 64
DEFAULT_MAX_INPUT_BYTES = 256 * 1024

#: the one route whose ``inputs`` become an objective's stored inputs
OBJECTIVES_PATH = "/api/v1/objectives"


@dataclass(frozen=True)
class Limits:
    """The request limits of a server; every field is an upper bound."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES

    @classmethod
    def given(cls, **limits: int | None) -> Limits:
        """The defaults, overridden by the limits that are not None."""
        return cls(**{name: value for name, value in limits.items() if value is not None})


class Refused(OpenSealError):
    """A body the limits refuse: the status, stable code and message to answer with."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self.status = status


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(422, "non_finite_number", f"number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise Refused(422, "non_finite_number", f"{name} is not a number JSON allows")


def depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in item)
    return deepest


def parse_json(body: bytes, limits: Limits) -> Any:
    """``body`` as JSON, or :class:`Refused` saying why not."""
    try:
        value = json.loads(body, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:
        raise Refused(422, "too_deep", _too_deep(limits)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        where = f" at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        raise Refused(422, "invalid_request", f"the body is not valid JSON{where}") from None
    if depth(value) > limits.max_json_depth:
        raise Refused(422, "too_deep", _too_deep(limits))
    return value


def _too_deep(limits: Limits) -> str:
    return f"the body nests deeper than {limits.max_json_depth} levels"


def check_inputs(document: Any, limits: Limits) -> None:
    """An objective's inputs stay within ``max_input_bytes`` of compact JSON."""
    if not isinstance(document, dict):
        return
    inputs = document.get("inputs")
    if inputs is None:
        return
    size = len(json.dumps(inputs, separators=(",", ":")).encode())
    if size > limits.max_input_bytes:
        raise Refused(
            422,
            "inputs_too_large",
            f"the objective's inputs are {size} bytes; at most {limits.max_input_bytes}",
        )


def _is_json(scope: Scope) -> bool:
    # As the routes read bodies: JSON when declared so, and when no type is declared at all.
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind = bytes(value).split(b";")[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return True


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class RequestLimits:
    """ASGI middleware: read the body within the limits, check it, hand it on unchanged."""

    def __init__(self, app: App, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read(scope, receive)
            if body and _is_json(scope):
                document = parse_json(body, self.limits)
                if scope["path"].rstrip("/") == OBJECTIVES_PATH:
                    check_inputs(document, self.limits)
        except Refused as refused:
            response = error_response(refused.status, refused.code, refused.message)
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.limits.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            raise Refused(413, "body_too_large", _too_large(limit))
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, "body_too_large", _too_large(limit))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


def _replay(body: bytes, then: Receive) -> Receive:
    """The body already read, once; afterwards the connection's own messages (disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await then()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
