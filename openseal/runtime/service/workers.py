"""Workers as the API and the CLI start them: engines in the server process, ``openseal
worker`` processes, the model providers they call (and ``openseal models check``), and the
store's gauges they expose on ``/metrics``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openseal.runtime.engine.engine import Engine, default_worker_id
from openseal.runtime.engine.models import (
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    Usage,
    default_provider_factory,
    retry,
)
from openseal.runtime.engine.worker import TurnLog, Worker
from openseal.runtime.health import StoreCollector

if TYPE_CHECKING:
    from openseal.skills.credentials import CredentialResolver

__all__ = [
    "Engine",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "StoreCollector",
    "TurnLog",
    "Usage",
    "Worker",
    "check_profile",
    "default_provider_factory",
    "default_worker_id",
    "retry",
]


def check_profile(profile: Mapping[str, Any], credentials: CredentialResolver | None = None) -> Any:
    """``openseal models check``: :func:`openseal.runtime.engine.models.check.check_profile`,
    imported when called (it brings the OpenAI client, seconds of start-up no other command
    needs)."""
    from openseal.runtime.engine.models.check import check_profile as check

    return check(profile, credentials)


def __getattr__(name: str) -> Any:
    # The OpenAI client takes a second or more to import; only model calls need it.
    if name == "OpenAIProvider":
        from openseal.runtime.engine.models.openai_provider import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(name)
