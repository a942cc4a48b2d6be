"""Model providers for turns: the interface, the scripted provider and how one is chosen.

``ProviderFactory`` maps a turn's agent profile (its model profile inside) to a provider. The
default factory serves ``provider = "scripted"`` profiles from a responses file (the worker's
``--scripted-responses``, ``OPENSEAL_SCRIPTED_RESPONSES`` or the profile's ``script``); the
OpenAI-compatible provider plugs in here later.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from openseal.runtime.models.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    Usage,
)
from openseal.runtime.models.scripted import (
    CALLS_ENV,
    RESPONSES_ENV,
    ScriptedProvider,
    load_script,
    read_calls,
)
from openseal.runtime.workflow import AgentProfile

ProviderFactory = Callable[[AgentProfile], ModelProvider]


def fixed(provider: ModelProvider) -> ProviderFactory:
    """A factory that answers every agent with ``provider`` (tests, embedding)."""
    return lambda _profile: provider


def default_provider_factory(
    responses: Path | None = None, calls_file: Path | None = None
) -> ProviderFactory:
    """Scripted profiles from ``responses`` (or the environment, or the profile's script)."""
    responses = responses or _env_path(RESPONSES_ENV)
    calls_file = calls_file or _env_path(CALLS_ENV)
    cache: dict[Path, ScriptedProvider] = {}

    def factory(profile: AgentProfile) -> ModelProvider:
        provider = profile.model.get("provider", "openai")
        if provider != "scripted":
            raise ModelError(
                f"model provider {provider!r} of {profile.model.get('name')!r} is not available "
                "in this worker"
            )
        script = responses or (
            Path(profile.model["script"]) if profile.model.get("script") else None
        )
        if script is None:
            raise ModelError("the scripted provider needs a responses file (--scripted-responses)")
        if script not in cache:
            cache[script] = ScriptedProvider.from_file(script, calls_file=calls_file)
        return cache[script]

    return factory


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


__all__ = [
    "CALLS_ENV",
    "RESPONSES_ENV",
    "AgentProfile",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ProviderFactory",
    "ScriptedProvider",
    "Tool",
    "ToolCall",
    "Usage",
    "default_provider_factory",
    "fixed",
    "load_script",
    "read_calls",
]
