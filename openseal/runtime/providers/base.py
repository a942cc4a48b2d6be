"""The model provider interface: one request in, tool calls or a final output back.

The engine builds a :class:`ModelRequest` (the agent's instructions, the goal, the messages so
far, the tools it may propose and the JSON Schema its final output must match), asks a
:class:`ModelProvider` to ``complete`` it, and records the :class:`ModelResponse` as an
activity before acting on it. A provider only *proposes* tool calls; the engine decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from openseal.errors import RuntimeFailure

#: characters per token when a count must be estimated (the endpoint reported no usage)
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """A token count for ``text`` when the endpoint gives none: one per four characters,
    rounded up (the usual rule of thumb for English and JSON)."""
    return -(-len(text) // CHARS_PER_TOKEN)


class ModelError(RuntimeFailure):
    """A provider could not produce a response (the run then needs attention).

    ``spent`` is what the failed attempt may have cost (the endpoint ran the model but its
    answer was unusable); None when nothing was spent.
    """

    code = "model_error"
    #: trying again later may succeed (see :class:`ModelUnavailable`)
    transient = False
    #: seconds the endpoint asked to wait before trying again (``Retry-After``)
    retry_after: float | None = None

    def __init__(
        self, message: str, *, code: str | None = None, spent: Usage | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.spent = spent


class ModelUnavailable(ModelError):
    """The attempt failed for a reason that passes: the endpoint is rate limiting, overloaded
    or down, or its reply was lost (connection dropped, timeout, stream cut).

    ``spent`` is None when the endpoint did not take the request (``429``, ``503``, connection
    refused): nothing was billed. Otherwise the request was sent and may have been billed;
    ``spent`` is the estimate of what it cost.
    """

    code = "model_unavailable"
    transient = True

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        spent: Usage | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code, spent=spent)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    #: the endpoint did not report the counts; they are estimated (:func:`estimate_tokens`)
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider sees. ``state``/``visit``/``agent`` say where the turn is."""

    agent: str
    model: dict[str, Any]
    instructions: str
    goal: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[Tool, ...]
    output_schema: dict[str, Any] | None
    state: str
    visit: int
    call: int

    def estimated_tokens(self) -> int:
        """The prompt's size in tokens, estimated (for an attempt whose usage is unknown)."""
        prompt = [self.instructions, self.goal, list(self.messages),
                  [t.__dict__ for t in self.tools], self.output_schema]  # fmt: skip
        return estimate_tokens(json.dumps(prompt, sort_keys=True, default=str))

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "model": self.model,
            "instructions": self.instructions,
            "goal": self.goal,
            "messages": list(self.messages),
            "tools": [t.__dict__ for t in self.tools],
            "output_schema": self.output_schema,
            "state": self.state,
            "visit": self.visit,
            "call": self.call,
        }


@dataclass(frozen=True)
class ModelResponse:
    """Either ``tool_calls`` (non-empty) or a final ``output``; plus token usage."""

    tool_calls: tuple[ToolCall, ...] = ()
    output: Any = None
    usage: Usage = field(default_factory=Usage)
    #: the model (and version) that answered, as the endpoint named it; None if it did not
    model: str | None = None
    #: seconds the endpoint said it has no room left for (its ``x-ratelimit-remaining-*``
    #: headers at 0 until their reset); not recorded
    hold_back: float | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        usage: dict[str, Any] = {"input_tokens": self.usage.input_tokens,
                                 "output_tokens": self.usage.output_tokens}  # fmt: skip
        if self.usage.estimated:
            usage["estimated"] = True
        document = {"tool_calls": [c.__dict__ for c in self.tool_calls], "output": self.output,
                    "usage": usage}  # fmt: skip
        if self.model is not None:
            document["model"] = self.model
        return document

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        usage = data.get("usage") or {}
        return cls(
            tool_calls=tuple(
                ToolCall(str(c.get("id", "")), str(c["name"]), dict(c.get("arguments") or {}))
                for c in data.get("tool_calls") or ()
            ),
            output=data.get("output"),
            usage=Usage(
                int(usage.get("input_tokens", 0)),
                int(usage.get("output_tokens", 0)),
                bool(usage.get("estimated", False)),
            ),
            model=data.get("model") if isinstance(data.get("model"), str) else None,
        )


class ModelProvider(Protocol):
    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request; raise :class:`ModelError` when no answer can be produced."""
        ...
