"""Model providers for turns: the interface, the scripted and OpenAI-compatible providers, how
one is chosen for a profile, and ``openseal models check``.

- :mod:`.base`: :class:`ModelProvider` and what a call takes and returns;
- :mod:`.scripted`: :class:`ScriptedProvider`, replaying a responses file;
- :mod:`.openai_provider`: :class:`OpenAIProvider`, an OpenAI-compatible endpoint;
- :mod:`.factory`: :data:`ProviderFactory` and :func:`default_provider_factory`;
- :mod:`.retry`: which failures of a call are retried, and when;
- :mod:`.check`: :func:`check_profile`, what an endpoint can do before any run.

Providers sit under the engine and under :mod:`openseal.runtime.telemetry`, which wraps them:
they import nothing of the runtime but the pure :mod:`openseal.runtime.compiled`.

The OpenAI client takes a second or more to import, and only a run that calls an endpoint (or
``openseal models check``) needs it: the names under ``TYPE_CHECKING`` below are imported on
first use, the rest with the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports
from openseal.runtime.compiled import AgentProfile
from openseal.runtime.providers.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Tool,
    ToolCall,
    Usage,
)
from openseal.runtime.providers.factory import ProviderFactory, default_provider_factory, fixed
from openseal.runtime.providers.scripted import (
    CALLS_ENV,
    RESPONSES_ENV,
    ScriptedProvider,
    load_script,
    read_calls,
)

if TYPE_CHECKING:
    from openseal.runtime.providers.check import check_profile
    from openseal.runtime.providers.openai_provider import OpenAIProvider

__getattr__ = lazy_exports(__name__, __file__)

__all__ = [
    "CALLS_ENV",
    "RESPONSES_ENV",
    "AgentProfile",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "OpenAIProvider",
    "ProviderFactory",
    "ScriptedProvider",
    "Tool",
    "ToolCall",
    "Usage",
    "check_profile",
    "default_provider_factory",
    "fixed",
    "load_script",
    "read_calls",
]
