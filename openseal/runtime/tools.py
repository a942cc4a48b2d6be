"""The seam for tool calls a model proposes during a turn.

The skill gateway (validation against schema, binding, risk ceiling, policy; the adapters)
plugs in here as a :class:`ToolRunner`. Until it exists, :class:`UnavailableTools` answers
every call with a recorded "not available yet" tool error, which the model sees and can
work around; the run does not fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolInvocation:
    """One proposed call, with where it comes from (for the gateway's policy checks)."""

    run_id: str
    state: str
    agent: str
    skill: str
    arguments: dict[str, Any]
    allowed: tuple[str, ...]


class ToolRunner(Protocol):
    def call(self, invocation: ToolInvocation) -> dict[str, Any]:
        """Run one tool call; return ``{"result": ...}`` or ``{"error": {"code", "message"}}``."""
        ...


def tool_error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class UnavailableTools:
    """No skill gateway configured: every permitted call gets a ``not_available`` error."""

    def call(self, invocation: ToolInvocation) -> dict[str, Any]:
        if invocation.skill not in invocation.allowed:
            return tool_error("not_allowed", f"skill {invocation.skill!r} is not granted here")
        return tool_error("not_available", "the skill gateway is not available yet")
