"""The model provider interface: one request in, tool calls or a final output back.

The engine builds a :class:`ModelRequest` (the agent's instructions, the goal, the messages so
far, the tools it may propose and the JSON Schema its final output must match), asks a
:class:`ModelProvider` to ``complete`` it, and records the :class:`ModelResponse` as an
activity before acting on it. A provider only *proposes* tool calls; the engine decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from openseal.errors import RuntimeFailure


class ModelError(RuntimeFailure):
    """A provider could not produce a response (the run then needs attention)."""

    code = "model_error"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_calls": [c.__dict__ for c in self.tool_calls],
            "output": self.output,
            "usage": {"input_tokens": self.usage.input_tokens,
                      "output_tokens": self.usage.output_tokens},
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelResponse:
        usage = data.get("usage") or {}
        return cls(
            tool_calls=tuple(
                ToolCall(str(c.get("id", "")), str(c["name"]), dict(c.get("arguments") or {}))
                for c in data.get("tool_calls") or ()
            ),
            output=data.get("output"),
            usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        )


class ModelProvider(Protocol):
    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request; raise :class:`ModelError` when no answer can be produced."""
        ...
